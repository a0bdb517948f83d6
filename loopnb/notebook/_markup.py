"""The HTML side of the view: status line, breaker board, inspector, and a JS-free summary.

Every fragment is ``Html`` built from ``Html`` templates (``loopnb.notebook._html``): what a
model, a tool or a recording said is text, escaped and redacted wherever it is filled in, so
that nothing untrusted becomes markup by a forgotten call. ``esc(text, limit)`` cuts a text that
may be of any length; the panes, live or replayed, show a key as ``[REDACTED]`` while the views'
Python state (``view.state``, ``view.model``) and the frames keep exactly what the model read.
"""

from __future__ import annotations

from collections.abc import Iterable

from loopnb._palette import ACCENT, GLYPH, IDLE, INK, ON_ACCENT, PALE, PALETTE
from loopnb.analysis._flowchart import EDGES, NODE_INDEX, NODES
from loopnb.notebook._html import Html, esc
from loopnb.notebook._layout import CODE_BG, CODE_FONT, LINE, MUTED, TEXT, UI_FONT, icon
from loopnb.notebook._state import BreakerView, Gauge, RunView, TurnView, ViewState

BREAKER_CHANNEL = {"closed": "ok", "half_open": "soft", "open": "hard"}
"""A breaker's state drawn as the channel it stands for: its colour and its mark, beside its word."""
NAME_LIMIT = 80
"""Names shown (run ids, models, error classes) are cut here: a recording may hold any length."""
_BREAKER_WORD = {"closed": "closed", "half_open": "half-open", "open": "open"}
_BOX = Html(
    "font-family:{};font-size:13px;line-height:1.35;color:{};"
    "overflow-wrap:anywhere"  # a long unbroken name or argument wraps inside its pane
).format(UI_FONT, TEXT)
_PRE = Html(
    "white-space:pre-wrap;word-break:break-word;margin:2px 0 6px 0;padding:4px 6px;"
    "background:{};color:{};font-family:{};border-radius:4px;"
    "max-height:14em;overflow:auto;font-size:12px"
).format(CODE_BG, TEXT, CODE_FONT)
_CODE = Html("font-family:{};font-size:12px").format(CODE_FONT)
_MUTED = Html("color:{}").format(MUTED)
_NOTHING = Html()


_CHIP = {c: tuple(map(Html.escape, (PALETTE.get(c, IDLE), PALE.get(c, IDLE), INK))) for c in (*PALETTE, "")}
"""Each channel's chip colours (its own, its pale fill, the ink on it), escaped once."""


def code(text: object, limit: int | None = None) -> Html:
    """Untrusted text (``esc``) as inline code, monospace in every front end."""
    return Html('<code style="{}">{}</code>').format(_CODE, esc(text, limit))


def chip(channel: str, text: str | None = None) -> Html:
    """A channel's word (or ``text``) with its mark: dark ink on its pale fill, edged in its colour."""
    return Html(
        '<span class="loopnb-chip" data-channel="{}" style="display:inline-block;'
        "padding:0 6px;border-radius:8px;border:1px solid {};background:{};color:{};"
        'font-weight:600;white-space:nowrap">{}{}</span>'
    ).format(channel, *_CHIP.get(channel, _CHIP[""]), icon(channel), text or channel)


def _accent(text: str) -> Html:
    """A state of the view (running, replay, paused): white on the accent blue."""
    return Html(
        '<span style="display:inline-block;padding:0 6px;border-radius:8px;border:1px solid {0};'
        'background:{0};color:{1};font-weight:600;white-space:nowrap">{2}</span>'
    ).format(ACCENT, ON_ACCENT, text)


def pill_text(state: ViewState, *, replay: bool = False, paused: int | None = None) -> str:
    """The status pill: ``replay · turn 3 of 6`` (a replay short of its end, or of a recording
    that stops before its run did), ``paused after turn 6`` (``paused``: the turns done), else
    ``running``, ``finished`` or ``ended hard``; ``waiting`` before a run."""
    run = state.run
    if run.run_id is None:
        return "waiting"
    newest = state.newest
    selected = state.selected if state.selected is not None else newest
    if replay and (selected < newest or run.phase == "running"):
        return f"replay · turn {selected} of {newest}"
    if run.phase == "ok":
        return "finished"
    if run.phase == "hard":
        return "ended hard"
    if paused is not None:
        return f"paused after turn {paused}" if paused else "paused before the first turn"
    return "running"


