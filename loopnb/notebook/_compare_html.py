"""The panes of a ``Comparison`` as HTML: what the widget, its static picture and the page share.

Each pane is drawn from a public frame or view: the timelines from each side's turns (folded
from its events by ``ViewModel``, as the live view folds them, or read from the turns frame of a
side that has no events), the inspectors from those turns (``inspector_html``) or from the
aligned frame ``Comparison.turns``, the totals from ``Comparison.totals``, the flows from
``Comparison.flows()`` and a what-if's findings from its ``WhatIf.text()``. Every text from a
run goes through ``esc``, which redacts it (a notebook may save the widget's panes and its
picture); a page that leaves the process also redacts the events it folds (``redact``), as the
report does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from loopnb._palette import ACCENT, INK, PALE
from loopnb.notebook._layout import CODE_BG, CODE_FONT, LINE, MUTED, TEXT
from loopnb.notebook._markup import NAME_LIMIT, chip, code, esc, inspector_html
from loopnb.notebook._state import TurnView
from loopnb.notebook._timeline import timeline_svg
from loopnb.record._compare_frames import TOTALS_LABELS

if TYPE_CHECKING:
    from loopnb.record._compare import Comparison, Side

Redact = Callable[[str], str]
_SAME: Redact = str
_BOX = f"font-size:13px;line-height:1.35;color:{TEXT};overflow-wrap:anywhere"
_CELL = f"padding:3px 10px 3px 0;vertical-align:top;border-bottom:1px solid {LINE};text-align:left"
_MUTED = f"color:{MUTED}"
_PRE = (
    f"white-space:pre-wrap;margin:2px 0 6px;padding:4px 6px;background:{CODE_BG};color:{TEXT};"
    f"font-family:{CODE_FONT};font-size:12px;border-radius:4px;max-height:14em;overflow:auto"
)


@dataclass(frozen=True, slots=True)
class SideView:
    """One side's turns as the timeline and the inspector draw them; ``full`` when they were
    folded from its events (the inspector then shows exactly what the model read)."""

    label: str
    run_id: str
    turns: tuple[TurnView, ...]
    full: bool

    def turn(self, number: int | None) -> TurnView | None:
        return next((t for t in self.turns if t.turn == number), None) if number is not None else None


def side_views(c: Comparison, redact: Redact = _SAME) -> tuple[SideView, SideView]:
    """Both sides' views (their events redacted by ``redact`` first, for a page)."""
    return side_view(c.sides[0], redact), side_view(c.sides[1], redact)


def side_view(side: Side, redact: Redact = _SAME) -> SideView:
    from loopnb.notebook._viewmodel import ViewModel

    if side.event_objects is None:
        return SideView(side.label, side.run_id, frame_turns(side), False)
    events = side.event_objects
    if redact is not _SAME:
        from loopnb.notebook._report import exported_events

        events = exported_events(events)
    return SideView(side.label, side.run_id, ViewModel.fold(events).turns, True)


def frame_turns(side: Side) -> tuple[TurnView, ...]:
    """The timeline's view of a side that has only its turns frame: each turn's number, channel,
    producer, tools and latency, as the frame holds them (no reply, no results)."""
    from loopnb.engine._events import TurnFinished
    from loopnb.engine._turns import Turn

    t = side.turns
    out = []
    columns = ("turn", "seq", "channel", "producer", "tools", "model", "dropped", "latency_ms")
    values = zip(*(t[c].astype(object).tolist() for c in columns), strict=True)
    for turn, seq, channel, producer, tools, model, dropped, ms in values:
        known = isinstance(ms, float) and ms == ms
        said: dict[str, Any] = {"channel": str(channel), "producer": _text(producer)}  # the engine's literals
        at = ms / 1000.0 if known else 0.0
        finished = TurnFinished(
            seq=int(seq), run_id=side.run_id, at=at, turn=int(turn), dropped=bool(dropped), **said
        )
        event = Turn(run_id=side.run_id, turn=int(turn), started_at=0.0 if known else None, finished=finished)
        names = tuple(tools.split(", ")) if isinstance(tools, str) and tools else ()
        model_ = _text(model)
        out.append(
            TurnView(int(turn), event.channel, event.producer, model_, names, bool(dropped), None, event)
        )
    return tuple(out)


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
    d = c.divergence
    if d is None or d.row is None:
        return None
    column = c.turns[f"turn_{'ab'[k]}"].iloc[d.row - 1 :]
    return next((int(v) for v in column.astype(object).tolist() if _int(v) is not None), None)


