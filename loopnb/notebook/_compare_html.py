"""The panes of a ``Comparison`` as HTML: what the widget, its static picture and the page share.

Each pane is drawn from a public frame or view: the timelines from each side's turns (folded
from its events by ``ViewModel``, as the live view folds them, or read from the turns frame of a
side that has no events), the inspectors from those turns (``inspector_html``) or from the
aligned frame ``Comparison.turns``, the totals from ``Comparison.totals``, the flows from
``Comparison.flows()`` and a what-if's findings from its ``WhatIf.text()``. Every pane is
``Html`` filled into ``Html`` templates (``loopnb.notebook._html``): a text from a run is escaped
and redacted wherever it goes (a notebook may save the widget's panes and its picture); a page
that leaves the process also redacts the events it folds (``redact``), as the report does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from loopnb._palette import ACCENT, INK, PALE
from loopnb.analysis._compare_frames import TOTALS_LABELS
from loopnb.notebook._compare_sides import SAME, Redact, SideView
from loopnb.notebook._html import Html, esc
from loopnb.notebook._layout import CODE_BG, CODE_FONT, LINE, MUTED, TEXT
from loopnb.notebook._markup import NAME_LIMIT, chip, code, inspector_html
from loopnb.notebook._timeline import marks_svg

if TYPE_CHECKING:
    from loopnb.analysis._compare import Comparison

_SAME: Redact = SAME
_BOX = Html("font-size:13px;line-height:1.35;color:{};overflow-wrap:anywhere").format(TEXT)
_CELL = Html("padding:3px 10px 3px 0;vertical-align:top;border-bottom:1px solid {};text-align:left").format(
    LINE
)
_MUTED = Html("color:{}").format(MUTED)
_PRE = Html(
    "white-space:pre-wrap;margin:2px 0 6px;padding:4px 6px;background:{};color:{};"
    "font-family:{};font-size:12px;border-radius:4px;max-height:14em;overflow:auto"
).format(CODE_BG, TEXT, CODE_FONT)
_NOTHING = Html()
_NOWRAP = Html(";white-space:nowrap")


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    """A frame's number as an ``int``, ``None`` for a missing one."""
    import pandas as pd

    return None if value is None or pd.isna(value) else int(value)


def side_turn(c: Comparison, k: int, row: int | None) -> int | None:
    """Side ``k``'s turn on aligned ``row`` (1-based), ``None`` on a gap or past the rows."""
    if row is None or not 1 <= row <= len(c.turns):
        return None
    return _int(c.turns[f"turn_{'ab'[k]}"].iat[row - 1])


def marked_turn(c: Comparison, k: int) -> int | None:
    """The turn of side ``k`` the timeline marks as the divergence: its turn on the divergence's
    row, or its next one after a gap (``None`` when it has none left, or the runs agree)."""
    import numpy as np

    d = c.divergence
    if d is None or d.row is None:
        return None
    column = c.turns[f"turn_{'ab'[k]}"].iloc[d.row - 1 :]
    known = np.flatnonzero(column.notna().to_numpy())
    return _int(column.iat[int(known[0])]) if len(known) else None


def divergence_html(c: Comparison, redact: Redact = _SAME) -> Html:
    """The headline: which runs, and where they first diverge (or that they agree)."""
    la, lb = c.labels
    ra, rb = (s.run_id for s in c.sides)
    head = Html("<b>compare</b> {} (run {}) with {} (run {}) · {:,} aligned rows").format(
        esc(la, NAME_LIMIT), code(ra, NAME_LIMIT), esc(lb, NAME_LIMIT), code(rb, NAME_LIMIT), len(c.turns)
    )
    d = c.divergence
    if d is None:
        said = Html("{} the two runs agree on every turn and end alike").format(chip("ok", "agree"))
    else:
        said = Html(
            '<span class="loopnb-divergence" data-turn="{turn}" data-how="{how}" '
            'style="border-left:3px solid {accent};padding-left:6px">first divergence '
            "(<b>{how}</b>): {text}</span>"
        ).format(turn=d.turn, how=d.how, accent=ACCENT, text=esc(redact(d.text()), 600))
    return Html(
        '<div class="loopnb-compare-head" style="{};margin:8px 0"><div>{}</div><div>{}</div></div>'
    ).format(_BOX, head, said)


def what_if_html(c: Comparison, redact: Redact = _SAME) -> Html:
    """A what-if's findings in words (``WhatIf.text()``) under the headline, when ``c`` came from
    ``what_if``; empty for a ``compare`` of two runs."""
    from loopnb.analysis import WhatIf

    found = getattr(c, "what_if", None)
    if not isinstance(found, WhatIf):
        return _NOTHING
    return Html('<div class="loopnb-what-if" style="{};margin:8px 0"><pre style="{}">{}</pre></div>').format(
        _BOX, _PRE, esc(redact(found.text()), 4000)
    )


def _cell(value: Any) -> Html:
    if value is None or (not isinstance(value, str) and value != value) or str(value) == "<NA>":
        return Html("—")
    if isinstance(value, float):
        return Html("{:,.1f}").format(value)
    return esc(f"{value:,}" if isinstance(value, int) else value, NAME_LIMIT)