_PILL_CHANNEL = {"finished": "ok", "ended hard": "hard"}


def _pill(text: str) -> Html:
    channel = _PILL_CHANNEL.get(text)
    return chip(channel, text) if channel else _accent(text)


def status_html(
    state: ViewState, note: str | None = None, *, replay: bool = False, paused: int | None = None
) -> Html:
    """One line: which run, the pill (``pill_text``), how it ended (and ``note``, e.g. "paused")."""
    run: RunView = state.run
    if run.run_id is None:
        body = Html("waiting for a run to start")
    else:
        pill = pill_text(state, replay=replay, paused=paused)
        head = Html("run {}").format(code(run.run_id, NAME_LIMIT))
        if not pill.startswith("replay"):
            head += Html(" · turn {}").format(run.turn)
        tail = Html('<span class="loopnb-pill">{}</span>').format(_pill(pill))
        if pill == "finished":
            tail += Html(" output: <i>{}</i>").format(esc(run.output or "", 300))
        elif pill == "ended hard":
            tail += Html(" <b>{}</b>: {}").format(
                esc(run.error or "LoopError", NAME_LIMIT), esc(run.message or "", 300)
            )
        body = Html("{} · {}").format(head, tail)
        if run.task:
            body += Html('<div style="{}">task: {}</div>').format(_MUTED, esc(run.task, 200))
    if note:
        body += Html(' <span style="color:{};font-weight:600">[{}]</span>').format(TEXT, note)
    return Html('<div class="loopnb-status" style="{}">{}</div>').format(_BOX, body)


def _cooldown(b: BreakerView) -> str:
    if b.state != "open":
        return "—"
    if b.cooldown_left is None:
        return "open (cooldown unknown)"
    if b.cooldown_left <= 0:
        return "over: next call is a trial"
    return f"{b.cooldown_left:.1f}s of {b.cooldown:g}s"


HISTORY_SHOWN = 8
"""The board's history strip shows a breaker's last this many moves (and how many came before)."""


def _history(b: BreakerView) -> Html:
    """The strip of a breaker's states over the run: closed, then each move with its turn."""
    moves = b.history[-HISTORY_SHOWN:]
    earlier = len(b.history) - len(moves)
    cells = [] if earlier else [_chip("closed", None)]
    cells += [_chip(state, turn) for turn, state in moves]
    head = Html('<span style="{}">{} earlier · </span>').format(_MUTED, earlier) if earlier else _NOTHING
    return Html('<span class="loopnb-breaker-history">{}{}</span>').format(head, Html(" → ").join(cells))


def _chip(state: str, turn: int | None) -> Html:
    word = _BREAKER_WORD.get(state, state)
    title = f"turn {turn}: {word}" if turn is not None else "closed at the start"
    when = (
        Html('<span style="{};font-weight:400">t{}</span> ').format(_MUTED, turn)
        if turn is not None
        else _NOTHING
    )
    return Html(
        '<span class="loopnb-breaker-step" data-step="{}" title="{}" '
        'style="white-space:nowrap;font-weight:600">{}{}{}</span>'
    ).format(state, title, when, icon(BREAKER_CHANNEL.get(state, "")), word)


_CELL = Html("padding:3px 8px 3px 0;vertical-align:top;border-bottom:1px solid {}").format(LINE)
_HEAD = Html("{};text-align:left;white-space:nowrap;font-weight:600").format(_CELL)
_TOP = Html("padding:3px 8px 0 0;vertical-align:top")
"""A breaker's first row: no rule beneath, its history row below carries it."""
_BREAKER_ROW = Html(
    '<tr class="loopnb-breaker" data-state="{state}">'
    '<td style="{top};overflow-wrap:anywhere;min-width:6em">{name}'
    '<div style="{muted}">{scope}</div></td><td style="{top};white-space:nowrap">'
    '{icon}<span class="loopnb-breaker-state" style="font-weight:700">{word}</span>'
    '</td><td class="loopnb-breaker-failures" style="{top};text-align:right">{failures}</td>'
    '<td style="{top}">{cooldown}</td></tr>'
    '<tr class="loopnb-breaker-moves"><td colspan="4" style="{cell}">'
    '<span style="{muted}">history: </span>{history}</td></tr>'
)


