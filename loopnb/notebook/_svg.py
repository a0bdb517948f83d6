"""The panes as inline SVG: decision flow and recovery gauge (the timeline is ``_timeline``'s).

Drawn from a ``ViewState`` (``ViewModel.fold``), the same state the live view draws, so a report
says what the live run showed. No script and no plotly: a few kilobytes a pane. Every text from a
recording goes through ``esc``; only this module's own markup and numbers are left unescaped.
Channels are told apart by colour *and* shape or word (``PALETTE``, ``SHAPE``), never by colour
alone. ``SVG_STYLE`` holds the classes the drawings use (the live view and the report put it in
a ``<style>``): text and boxes in the theme's colours (``_layout``), marks in the palette's.
"""

from __future__ import annotations

from collections.abc import Sequence

from loopnb._palette import IDLE, INK, PALE, PALETTE
from loopnb.notebook._layout import (
    CODE_BG,
    EDGE,
    LINE,
    MUTED,
    PAGE,
    RAISED,
    TEXT,
    UI_FONT,
    icon,
    mark,
)
from loopnb.notebook._markup import esc
from loopnb.notebook._state import Gauge, ViewState
from loopnb.record._flowchart import EDGES, NODE_INDEX, NODES, Edge, nodes_on

SVG_STYLE = (
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


def svg(width: float, height: float, cls: str, label: str, body: str) -> str:
    """One pane: an ``<svg>`` of class ``loopnb-svg {cls}``, named ``label`` for screen readers."""
    return (
        f'<svg class="loopnb-svg {cls}" viewBox="0 0 {width:g} {height:g}" width="{width:g}" '
        f'height="{height:g}" role="img" aria-label="{esc(label)}">{body}</svg>'
    )


def channel_icon(channel: str) -> str:
    """A channel's mark as a small inline picture, to stand beside its word."""
    return icon(channel)


def legend(x: float, y: float) -> str:
    """ok ● soft ▲ hard ■, as marks and words."""
    parts = []
    for channel in PALETTE:
        parts.append(f'{mark(channel, x + 5, y - 4)}<text x="{x + 13:g}" y="{y:g}">{channel}</text>')
        x += 58
    return "".join(parts)


# -- the decision flow ---------------------------------------------------------------------------

_W, _H = 1180, 520
_BOX_W, _BOX_H = 262, 40


def _at(node_id: str) -> tuple[float, float]:
    node = NODES[NODE_INDEX[node_id]]
    return 140 + (node.x + 2.7) * 186, 44 + (7.0 - node.y) * 62


def _ends(edge: Edge) -> tuple[float, float, float, float]:
    """Where an edge's line leaves its source box and meets its target's (box edges, not centres)."""
    (x0, y0), (x1, y1) = _at(edge.source), _at(edge.target)
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
}


def _edge(edge: Edge, count: int, color: str | None) -> str:
    sx, sy, ex, ey = _ends(edge)
    length = ((ex - sx) ** 2 + (ey - sy) ** 2) ** 0.5 or 1.0
    ux, uy = (ex - sx) / length, (ey - sy) / length
    stroke, width = (color, 4.0) if color else (IDLE if count else "", 1.6)
    paint = f'stroke="{stroke}"' if stroke else 'class="faint"'
    fill = f'fill="{stroke}"' if stroke else 'class="faint"'
    bx, by = ex - 11 * ux, ey - 11 * uy
    head = (
        f"{ex:.1f},{ey:.1f} {bx - 5.5 * uy:.1f},{by + 5.5 * ux:.1f} {bx + 5.5 * uy:.1f},{by - 5.5 * ux:.1f}"
    )
    share, ox, oy, anchor = _LABEL_AT.get(edge.id, (0.5, 10, 4, "start"))
    lx, ly = sx + (ex - sx) * share + ox, sy + (ey - sy) * share + oy
    label = f"{edge.label} · {count}" if edge.label else str(count)
    weight = ' font-weight="700"' if color else ""
    return (
        f'<g class="loopnb-edge" data-edge="{edge.id}" data-count="{count}">'
        f'<line x1="{sx:.1f}" y1="{sy:.1f}" x2="{bx:.1f}" y2="{by:.1f}" {paint} '
        f'stroke-width="{width:g}"/><polygon points="{head}" {fill}/>'
        f'<text class="halo" x="{lx:.1f}" y="{ly:.1f}" text-anchor="{anchor}"{weight}>{esc(label)}</text>'
        "</g>"
    )