def divergence_html(c: Comparison, redact: Redact = _SAME) -> str:
    """The headline: which runs, and where they first diverge (or that they agree)."""
    la, lb = c.labels
    ra, rb = (s.run_id for s in c.sides)
    head = (
        f"<b>compare</b> {esc(la, NAME_LIMIT)} (run {code(ra, NAME_LIMIT)}) with "
        f"{esc(lb, NAME_LIMIT)} (run {code(rb, NAME_LIMIT)}) · {len(c.turns):,} aligned rows"
    )
    d = c.divergence
    if d is None:
        said = f"{chip('ok', 'agree')} the two runs agree on every turn and end alike"
    else:
        said = (
            f'<span class="loopnb-divergence" data-turn="{d.turn}" data-how="{esc(d.how)}" '
            f'style="border-left:3px solid {ACCENT};padding-left:6px">first divergence '
            f"(<b>{esc(d.how)}</b>): {esc(redact(d.text()), 600)}</span>"
        )
    box = f'<div class="loopnb-compare-head" style="{_BOX};margin:8px 0">'
    return f"{box}<div>{head}</div><div>{said}</div></div>"


def what_if_html(c: Comparison, redact: Redact = _SAME) -> str:
    """A what-if's findings in words (``WhatIf.text()``) under the headline, when ``c`` came from
    ``what_if``; empty for a ``compare`` of two runs."""
    from loopnb.record._whatif_report import WhatIf

    found = getattr(c, "what_if", None)
    if not isinstance(found, WhatIf):
        return ""
    return (
        f'<div class="loopnb-what-if" style="{_BOX};margin:8px 0">'
        f'<pre style="{_PRE}">{esc(redact(found.text()), 4000)}</pre></div>'
    )


def _cell(value: Any) -> str:
    if value is None or (not isinstance(value, str) and value != value) or str(value) == "<NA>":
        return "—"
    if isinstance(value, float):
        return f"{value:,.1f}"
    return esc(f"{value:,}" if isinstance(value, int) else value, NAME_LIMIT)


def totals_html(c: Comparison) -> str:
    """``Comparison.totals`` side by side: one row per figure, a column per side; a figure the
    two sides differ on is in bold."""
    t = c.totals.astype(object).where(c.totals.notna(), None)
    a, b = (dict(zip(t.columns, row, strict=True)) for row in t.itertuples(index=False))
    rows = []
    for column, words in TOTALS_LABELS:
        differs = a[column] != b[column]
        weight = "font-weight:700" if differs else ""
        rows.append(
            f'<tr data-figure="{column}"{" data-differs" if differs else ""} style="{weight}">'
            f'<td style="{_CELL}">{words}</td><td style="{_CELL};text-align:right">{_cell(a[column])}</td>'
            f'<td style="{_CELL};text-align:right">{_cell(b[column])}</td></tr>'
        )
    la, lb = (esc(x, NAME_LIMIT) for x in c.labels)
    note = ""
    if not all(t["with_events"]):
        note = (
            f'<div style="{_MUTED}">a side given as a bare turns frame is counted turn by turn: '
            "retries per turn, breaker trips from its breaker states, its ending from its last turn</div>"
        )
    return (
        f'<div class="loopnb-totals" style="{_BOX};margin:8px 0"><b>totals</b> '
        f"(ceiling {int(a['ceiling'])} retries a call)"
        f'<table style="border-collapse:collapse;color:{TEXT};font:inherit"><thead><tr>'
        f'<th style="{_CELL}"></th><th style="{_CELL}">{la}</th><th style="{_CELL}">{lb}</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>{note}</div>"
    )


