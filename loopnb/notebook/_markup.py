"""The HTML side of the view: status line, breaker board, inspector, and a JS-free summary.

Everything a model or a tool said is untrusted: it goes through ``esc`` (``html.escape``) before it
becomes HTML, because ipywidgets' ``HTML`` sets ``innerHTML`` (where ``<img onerror>`` runs even
though ``<script>`` does not). Only this module's own markup is left unescaped.

``esc`` also redacts, as every export is redacted: whatever becomes HTML may be saved. A notebook
keeps each output's static picture, and every pane's value when its front end saves widget state
(JupyterLab's "save widget state", nbclient's ``store_widget_state``), which the kernel cannot
tell from showing it. So the panes, live or replayed, show a key as ``[REDACTED]``; the views'
Python state (``view.state``, ``view.model``) and the frames keep exactly what the model read.
"""

from __future__ import annotations

import html
from collections.abc import Iterable

from loopnb._palette import ACCENT, GLYPH, IDLE, INK, ON_ACCENT, PALE, PALETTE
from loopnb.notebook._layout import (
    CODE_BG,
    CODE_FONT,
    CONTROL_PICTURES,
    LINE,
    MUTED,
    TEXT,
    UI_FONT,
    icon,
)
from loopnb.notebook._state import BreakerView, Gauge, RunView, TurnView, ViewState
from loopnb.record._flowchart import EDGES, NODE_INDEX, NODES
from loopnb.record._redact import DEFAULT_REDACTOR

BREAKER_CHANNEL = {"closed": "ok", "half_open": "soft", "open": "hard"}
"""A breaker's state drawn as the channel it stands for: its colour and its mark, beside its word."""
NAME_LIMIT = 80
"""Names shown (run ids, models, error classes) are cut here: a recording may hold any length."""
_BREAKER_WORD = {"closed": "closed", "half_open": "half-open", "open": "open"}
_BOX = (
    f"font-family:{UI_FONT};font-size:13px;line-height:1.35;color:{TEXT};"
    "overflow-wrap:anywhere"  # a long unbroken name or argument wraps inside its pane
)
_PRE = (
    "white-space:pre-wrap;word-break:break-word;margin:2px 0 6px 0;padding:4px 6px;"
    f"background:{CODE_BG};color:{TEXT};font-family:{CODE_FONT};border-radius:4px;"
    "max-height:14em;overflow:auto;font-size:12px"
)
_CODE = f"font-family:{CODE_FONT};font-size:12px"
_MUTED = f"color:{MUTED}"


def esc(text: object, limit: int | None = None) -> str:
    """Untrusted text made safe for HTML (element bodies and quoted attributes), optionally cut.

    Secrets are redacted first, by the default redactor (see the module's docstring), then the
    text is cut: a cut never leaves part of a key to be recognised. Control characters show as
    their pictures (``CONTROL_PICTURES``) rather than vanish, and a cut says how much it left out.
    """
    return html.escape(_cut(DEFAULT_REDACTOR(str(text)), limit).translate(CONTROL_PICTURES), quote=True)


def _cut(s: str, limit: int | None) -> str:
    if limit is None or len(s) <= limit:
        return s
    return f"{s[: limit - 1]}… ({len(s) - limit + 1:,} more characters)"


def code(text: object, limit: int | None = None) -> str:
    """Untrusted text (``esc``) as inline code, monospace in every front end."""
    return f'<code style="{_CODE}">{esc(text, limit)}</code>'


def chip(channel: str, text: str | None = None) -> str:
    """A channel's word (or ``text``) with its mark: dark ink on its pale fill, edged in its colour."""
    color, pale = PALETTE.get(channel, IDLE), PALE.get(channel, IDLE)
    return (
        f'<span class="loopnb-chip" data-channel="{esc(channel)}" style="display:inline-block;'
        f"padding:0 6px;border-radius:8px;border:1px solid {color};background:{pale};color:{INK};"
        f'font-weight:600;white-space:nowrap">{icon(channel)}{esc(text or channel)}</span>'
    )


def _accent(text: str) -> str:
    """A state of the view (running, replay, paused): white on the accent blue."""
    return (
        f'<span style="display:inline-block;padding:0 6px;border-radius:8px;border:1px solid {ACCENT};'
        f'background:{ACCENT};color:{ON_ACCENT};font-weight:600;white-space:nowrap">{esc(text)}</span>'
    )


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


def _pill(text: str) -> str:
    channel = _PILL_CHANNEL.get(text)
    return chip(channel, text) if channel else _accent(text)