def totals_html(c: Comparison) -> Html:
    """``Comparison.totals`` side by side: one row per figure, a column per side; a figure the
    two sides differ on is in bold."""
    t = c.totals.astype(object).where(c.totals.notna(), None)
    a, b = (dict(zip(t.columns, row, strict=True)) for row in t.itertuples(index=False))
    rows = []
    for column, words in TOTALS_LABELS:
        differs = a[column] != b[column]
        rows.append(
            Html(
                '<tr data-figure="{column}"{differs} style="{weight}">'
                '<td style="{cell}">{words}</td><td style="{cell};text-align:right">{a}</td>'
                '<td style="{cell};text-align:right">{b}</td></tr>'
            ).format(
                column=column,
                differs=Html(" data-differs") if differs else _NOTHING,
                weight=Html("font-weight:700") if differs else _NOTHING,
                cell=_CELL,
                words=words,
                a=_cell(a[column]),
                b=_cell(b[column]),
            )
        )
    la, lb = (esc(x, NAME_LIMIT) for x in c.labels)
    note = _NOTHING
    if not all(t["with_events"]):
        note = Html(
            '<div style="{}">a side given as a bare turns frame is counted turn by turn: '
            "retries per turn, breaker trips from its breaker states, its ending from its last turn</div>"
        ).format(_MUTED)
    return Html(
        '<div class="loopnb-totals" style="{box};margin:8px 0"><b>totals</b> '
        "(ceiling {ceiling} retries a call)"
        '<table style="border-collapse:collapse;color:{text};font:inherit"><thead><tr>'
        '<th style="{cell}"></th><th style="{cell}">{la}</th><th style="{cell}">{lb}</th></tr></thead>'
        "<tbody>{rows}</tbody></table>{note}</div>"
    ).format(
        box=_BOX,
        ceiling=int(a["ceiling"]),
        text=TEXT,
        cell=_CELL,
        la=la,
        lb=lb,
        rows=_NOTHING.join(rows),
        note=note,
    )


def flows_html(c: Comparison) -> Html:
    """``Comparison.flows()``: each arrow of the decision flow, how often each run took it, and
    the difference (b minus a); the arrows they differ on lit."""
    f = c.flows()
    la, lb = (esc(x, NAME_LIMIT) for x in c.labels)
    rows = []
    for edge, source, target, label, ca, cb, diff in zip(
        f["edge"],
        f["source"],
        f["target"],
        f["label"],
        f["count_a"],
        f["count_b"],
        f["difference"],
        strict=True,
    ):
        lit = (
            Html(' style="background:{};color:{};font-weight:700"').format(PALE["soft"], INK)
            if diff
            else _NOTHING
        )
        counts = _NOTHING.join(
            Html('<td style="{};text-align:right">{}</td>').format(_CELL, x)
            for x in (int(ca), int(cb), f"{int(diff):+d}" if diff else "0")
        )
        rows.append(
            Html(
                '<tr class="loopnb-flow-edge" data-edge="{}" data-difference="{}"{}>'
                '<td style="{cell}">{} → {}</td><td style="{cell}">{}</td>{}</tr>'
            ).format(edge, int(diff), lit, source, target, label, counts, cell=_CELL)
        )
    heads = _NOTHING.join(
        Html('<th style="{}">{}</th>').format(_CELL, h)
        for h in ("arrow", "", la, lb, Html("{} − {}").format(lb, la))
    )
    return Html(
        '<div class="loopnb-flows" style="{};margin:8px 0"><b>decision flows</b> (arrows taken, per run)'
        '<table style="border-collapse:collapse;color:{};font:inherit"><thead><tr>{}</tr></thead>'
        "<tbody>{}</tbody></table></div>"
    ).format(_BOX, TEXT, heads, _NOTHING.join(rows))


def timeline_html(c: Comparison, view: SideView, k: int, row: int | None, anchor: str | None = None) -> Html:
    """Side ``k``'s timeline (``marks_svg`` of its ``marks``) under its label, the divergence marked, the turn
    on ``row`` ringed; with ``anchor`` each mark links to its aligned row (``rows_html``'s)."""
    svg = marks_svg(view.marks, anchor, selected=side_turn(c, k, row), marked=marked_turn(c, k))
    return Html(
        '<div class="loopnb-compare-timeline" data-side="{}" style="{};margin:8px 0">'
        "<b>{}</b> · run {}{}</div>"
    ).format("ab"[k], _BOX, esc(view.label, NAME_LIMIT), code(view.run_id, NAME_LIMIT), svg)


