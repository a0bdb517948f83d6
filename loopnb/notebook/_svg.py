"""The panes as inline SVG: decision flow and recovery gauge (the timeline is ``_timeline``'s).

Drawn from a ``ViewState`` (``ViewModel.fold``), the same state the live view draws, so a report
says what the live run showed. No script and no plotly: a few kilobytes a pane. Every picture is
``Html`` filled into ``Html`` templates (``loopnb.notebook._html``): a text from a recording is
escaped wherever it goes.
Channels are told apart by colour *and* shape or word (``PALETTE``, ``SHAPE``), never by colour
alone. ``SVG_STYLE`` holds the classes the drawings use (the live view and the report put it in
a ``<style>``): text and boxes in the theme's colours (``_layout``), marks in the palette's.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

from loopnb._palette import IDLE, INK, PALE, PALETTE
from loopnb.analysis._flowchart import EDGES, NODE_INDEX, NODES, Edge, nodes_on
from loopnb.notebook._html import Html, esc
from loopnb.notebook._layout import (
    CODE_BG,
    EDGE,
    LINE,
    MUTED,
    PAGE,
    RAISED,
    TEXT,
    UI_FONT,
    mark,
)
from loopnb.notebook._state import Gauge, ViewState

SVG_STYLE = Html(  # our own constants: a style sheet is never escaped (it is not HTML text)
    f".loopnb-svg{{display:block;max-width:100%;height:auto;font-family:{UI_FONT}}}"
    f".loopnb-svg text{{fill:{TEXT};font-size:12px}}"
    f".loopnb-svg .small{{font-size:10px;fill:{MUTED}}}.loopnb-svg .cap{{font-size:13px;font-weight:600}}"
    f".loopnb-svg .halo{{paint-order:stroke;stroke:{PAGE};stroke-width:4px;stroke-linejoin:round}}"
    f".loopnb-svg .node{{fill:{RAISED};stroke:{IDLE};stroke-width:1.2}}"
    f".loopnb-svg .lit text{{fill:{INK}}}"  # a lit step is pale in every theme: dark ink on it
    f".loopnb-svg line.faint{{stroke:{EDGE}}}.loopnb-svg polygon.faint{{fill:{EDGE}}}"
    f".loopnb-svg .cell{{fill:{CODE_BG}}}.loopnb-svg .wall{{fill:{PAGE}}}"
    f".loopnb-svg .grid{{stroke:{LINE};stroke-width:1}}.loopnb-svg .axis{{stroke:{MUTED};stroke-width:1}}"
    f".loopnb-svg .loopnb-selected{{fill:none;stroke:{TEXT};stroke-width:2}}"
    ".loopnb-svg .hit{fill:transparent}.loopnb-svg .tip{visibility:hidden;font-size:11px}"
    ".loopnb-svg .loopnb-mark:hover+.tip,.loopnb-svg .loopnb-mark:focus+.tip{visibility:visible}"
    f".loopnb-svg .loopnb-mark:hover .m,.loopnb-svg .loopnb-mark:focus .m{{stroke:{TEXT};stroke-width:2}}"
    + "".join(f".loopnb-svg .k-{c}{{fill:{color}}}" for c, color in PALETTE.items())
)
"""The classes the panes draw with: theme colours for text and boxes, the palette for marks."""
_NONE = Html()


def svg(width: float, height: float, cls: str, label: str, body: Html) -> Html:
    """One pane: an ``<svg>`` of class ``loopnb-svg {cls}``, named ``label`` for screen readers."""
    return Html(
        '<svg class="loopnb-svg {cls}" viewBox="0 0 {w:g} {h:g}" width="{w:g}" height="{h:g}" role="img" '
        'aria-label="{label}">{body}</svg>'
    ).format(cls=cls, w=width, h=height, label=label, body=body)


def legend(x: float, y: float) -> Html:
    """ok ● soft ▲ hard ■, as marks and words."""
    parts = []
    for channel in PALETTE:
        parts.append(
            Html('{}<text x="{:g}" y="{:g}">{}</text>').format(
                mark(channel, x + 5, y - 4), x + 13, y, channel
            )
        )
        x += 58
    return _NONE.join(parts)


# -- the decision flow ---------------------------------------------------------------------------

_W, _H = 1180, 520
_BOX_W, _BOX_H = 262, 40


def _at(node_id: str) -> tuple[float, float]:
    node = NODES[NODE_INDEX[node_id]]
    return 140 + (node.x + 2.7) * 186, 44 + (7.0 - node.y) * 62


_LEAVES_AT = {"soft-watch": 118.0}
"""Edges that leave their source box off its centre line, by this much to the right: the soft
channel's way to the watchers starts at its box's corner, clear of the boxes below it."""


def _ends(edge: Edge) -> tuple[float, float, float, float]:
    """Where an edge's line leaves its source box and meets its target's (box edges, not centres)."""
    (x0, y0), (x1, y1) = _at(edge.source), _at(edge.target)
    x0 += _LEAVES_AT.get(edge.id, 0.0)
    dx, dy = x1 - x0, y1 - y0
    hw, hh = _BOX_W / 2 + 3, _BOX_H / 2 + 3
    t = min(hw / abs(dx) if dx else 1e9, hh / abs(dy) if dy else 1e9)
    return x0 + dx * t, y0 + dy * t, x1 - dx * t, y1 - dy * t


_LABEL_AT = {  # where an edge's label and count go: a share along the edge, an offset, an anchor
    "adapt-soft": (0.5, -10, -4, "end"),
    "adapt-hard": (0.5, 8, -8, "start"),
    "next-ok": (0.5, -16, -6, "end"),
    "watch-hard2": (0.5, 10, 4, "start"),
    "next-watch": (0.5, 6, 18, "start"),
    "soft-watch": (0.45, 12, -4, "start"),
}


_EDGE = Html(
    '<g class="loopnb-edge" data-edge="{id}" data-count="{count}">'
    '<line x1="{sx:.1f}" y1="{sy:.1f}" x2="{bx:.1f}" y2="{by:.1f}" {paint} '
    'stroke-width="{width:g}"/><polygon points="{head}" {fill}/>'
    '<text class="halo" x="{lx:.1f}" y="{ly:.1f}" text-anchor="{anchor}"{weight}>{label}{count}</text>'
    "</g>"
)
_FAINT = Html('class="faint"')
_STROKE = {c: Html('stroke="{}"').format(c) for c in (*PALETTE.values(), IDLE)}
_FILL = {c: Html('fill="{}"').format(c) for c in (*PALETTE.values(), IDLE)}
_BOLD = Html(' font-weight="700"')


def _geometry(edge: Edge) -> dict[str, Any]:
    """An edge's fixed parts, drawn once: where its line, head and label go, its id and its words."""
    sx, sy, ex, ey = _ends(edge)
    length = ((ex - sx) ** 2 + (ey - sy) ** 2) ** 0.5 or 1.0
    ux, uy = (ex - sx) / length, (ey - sy) / length
    bx, by = ex - 11 * ux, ey - 11 * uy
    share, ox, oy, anchor = _LABEL_AT.get(edge.id, (0.5, 10, 4, "start"))
    return {
        "id": Html.escape(edge.id),
        "sx": sx,
        "sy": sy,
        "bx": bx,
        "by": by,
        "head": Html("{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}").format(
            ex, ey, bx - 5.5 * uy, by + 5.5 * ux, bx + 5.5 * uy, by - 5.5 * ux
        ),
        "lx": sx + (ex - sx) * share + ox,
        "ly": sy + (ey - sy) * share + oy,
        "anchor": Html.escape(anchor),
        "label": Html("{} · ").format(edge.label) if edge.label else Html(),
    }