def flows_html(c: Comparison) -> str:
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
        lit = f' style="background:{PALE["soft"]};color:{INK};font-weight:700"' if diff else ""
        said = f"{int(diff):+d}" if diff else "0"
        rows.append(
            f'<tr class="loopnb-flow-edge" data-edge="{esc(edge)}" data-difference="{int(diff)}"{lit}>'
            f'<td style="{_CELL}">{esc(source)} → {esc(target)}</td><td style="{_CELL}">{esc(label)}</td>'
            + "".join(f'<td style="{_CELL};text-align:right">{x}</td>' for x in (int(ca), int(cb), said))
            + "</tr>"
        )
    heads = "".join(f'<th style="{_CELL}">{h}</th>' for h in ("arrow", "", la, lb, f"{lb} − {la}"))
    return (
        f'<div class="loopnb-flows" style="{_BOX};margin:8px 0"><b>decision flows</b> (arrows taken, per run)'
        f'<table style="border-collapse:collapse;color:{TEXT};font:inherit"><thead><tr>{heads}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def timeline_html(c: Comparison, view: SideView, k: int, row: int | None, anchor: str | None = None) -> str:
    """Side ``k``'s timeline (``timeline_svg``) under its label, the divergence marked, the turn
    on ``row`` ringed; with ``anchor`` each mark links to its aligned row (``rows_html``'s)."""
    svg = timeline_svg(view.turns, anchor, selected=side_turn(c, k, row), marked=marked_turn(c, k))
    return (
        f'<div class="loopnb-compare-timeline" data-side="{"ab"[k]}" style="{_BOX};margin:8px 0">'
        f"<b>{esc(view.label, NAME_LIMIT)}</b> · run {code(view.run_id, NAME_LIMIT)}{svg}</div>"
    )


def inspector_for(c: Comparison, view: SideView, k: int, row: int | None, redact: Redact = _SAME) -> str:
    """Side ``k``'s inspector for aligned ``row``: the turn's request and what the model read
    (``inspector_html``), from the aligned frame for a side without events, or why it has none."""
    head = f'<div class="loopnb-side" data-side="{"ab"[k]}"><b>{esc(view.label, NAME_LIMIT)}</b>'
    number = side_turn(c, k, row)
    if row is None or not 1 <= row <= len(c.turns):
        return f'{head}<div style="{_BOX};{_MUTED}">no row selected</div></div>'
    if number is None:
        how = c.turns["how"].astype(object).iat[row - 1]
        why = (
            "its run had ended"
            if isinstance(how, str) and how == "ended"
            else "the other run made a turn this one did not"
        )
        return (
            f'{head}<div class="loopnb-gap" style="{_BOX};{_MUTED}">no turn on row {row}: {why}</div></div>'
        )
    turn = view.turn(number)
    if view.full and turn is not None:
        return f"{head}{inspector_html(turn)}</div>"
    return f"{head}{_frame_inspector(c, k, row, redact)}</div>"


def _frame_inspector(c: Comparison, k: int, row: int, redact: Redact) -> str:
    s = "ab"[k]
    r = c.turns.iloc[row - 1]
    parts = [f"<b>turn {_int(r[f'turn_{s}'])}</b> {chip(str(r[f'channel_{s}']))}"]
    producer = _text(r[f"producer_{s}"])
    if producer:
        parts.append(f" {code(producer)}")
    tools = _text(r[f"tools_{s}"])
    parts.append(
        f"<div>tools called: {code(redact(tools), 400)}</div>" if tools else "<div>no tool called</div>"
    )
    for name, words in (("reply_text", "the model said"), ("error_text", "the model read as errors")):
        text = _text(r[f"{name}_{s}"])
        if text:
            parts.append(f'<div>{words}:</div><pre style="{_PRE}">{esc(redact(text), 4000)}</pre>')
    parts.append(
        f'<div style="{_MUTED}">from the turns frame: what the model read in full needs the events</div>'
    )
    return f'<div class="loopnb-inspector" style="{_BOX}">{"".join(parts)}</div>'


def rows_html(
    c: Comparison, rows: Any, redact: Redact = _SAME, limit: int = 160, anchors: tuple[str, str] | None = None
) -> str:
    """Aligned rows (a slice of ``Comparison.turns``) as a table: each side's turn, channel,
    calls and error text, and how the row differs; with ``anchors``, each side's turn cell is
    the target ``#{anchor}-t{turn}`` of its timeline's mark."""
    la, lb = (esc(x, NAME_LIMIT) for x in c.labels)
    heads = ("row", f"{la} turn", f"{lb} turn", "differs", f"{la}", f"{lb}")
    body = []
    for r in rows.astype(object).where(rows.notna(), None).to_dict("records"):
        how = r["how"]
        style = f' style="border-left:3px solid {ACCENT}"' if how else ""
        cells = [f"{r['row']}", _cell(r["turn_a"]), _cell(r["turn_b"]), esc(how) if how else ""]
        cells += [_side_cell(r, s, redact, limit) for s in "ab"]
        if anchors is not None:
            for k, s in enumerate("ab"):
                if r[f"turn_{s}"] is not None:
                    cells[1 + k] = f'<span id="{anchors[k]}-t{int(r[f"turn_{s}"])}">{cells[1 + k]}</span>'
        data = f' data-how="{esc(how)}"' if how else ""
        tds = "".join(
            f'<td style="{_CELL}{";white-space:nowrap" if i < 4 else ""}">{x}</td>'
            for i, x in enumerate(cells)
        )
        body.append(f'<tr class="loopnb-aligned" data-row="{r["row"]}"{data}{style}>{tds}</tr>')
    head = "".join(f'<th style="{_CELL};white-space:nowrap">{h}</th>' for h in heads)
    return (
        f'<table class="loopnb-aligned-rows" style="border-collapse:collapse;color:{TEXT};{_BOX}">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    )


def _side_cell(r: dict[str, Any], s: str, redact: Redact, limit: int) -> str:
    if r[f"turn_{s}"] is None:
        return f'<span style="{_MUTED}">—</span>'
    out = chip(str(r[f"channel_{s}"]))
    if r[f"producer_{s}"]:
        out += f" {code(r[f'producer_{s}'])}"
    call = r[f"call_{s}"]
    out += f"<div>{code(redact(call), limit)}</div>" if call else f'<div style="{_MUTED}">no call</div>'
    if r[f"error_text_{s}"]:
        out += f'<div style="{_MUTED}">{esc(redact(r[f"error_text_{s}"]), limit)}</div>'
    return out