def _node(node_id: str, lit: str | None) -> str:
    x, y = _at(node_id)
    node = NODES[NODE_INDEX[node_id]]
    lines = node.label.split("<br>")
    style = f' style="fill:{PALE[lit]};stroke:{PALETTE[lit]};stroke-width:2.5"' if lit else ""
    first = y - 7 * (len(lines) - 1) + 4
    text = "".join(
        f'<tspan x="{x:g}" y="{first + 14 * i:g}">{esc(line)}</tspan>' for i, line in enumerate(lines)
    )
    return (
        f'<g class="loopnb-node{" lit" if lit else ""}" data-node="{node_id}"{" data-lit" if lit else ""}>'
        f'<rect class="node" x="{x - _BOX_W / 2:g}" y="{y - _BOX_H / 2:g}" width="{_BOX_W}" '
        f'height="{_BOX_H}" rx="6"{style}/><text text-anchor="middle">{text}</text></g>'
    )


def flow_svg(state: ViewState) -> str:
    """The spec's flowchart: every edge with its count, the last turn's path drawn thick."""
    channel = state.lit_channel if state.lit_channel in PALETTE else None
    color = PALETTE[channel] if channel else None
    lit = set(state.lit)
    lit_nodes = set(nodes_on(state.lit))
    edges = "".join(
        _edge(e, n, color if e.id in lit else None) for e, n in zip(EDGES, state.edge_counts, strict=True)
    )
    nodes = "".join(_node(n.id, channel if n.id in lit_nodes else None) for n in NODES)
    if channel:
        caption = f"the thick path: turn {state.lit_turn}, {channel}"
        if state.lit_producer:
            caption += f" ({state.lit_producer})"
    else:
        caption = "no turn yet"
    head = (
        f'<text class="cap" x="12" y="20">decision flow</text>'
        f'<text x="130" y="20">{esc(caption, 120)} · the numbers count turns per arrow</text>'
    )
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


def gauge_svg(g: Gauge, words: Sequence[str] | None = None) -> str:
    """The current (or last) tool call's attempt as cells 0..5 and the wall, filled up to it.

    ``words`` replaces the lines under the cells (the live view passes ``Gauge.lines()``); with
    them the cells are grey when there is nothing to count (``Gauge.greyed``).
    """
    cells, width, x0 = g.max_attempts + 2, 46, 12
    fill = IDLE if words is not None and g.greyed else _gauge_colour(g)
    parts = [
        '<text class="cap" x="12" y="20">recovery gauge</text>'
        f'<g class="loopnb-cells" data-attempt="{g.attempt}" data-status="{g.status}"'
        f"{' data-greyed' if g.greyed else ''}>"
    ]
    for i in range(cells):
        wall = i == cells - 1
        reached = g.tool is not None and i <= g.attempt
        x = x0 + i * (width + 4)
        bg = f'fill="{fill}"' if reached else f'class="{"wall" if wall else "cell"}"'
        border = PALETTE["hard"] if wall else IDLE
        dash = ' stroke-dasharray="4 2"' if wall else ""
        parts.append(
            f'<rect x="{x}" y="34" width="{width}" height="24" rx="3" {bg} stroke="{border}"{dash}/>'
            f'<text class="small" x="{x + width / 2:g}" y="72" text-anchor="middle">'
            f"{'wall' if wall else 'call' if i == 0 else f'retry {i}'}</text>"
        )
    parts.append("</g>")
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
    parts += [f'<text x="12" y="{94 + 16 * i}">{esc(line, limit)}</text>' for i, line in enumerate(lines)]
    total = max(x0 + cells * (width + 4) + 40, 24 + 7 * max(min(len(line), limit) for line in lines))
    return svg(total, 90 + 16 * len(lines), "loopnb-gauge", "recovery gauge", "".join(parts))