def status_html(
    state: ViewState, note: str | None = None, *, replay: bool = False, paused: int | None = None
) -> str:
    """One line: which run, the pill (``pill_text``), how it ended (and ``note``, e.g. "paused")."""
    run: RunView = state.run
    if run.run_id is None:
        body = "waiting for a run to start"
    else:
        pill = pill_text(state, replay=replay, paused=paused)
        head = f"run {code(run.run_id, NAME_LIMIT)}"
        if not pill.startswith("replay"):
            head += f" · turn {run.turn}"
        tail = f'<span class="loopnb-pill">{_pill(pill)}</span>'
        if pill == "finished":
            tail += f" output: <i>{esc(run.output or '', 300)}</i>"
        elif pill == "ended hard":
            tail += f" <b>{esc(run.error or 'LoopError', NAME_LIMIT)}</b>: {esc(run.message or '', 300)}"
        body = f"{head} · {tail}"
        if run.task:
            body += f'<div style="{_MUTED}">task: {esc(run.task, 200)}</div>'
    if note:
        body += f' <span style="color:{TEXT};font-weight:600">[{esc(note)}]</span>'
    return f'<div class="loopnb-status" style="{_BOX}">{body}</div>'


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


def _history(b: BreakerView) -> str:
    """The strip of a breaker's states over the run: closed, then each move with its turn."""
    moves = b.history[-HISTORY_SHOWN:]
    earlier = len(b.history) - len(moves)
    cells = [] if earlier else [_chip("closed", None)]
    cells += [_chip(state, turn) for turn, state in moves]
    head = f'<span style="{_MUTED}">{earlier} earlier · </span>' if earlier else ""
    return f'<span class="loopnb-breaker-history">{head}{" → ".join(cells)}</span>'


def _chip(state: str, turn: int | None) -> str:
    word = _BREAKER_WORD.get(state, state)
    title = f"turn {turn}: {word}" if turn is not None else "closed at the start"
    when = f'<span style="{_MUTED};font-weight:400">t{turn}</span> ' if turn is not None else ""
    return (
        f'<span class="loopnb-breaker-step" data-step="{esc(state)}" title="{esc(title)}" '
        f'style="white-space:nowrap;font-weight:600">{when}{icon(BREAKER_CHANNEL.get(state, ""))}'
        f"{esc(word)}</span>"
    )


_CELL = f"padding:3px 8px 3px 0;vertical-align:top;border-bottom:1px solid {LINE}"
_HEAD = f"{_CELL};text-align:left;white-space:nowrap;font-weight:600"
_TOP = "padding:3px 8px 0 0;vertical-align:top"
"""A breaker's first row: no rule beneath, its history row below carries it."""


def board_html(state: ViewState) -> str:
    """The breaker board: every tool's and model's breaker, its state, the failures it has
    counted, the cooldown left and, on a row of its own beneath, its history over the run.

    Four columns (the scope sits under the name), so that the board fits the narrow pane beside
    the inspector without scrolling; headers never wrap and names do (anywhere, as a last resort).
    """
    rows = []
    for b in state.breakers:
        rows.append(
            f'<tr class="loopnb-breaker" data-state="{esc(b.state)}">'
            f'<td style="{_TOP};overflow-wrap:anywhere;min-width:6em">{code(b.name, 60)}'
            f'<div style="{_MUTED}">{esc(b.scope)}</div></td><td style="{_TOP};white-space:nowrap">'
            f"{icon(BREAKER_CHANNEL[b.state])}"
            f'<span class="loopnb-breaker-state" style="font-weight:700">{esc(_BREAKER_WORD[b.state])}</span>'
            f'</td><td class="loopnb-breaker-failures" style="{_TOP};text-align:right">{b.failures}</td>'
            f'<td style="{_TOP}">{esc(_cooldown(b))}</td></tr>'
            f'<tr class="loopnb-breaker-moves"><td colspan="4" style="{_CELL}">'
            f'<span style="{_MUTED}">history: </span>{_history(b)}</td></tr>'
        )
    if not rows:
        table = f'<div style="{_MUTED}">no breakers yet</div>'
    else:
        heads = "".join(
            f'<th style="{_HEAD}">{h}</th>' for h in ("breaker", "state", "failures", "cooldown left")
        )
        table = (  # scrolls sideways only in a pane too narrow for its headers
            '<div style="overflow-x:auto">'
            '<table style="border-collapse:collapse;width:100%;overflow-wrap:normal;'
            f'color:{TEXT};font:inherit">'
            f"<thead><tr>{heads}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
        )
    return f'<div class="loopnb-board" style="{_BOX}"><b>breaker board</b>{table}</div>'


def gauge_text(g: Gauge) -> str:
    """The gauge in words, unescaped (for the static summary): ``Gauge.lines``, the figure's own."""
    return " · ".join(g.lines())


def _latency(ms: float | None) -> str:
    return f" · {ms:.1f} ms" if ms is not None else " · latency unknown"