def board_html(state: ViewState) -> Html:
    """The breaker board: every tool's and model's breaker, its state, the failures it has
    counted, the cooldown left and, on a row of its own beneath, its history over the run.

    Four columns (the scope sits under the name), so that the board fits the narrow pane beside
    the inspector without scrolling; headers never wrap and names do (anywhere, as a last resort).
    """
    rows = [
        _BREAKER_ROW.format(
            state=b.state,
            top=_TOP,
            name=code(b.name, 60),
            muted=_MUTED,
            scope=b.scope,
            icon=icon(BREAKER_CHANNEL[b.state]),
            word=_BREAKER_WORD[b.state],
            failures=b.failures,
            cooldown=_cooldown(b),
            cell=_CELL,
            history=_history(b),
        )
        for b in state.breakers
    ]
    if not rows:
        table = Html('<div style="{}">no breakers yet</div>').format(_MUTED)
    else:
        heads = _NOTHING.join(
            Html('<th style="{}">{}</th>').format(_HEAD, h)
            for h in ("breaker", "state", "failures", "cooldown left")
        )
        table = Html(  # scrolls sideways only in a pane too narrow for its headers
            '<div style="overflow-x:auto">'
            '<table style="border-collapse:collapse;width:100%;overflow-wrap:normal;'
            'color:{};font:inherit">'
            "<thead><tr>{}</tr></thead><tbody>{}</tbody></table></div>"
        ).format(TEXT, heads, _NOTHING.join(rows))
    return Html('<div class="loopnb-board" style="{}"><b>breaker board</b>{}</div>').format(_BOX, table)


def gauge_text(g: Gauge) -> str:
    """The gauge in words, as text (for the static summary): ``Gauge.lines``, the figure's own."""
    return " · ".join(g.lines())


def _latency(ms: float | None) -> str:
    return f" · {ms:.1f} ms" if ms is not None else " · latency unknown"


def inspector_html(turn: TurnView | None) -> Html:
    """One turn: the request (the reply's tool calls), and exactly the text the model read."""
    if turn is None:
        return Html('<div class="loopnb-inspector" style="{};{}">no turn selected yet</div>').format(
            _BOX, _MUTED
        )
    retries = turn.recovery_attempts
    parts = [
        Html("<b>turn {}</b> {}").format(turn.turn, chip(turn.channel)),
        Html(" {}").format(code(turn.producer)) if turn.producer else _NOTHING,
        Html(" · model {}").format(code(turn.model, NAME_LIMIT)) if turn.model else _NOTHING,
        _latency(turn.latency_ms),
        f" · {retries} recovery retr{'y' if retries == 1 else 'ies'}" if retries else _NOTHING,
        Html(' · <span class="loopnb-injected">&#x26A1; injected {}</span>').format(code(turn.injected))
        if turn.injected is not None
        else _NOTHING,
    ]
    body = [_NOTHING.join(parts)]
    if turn.calls:
        calls = _NOTHING.join(
            Html('<li><code style="{}">{}({})</code></li>').format(
                _CODE, esc(c.name, 80), esc(c.arguments, 400)
            )
            for c in turn.calls
        )
        body.append(
            Html("<div>the model asked for:</div><ul style='margin:2px 0 4px 18px;padding:0'>{}</ul>").format(
                calls
            )
        )
    if turn.reply_text:
        body.append(
            Html('<div>the model said:</div><pre style="{}">{}</pre>').format(
                _PRE, esc(turn.reply_text, 4000)
            )
        )
    if turn.read:
        body.append(Html("<div>then the model read:</div>"))
        for item in turn.read:
            tag = f"{item.name} · error ({item.producer})" if item.is_error else f"{item.name} · ok"
            if item.source == "engine":
                tag = f"engine feedback · {item.producer or item.name}"
            body.append(
                Html(
                    '<div style="{};font-size:12px">{}{}</div><pre class="loopnb-read" style="{}">{}</pre>'
                ).format(
                    Html("font-weight:600") if item.is_error else _MUTED,
                    icon("soft") if item.is_error else _NOTHING,
                    esc(tag, 120),
                    _PRE,
                    esc(item.text, 4000),
                )
            )
            if item.note:
                body.append(
                    Html(
                        '<div style="{};font-size:12px">recovery note (beside the result, never '
                        'merged into it):</div><pre style="{}">{}</pre>'
                    ).format(_MUTED, _PRE, esc(item.note, 2000))
                )
    if turn.channel == "hard":
        body.append(
            Html(
                '<div style="border-left:3px solid {};padding-left:6px">{}'
                "the run ended here: <b>{}</b>; this turn was dropped from the scratchpad and the "
                'model never read it</div><pre style="{}">{}</pre>'
            ).format(
                PALETTE["hard"],
                icon("hard"),
                esc(turn.error or turn.producer, NAME_LIMIT),
                _PRE,
                esc(turn.error_text or "", 2000),
            )
        )
    elif not turn.calls and not turn.read:
        body.append(Html('<div style="{}">a final reply: nothing more to read</div>').format(_MUTED))
    return Html('<div class="loopnb-inspector" style="{}">{}</div>').format(_BOX, _NOTHING.join(body))


