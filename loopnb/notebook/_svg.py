"""The report's static panes as inline SVG: decision flow, recovery gauge, turn timeline, icons.

Drawn from a ``ViewState`` (``ViewModel.fold``), the same state the live view draws, so a report
says what the live run showed. No script and no plotly: a few kilobytes a pane. Every text from a
recording goes through ``esc``; only this module's own markup and numbers are left unescaped.
Channels are told apart by colour *and* shape or word (``PALETTE``, ``SHAPE``), never by colour
alone; ``SVG_STYLE`` holds the classes the drawings use (the report puts it in its ``<style>``).
"""

from __future__ import annotations

from collections.abc import Sequence

from loopnb.notebook._markup import esc
from loopnb.notebook._state import Gauge, TurnView, ViewState
from loopnb.record._flowchart import EDGES, NODE_INDEX, NODES, Edge, nodes_on

PALETTE = {"ok": "#009E73", "soft": "#E69F00", "hard": "#D55E00"}
"""Okabe-Ito colours, told apart by most colour-blind readers: bluish green, orange, vermillion."""
PALE = {"ok": "#d9f0e9", "soft": "#fbeccc", "hard": "#f7dccc"}
"""The same hues, pale: a lit box's fill, behind dark text."""
SHAPE = {"ok": "circle", "soft": "triangle", "hard": "square"}
"""Each channel's mark, so that the timeline reads without colour too."""
IDLE = "#9aa0a6"
INK = "#222"
TIMELINE_ROW = 50
"""Timeline marks per row: a long run's timeline is read like lines of text."""

SVG_STYLE = (
    ".loopnb-svg{display:block;max-width:100%;height:auto;font-family:system-ui,-apple-system,"
    "Segoe UI,sans-serif}.loopnb-svg text{fill:#222;font-size:12px}"
    ".loopnb-svg .small{font-size:10px;fill:#555}.loopnb-svg .cap{font-size:13px;font-weight:600}"
    ".loopnb-svg .halo{paint-order:stroke;stroke:#fff;stroke-width:4px;stroke-linejoin:round}"
    ".loopnb-svg .node{fill:#fff;stroke:#9aa0a6;stroke-width:1.2}"
    ".loopnb-svg a:hover>*:not(title),.loopnb-svg a:focus>*:not(title){stroke:#222;stroke-width:2}"
    + "".join(f".loopnb-svg .k-{c}{{fill:{color}}}" for c, color in PALETTE.items())
)


def _svg(width: float, height: float, cls: str, label: str, body: str) -> str:
    return (
        f'<svg class="loopnb-svg {cls}" viewBox="0 0 {width:g} {height:g}" width="{width:g}" '
        f'height="{height:g}" role="img" aria-label="{esc(label)}">{body}</svg>'
    )


def mark(channel: str, x: float, y: float, size: float = 9.0) -> str:
    """A channel's mark (circle, triangle or square) centred on ``x``, ``y``."""
    h = size / 2
    cls = f' class="k-{channel}"' if channel in PALETTE else ' fill="#777"'
    match SHAPE.get(channel):
        case "circle":
            return f'<circle{cls} cx="{x:g}" cy="{y:g}" r="{h:g}"/>'
        case "triangle":
            return f'<path{cls} d="M{x - h - 0.5:g},{y + h:g}h{size + 1:g}l{-h - 0.5:g},{-size - 1:g}z"/>'
        case _:
            return f'<rect{cls} x="{x - h:g}" y="{y - h:g}" width="{size:g}" height="{size:g}"/>'