_GEOMETRY = {edge.id: _geometry(edge) for edge in EDGES}


def _edge(edge: Edge, count: int, color: str | None) -> Html:
    """An edge with its count: thick in ``color`` when lit, grey once taken, faint before."""
    stroke, width = (color, 4.0) if color else (IDLE if count else "", 1.6)
    return _EDGE.format(
        count=count,
        paint=_STROKE[stroke] if stroke else _FAINT,
        width=width,
        fill=_FILL[stroke] if stroke else _FAINT,
        weight=_BOLD if color else _NONE,
        **_GEOMETRY[edge.id],
    )


def _node(node_id: str, lit: str | None) -> Html:
    """A step of the chart, filled in ``lit``'s pale colour when the lit path goes through it."""
    x, y = _at(node_id)
    lines = NODES[NODE_INDEX[node_id]].label.split("<br>")
    first = y - 7 * (len(lines) - 1) + 4
    return Html(
        '<g class="loopnb-node{lit}" data-node="{id}"{data}>'
        '<rect class="node" x="{x:g}" y="{y:g}" width="{w}" height="{h}" rx="6"{style}/>'
        '<text text-anchor="middle">{text}</text></g>'
    ).format(
        lit=Html(" lit") if lit else _NONE,
        id=node_id,
        data=Html(" data-lit") if lit else _NONE,
        x=x - _BOX_W / 2,
        y=y - _BOX_H / 2,
        w=_BOX_W,
        h=_BOX_H,
        style=Html(' style="fill:{};stroke:{};stroke-width:2.5"').format(PALE[lit], PALETTE[lit])
        if lit
        else _NONE,
        text=_NONE.join(
            Html('<tspan x="{:g}" y="{:g}">{}</tspan>').format(x, first + 14 * i, line)
            for i, line in enumerate(lines)
        ),
    )


_NODES = {(n.id, lit): _node(n.id, lit) for n in NODES for lit in (None, *PALETTE)}
"""Every step drawn once, unlit and lit in each channel's colours: a redraw picks them."""