def inspector_for(c: Comparison, view: SideView, k: int, row: int | None, redact: Redact = _SAME) -> Html:
    """Side ``k``'s inspector for aligned ``row``: the turn's request and what the model read
    (``inspector_html``), from the aligned frame for a side without events, or why it has none."""
    side = Html('<div class="loopnb-side" data-side="{}"><b>{}</b>{}</div>')
    label = esc(view.label, NAME_LIMIT)
    number = side_turn(c, k, row)
    if row is None or not 1 <= row <= len(c.turns):
        return side.format(
            "ab"[k], label, Html('<div style="{};{}">no row selected</div>').format(_BOX, _MUTED)
        )
    if number is None:
        how = c.turns["how"].iat[row - 1]
        why = (
            "its run had ended"
            if isinstance(how, str) and how == "ended"
            else "the other run made a turn this one did not"
        )
        gap = Html('<div class="loopnb-gap" style="{};{}">no turn on row {}: {}</div>').format(
            _BOX, _MUTED, row, why
        )
        return side.format("ab"[k], label, gap)
    turn = view.turn(number)
    if view.full and turn is not None:
        return side.format("ab"[k], label, inspector_html(turn))
    return side.format("ab"[k], label, _frame_inspector(c, k, row, redact))


def _frame_inspector(c: Comparison, k: int, row: int, redact: Redact) -> Html:
    s = "ab"[k]
    r = c.turns.iloc[row - 1]
    parts = [Html("<b>turn {}</b> {}").format(_int(r[f"turn_{s}"]), chip(str(r[f"channel_{s}"])))]
    producer = _text(r[f"producer_{s}"])
    if producer:
        parts.append(Html(" {}").format(code(producer)))
    tools = _text(r[f"tools_{s}"])
    parts.append(
        Html("<div>tools called: {}</div>").format(code(redact(tools), 400))
        if tools
        else Html("<div>no tool called</div>")
    )
    for name, words in (("reply_text", "the model said"), ("error_text", "the model read as errors")):
        text = _text(r[f"{name}_{s}"])
        if text:
            parts.append(
                Html('<div>{}:</div><pre style="{}">{}</pre>').format(words, _PRE, esc(redact(text), 4000))
            )
    parts.append(
        Html(
            '<div style="{}">from the turns frame: what the model read in full needs the events</div>'
        ).format(_MUTED)
    )
    return Html('<div class="loopnb-inspector" style="{}">{}</div>').format(_BOX, _NOTHING.join(parts))


def rows_html(
    c: Comparison, rows: Any, redact: Redact = _SAME, limit: int = 160, anchors: tuple[str, str] | None = None
) -> Html:
    """Aligned rows (a slice of ``Comparison.turns``) as a table: each side's turn, channel,
    calls and error text, and how the row differs; with ``anchors``, each side's turn cell is
    the target ``#{anchor}-t{turn}`` of its timeline's mark."""
    la, lb = (esc(x, NAME_LIMIT) for x in c.labels)
    heads = ("row", Html("{} turn").format(la), Html("{} turn").format(lb), "differs", la, lb)
    body = []
    for r in rows.astype(object).where(rows.notna(), None).to_dict("records"):
        how = r["how"]
        cells = [Html.escape(r["row"]), _cell(r["turn_a"]), _cell(r["turn_b"]), esc(how) if how else _NOTHING]
        cells += [_side_cell(r, s, redact, limit) for s in "ab"]
        if anchors is not None:
            for k, s in enumerate("ab"):
                if r[f"turn_{s}"] is not None:
                    cells[1 + k] = Html('<span id="{}-t{}">{}</span>').format(
                        anchors[k], int(r[f"turn_{s}"]), cells[1 + k]
                    )
        tds = _NOTHING.join(
            Html('<td style="{}{}">{}</td>').format(_CELL, _NOWRAP if i < 4 else _NOTHING, x)
            for i, x in enumerate(cells)
        )
        body.append(
            Html('<tr class="loopnb-aligned" data-row="{}"{}{}>{}</tr>').format(
                r["row"],
                Html(' data-how="{}"').format(how) if how else _NOTHING,
                Html(' style="border-left:3px solid {}"').format(ACCENT) if how else _NOTHING,
                tds,
            )
        )
    head = _NOTHING.join(Html('<th style="{}{}">{}</th>').format(_CELL, _NOWRAP, h) for h in heads)
    return Html(
        '<table class="loopnb-aligned-rows" style="border-collapse:collapse;color:{};{}">'
        "<thead><tr>{}</tr></thead><tbody>{}</tbody></table>"
    ).format(TEXT, _BOX, head, _NOTHING.join(body))


def _side_cell(r: dict[str, Any], s: str, redact: Redact, limit: int) -> Html:
    if r[f"turn_{s}"] is None:
        return Html('<span style="{}">—</span>').format(_MUTED)
    out = chip(str(r[f"channel_{s}"]))
    if r[f"producer_{s}"]:
        out += Html(" {}").format(code(r[f"producer_{s}"]))
    call = r[f"call_{s}"]
    out += (
        Html("<div>{}</div>").format(code(redact(call), limit))
        if call
        else Html('<div style="{}">no call</div>').format(_MUTED)
    )
    if r[f"error_text_{s}"]:
        out += Html('<div style="{}">{}</div>').format(_MUTED, esc(redact(r[f"error_text_{s}"]), limit))
    return out