def channel_icon(channel: str) -> str:
    """A channel's mark as a small inline picture, to stand beside its word."""
    return _svg(10, 10, "loopnb-icon", channel, mark(channel, 5, 5, 8))


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
    stroke, width = (color, 4.0) if color else (IDLE if count else "#c9ccd1", 1.6)
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
        f'<line x1="{sx:.1f}" y1="{sy:.1f}" x2="{bx:.1f}" y2="{by:.1f}" stroke="{stroke}" '
        f'stroke-width="{width:g}"/><polygon points="{head}" fill="{stroke}"/>'
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
        f'<g class="loopnb-node" data-node="{node_id}"{" data-lit" if lit else ""}>'
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
    return _svg(_W, _H, "loopnb-flow", "decision flow", head + edges + nodes)


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
        bg = fill if reached else ("#f3f3f3" if not wall else "#fff")
        border = PALETTE["hard"] if wall else IDLE
        dash = ' stroke-dasharray="4 2"' if wall else ""
        parts.append(
            f'<rect x="{x}" y="34" width="{width}" height="24" rx="3" fill="{bg}" stroke="{border}"{dash}/>'
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
    return _svg(total, 90 + 16 * len(lines), "loopnb-gauge", "recovery gauge", "".join(parts))


# -- the turn timeline ---------------------------------------------------------------------------


def _mark_title(t: TurnView) -> str:
    what = t.producer or ("final reply" if not t.tools else "tool calls ok")
    tools = ", ".join(t.tools)
    return esc(f"turn {t.turn}: {t.channel} ({what})" + (f" · {tools}" if tools else ""), 200)


def timeline_svg(
    turns: Sequence[TurnView],
    anchor: str | None,
    *,
    selected: int | None = None,
    total: int | None = None,
) -> str:
    """Every turn as its channel's mark, rows of 50; each mark's title names its turn.

    With an ``anchor`` a mark is a link to its row (``#{anchor}-t{turn}``), as in the report;
    without, the marks are plain (the live view selects turns with its slider). ``selected``
    rings that turn; ``total`` is the run's turn count when ``turns`` are only its last ones.
    """
    step, gutter, row_h = 15, 92, 34
    rows = max(1, -(-len(turns) // TIMELINE_ROW))
    width = gutter + TIMELINE_ROW * step + 12
    count = len(turns) if total is None else total
    said = f"{count:,} turn{'' if count == 1 else 's'}"
    if count > len(turns):
        said = f"the last {len(turns):,} of {said}"
    said += "; a mark links to its row" if anchor is not None else "; hover a mark for its turn"
    parts = [
        f'<text class="cap" x="12" y="20">turn timeline</text>'
        f'<text x="130" y="20">{said}</text>{legend(width - 180, 20)}'
    ]
    if not turns:
        parts.append('<text class="small" x="12" y="46">no turn finished</text>')
    for r in range(rows):
        chunk = turns[r * TIMELINE_ROW : (r + 1) * TIMELINE_ROW]
        if not chunk:
            break
        y = 44 + r * row_h
        parts.append(
            f'<text class="small" x="{gutter - 8}" y="{y + 4}" text-anchor="end">{chunk[0].turn}</text>'
        )
        for i, t in enumerate(chunk):
            x = gutter + i * step + step / 2
            if t.turn == selected:
                parts.append(
                    f'<rect class="loopnb-selected" data-turn="{t.turn}" x="{x - 8:g}" y="{y - 8}" '
                    f'width="16" height="16" '
                    f'fill="none" stroke="{INK}" stroke-width="2"/>'
                )
            body = f"<title>{_mark_title(t)}</title>{mark(t.channel, x, y, 11)}"
            if anchor is None:
                later = selected is not None and t.turn > selected  # after the selected turn: greyed
                grey = ' opacity="0.3"' if later else ""
                kind = "loopnb-mark loopnb-later" if later else "loopnb-mark"
                parts.append(
                    f'<g class="{kind}" data-turn="{t.turn}" data-channel="{esc(t.channel)}"{grey}>{body}</g>'
                )
            else:
                parts.append(
                    f'<a href="#{anchor}-t{t.turn}" class="loopnb-mark" data-channel="{esc(t.channel)}">'
                    f"{body}</a>"
                )
            if i % 10 == 9:
                parts.append(
                    f'<text class="small" x="{x:g}" y="{y + 18}" text-anchor="middle">{t.turn}</text>'
                )
    height = 44 + rows * row_h
    return _svg(width, height, "loopnb-timeline", "turn timeline", "".join(parts))