def flow_svg(state: ViewState) -> Html:
    """The spec's flowchart: every edge with its count, the last turn's path drawn thick."""
    channel = state.lit_channel if state.lit_channel in PALETTE else None
    color = PALETTE[channel] if channel else None
    lit = set(state.lit)
    lit_nodes = set(nodes_on(state.lit))
    edges = _NONE.join(
        _edge(e, n, color if e.id in lit else None) for e, n in zip(EDGES, state.edge_counts, strict=True)
    )
    nodes = _NONE.join(_NODES[n.id, channel if n.id in lit_nodes else None] for n in NODES)
    if channel:
        caption = f"the thick path: turn {state.lit_turn}, {channel}"
        if state.lit_producer:
            caption += f" ({state.lit_producer})"
    else:
        caption = "no turn yet"
    head = Html(
        '<text class="cap" x="12" y="20">decision flow</text>'
        '<text x="130" y="20">{} · the numbers count turns per arrow</text>'
    ).format(esc(caption, 120))
    return svg(_W, _H, "loopnb-flow", "decision flow", head + edges + nodes)


# -- the recovery gauge --------------------------------------------------------------------------


def _gauge_colour(g: Gauge) -> str:
    if g.status == "exhausted":
        return PALETTE["hard"]
    return PALETTE["ok"] if g.status in ("ok", "idle") else PALETTE["soft"]


_STATUS_WORD = {
    "idle": "no tool call yet",
    "ok": "succeeded",
    "failed": "failed",
    "retrying": "recovery retries it",
    "gave_up": "recovery gave up",
    "exhausted": "hit the wall (ToolRecoveryExhausted)",
}


def gauge_of_view(state: ViewState, selected: int | None) -> Gauge:
    """The gauge to draw: the selected turn's; while a run goes on with the newest turn selected,
    the turn in progress once it has dispatched a call."""
    live = state.gauge
    turn = state.turn(selected) if selected else None
    if turn is None:
        return live
    newest = state.turns[-1].turn if state.turns else 0
    if state.run.phase == "running" and selected == newest and live.turn > newest:
        return live
    return turn.gauge


_CELL = Html(  # by position (a redraw fills seven): x, width, fill, border, dash, the word's x, the word
    '<rect x="{0}" y="34" width="{1}" height="24" rx="3" {2} stroke="{3}"{4}/>'
    '<text class="small" x="{5:g}" y="72" text-anchor="middle">{6}</text>'
)
_WALL, _EMPTY = Html('class="wall"'), Html('class="cell"')
_BORDER = {True: Html.escape(PALETTE["hard"]), False: Html.escape(IDLE)}  # the wall's, the others'
_DASH = Html(' stroke-dasharray="4 2"')


def gauge_svg(g: Gauge, words: Sequence[str] | None = None) -> Html:
    """The current (or last) tool call's attempt as cells 0..5 and the wall, filled up to it.

    ``words`` replaces the lines under the cells (the live view passes ``Gauge.lines()``); with
    them the cells are grey when there is nothing to count (``Gauge.greyed``).
    """
    cells, width, x0 = g.max_attempts + 2, 46, 12
    filled = _FILL[IDLE if words is not None and g.greyed else _gauge_colour(g)]
    parts = [
        Html(
            '<text class="cap" x="12" y="20">recovery gauge</text>'
            '<g class="loopnb-cells" data-attempt="{}" data-status="{}"{}>'
        ).format(g.attempt, g.status, Html(" data-greyed") if g.greyed else _NONE)
    ]
    for i in range(cells):
        wall = i == cells - 1
        reached = g.tool is not None and i <= g.attempt
        x = x0 + i * (width + 4)
        word = Html("wall") if wall else Html("call") if i == 0 else Html("retry {}").format(i)
        bg = filled if reached else _WALL if wall else _EMPTY
        parts.append(_CELL.format(x, width, bg, _BORDER[wall], _DASH if wall else _NONE, x + width / 2, word))
    parts.append(Html("</g>"))
    if words is not None:
        lines = list(words)
    elif g.tool is None:
        lines = ["no tool call yet"]
    elif g.at_wall:
        lines = [f"{g.tool} · turn {g.turn}", f"asked for retry {g.attempt}: {_STATUS_WORD[g.status]}"]
    else:
        status = _STATUS_WORD[g.status] + (f" ({g.decision})" if g.status == "gave_up" else "")
        lines = [f"{g.tool} · turn {g.turn}", f"attempt {g.attempt} of {g.max_attempts} retries · {status}"]
    limit = 64 if words is None else 140
    rows = _wrapped(lines, limit, _COLUMNS)  # a long line wraps: the picture keeps its width
    total = max(x0 + cells * (width + 4) + 40, 24 + 7 * max(len(row) for row in rows))
    parts += [
        Html('<text x="12" y="{}">{}</text>').format(94 + 16 * i, esc(row)) for i, row in enumerate(rows)
    ]
    return svg(total, 90 + 16 * len(rows), "loopnb-gauge", "recovery gauge", _NONE.join(parts))


_COLUMNS = 64
"""The gauge's widest line, in characters (about 7 px each): wider text wraps."""


def _wrapped(lines: Sequence[str], limit: int, columns: int) -> list[str]:
    """``lines``, each cut to ``limit`` characters, wrapped at ``columns`` (about 7 px a character
    at the gauge's size): the picture keeps its width, so its text keeps its size."""
    rows: list[str] = []
    for line in lines:
        cut = line if len(line) <= limit else line[: limit - 1] + "…"
        rows += textwrap.wrap(cut, columns, break_long_words=True, break_on_hyphens=False) or [""]
    return rows