def inspector_html(turn: TurnView | None) -> str:
    """One turn: the request (the reply's tool calls), and exactly the text the model read."""
    if turn is None:
        return f'<div class="loopnb-inspector" style="{_BOX};{_MUTED}">no turn selected yet</div>'
    parts = [
        f"<b>turn {turn.turn}</b> {chip(turn.channel)}",
        f" {code(turn.producer)}" if turn.producer else "",
        f" · model {code(turn.model, NAME_LIMIT)}" if turn.model else "",
        _latency(turn.latency_ms),
        f" · {turn.recovery_attempts} recovery retr{'y' if turn.recovery_attempts == 1 else 'ies'}"
        if turn.recovery_attempts
        else "",
    ]
    body = ["".join(parts)]
    if turn.calls:
        calls = "".join(
            f'<li><code style="{_CODE}">{esc(c.name, 80)}({esc(c.arguments, 400)})</code></li>'
            for c in turn.calls
        )
        body.append(
            f"<div>the model asked for:</div><ul style='margin:2px 0 4px 18px;padding:0'>{calls}</ul>"
        )
    if turn.reply_text:
        body.append(f'<div>the model said:</div><pre style="{_PRE}">{esc(turn.reply_text, 4000)}</pre>')
    if turn.read:
        body.append("<div>then the model read:</div>")
        for item in turn.read:
            tag = f"{item.name} · error ({item.producer})" if item.is_error else f"{item.name} · ok"
            if item.source == "engine":
                tag = f"engine feedback · {item.producer or item.name}"
            mark = icon("soft") if item.is_error else ""
            weight = "font-weight:600" if item.is_error else _MUTED
            body.append(
                f'<div style="{weight};font-size:12px">{mark}{esc(tag, 120)}</div>'
                f'<pre class="loopnb-read" style="{_PRE}">{esc(item.text, 4000)}</pre>'
            )
            if item.note:
                body.append(
                    f'<div style="{_MUTED};font-size:12px">recovery note (beside the result, never '
                    f'merged into it):</div><pre style="{_PRE}">{esc(item.note, 2000)}</pre>'
                )
    if turn.channel == "hard":
        body.append(
            f'<div style="border-left:3px solid {PALETTE["hard"]};padding-left:6px">{icon("hard")}'
            f"the run ended here: <b>{esc(turn.error or turn.producer, NAME_LIMIT)}"
            f"</b>; this turn was dropped from the scratchpad and the model never read it</div>"
            f'<pre style="{_PRE}">{esc(turn.error_text or "", 2000)}</pre>'
        )
    elif not turn.calls and not turn.read:
        body.append(f'<div style="{_MUTED}">a final reply: nothing more to read</div>')
    return f'<div class="loopnb-inspector" style="{_BOX}">{"".join(body)}</div>'


def _strip(turns: Iterable[TurnView]) -> str:
    cells = []
    for t in turns:
        title = esc(f"turn {t.turn}: {t.channel}" + (f" ({t.producer})" if t.producer else ""))
        cells.append(
            f'<span class="loopnb-mark" data-channel="{t.channel}" title="{title}" '
            f'style="color:{PALETTE[t.channel]}">{GLYPH[t.channel]}</span>'
        )
    return f'<div style="line-height:1.1;font-size:11px;overflow-wrap:anywhere">{"".join(cells)}</div>'


def summary_html(state: ViewState) -> str:
    """A static, script-free picture of the four panes (for saved notebooks, GitHub, nbviewer)."""
    flow_rows = []
    lit = set(state.lit)
    lit_fill = PALE.get(state.lit_channel or "")
    for edge, count in zip(EDGES, state.edge_counts, strict=True):
        src = NODES[NODE_INDEX[edge.source]].label.replace("<br>", " ")
        dst = NODES[NODE_INDEX[edge.target]].label.replace("<br>", " ")
        style = f' style="background:{lit_fill};color:{INK}"' if lit_fill and edge.id in lit else ""
        flow_rows.append(
            f"<tr{style}><td>{esc(src)}</td><td>→</td><td>{esc(dst)}</td><td>{esc(edge.label)}</td>"
            f"<td style='text-align:right'>{count}</td></tr>"
        )
    lit_note = (
        f"lit: turn {state.lit_turn}, {esc(state.lit_channel)}"
        + (f" ({esc(state.lit_producer)})" if state.lit_producer else "")
        if state.lit_channel
        else "nothing lit yet"
    )
    last = state.turns[-1] if state.turns else None
    return (
        f'<div class="loopnb-summary" style="{_BOX};border:1px solid {LINE};padding:8px;border-radius:6px">'
        f"<div><b>loopnb live view</b> (static picture)</div>{status_html(state)}"
        f"<details open><summary><b>decision flow</b> · {lit_note}</summary>"
        f'<table style="border-collapse:collapse;color:{TEXT};font:inherit">{"".join(flow_rows)}</table>'
        "</details>"
        f"<div><b>recovery gauge</b>: {esc(gauge_text(state.gauge))}</div>"
        f"{board_html(state)}"
        f"<div><b>turn timeline</b> ({len(state.turns)} turns)</div>{_strip(state.turns)}"
        f"{inspector_html(last)}</div>"
    )