def _strip(turns: Iterable[TurnView]) -> Html:
    cells = _NOTHING.join(
        Html('<span class="loopnb-mark" data-channel="{}" title="{}" style="color:{}">{}</span>').format(
            t.channel,
            f"turn {t.turn}: {t.channel}" + (f" ({t.producer})" if t.producer else ""),
            PALETTE[t.channel],
            GLYPH[t.channel],
        )
        for t in turns
    )
    return Html('<div style="line-height:1.1;font-size:11px;overflow-wrap:anywhere">{}</div>').format(cells)


def summary_html(state: ViewState) -> Html:
    """A static, script-free picture of the four panes (for saved notebooks, GitHub, nbviewer)."""
    flow_rows = []
    lit = set(state.lit)
    lit_fill = PALE.get(state.lit_channel or "")
    for edge, count in zip(EDGES, state.edge_counts, strict=True):
        style = (
            Html(' style="background:{};color:{}"').format(lit_fill, INK)
            if lit_fill and edge.id in lit
            else _NOTHING
        )
        flow_rows.append(
            Html(
                "<tr{}><td>{}</td><td>→</td><td>{}</td><td>{}</td><td style='text-align:right'>{}</td></tr>"
            ).format(
                style,
                NODES[NODE_INDEX[edge.source]].label.replace("<br>", " "),
                NODES[NODE_INDEX[edge.target]].label.replace("<br>", " "),
                edge.label,
                count,
            )
        )
    if state.lit_channel:
        lit_note = Html("lit: turn {}, {}").format(state.lit_turn, state.lit_channel)
        if state.lit_producer:
            lit_note += Html(" ({})").format(state.lit_producer)
    else:
        lit_note = Html("nothing lit yet")
    last = state.turns[-1] if state.turns else None
    return Html(
        '<div class="loopnb-summary" style="{box};border:1px solid {line};padding:8px;border-radius:6px">'
        "<div><b>loopnb live view</b> (static picture)</div>{status}"
        "<details open><summary><b>decision flow</b> · {lit_note}</summary>"
        '<table style="border-collapse:collapse;color:{text};font:inherit">{flow}</table>'
        "</details>"
        "<div><b>recovery gauge</b>: {gauge}</div>"
        "{board}"
        "<div><b>turn timeline</b> ({turns} turns)</div>{strip}"
        "{inspector}</div>"
    ).format(
        box=_BOX,
        line=LINE,
        status=status_html(state),
        lit_note=lit_note,
        text=TEXT,
        flow=_NOTHING.join(flow_rows),
        gauge=gauge_text(state.gauge),
        board=board_html(state),
        turns=len(state.turns),
        strip=_strip(state.turns),
        inspector=inspector_html(last),
    )
