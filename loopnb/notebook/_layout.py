"""The figure's fixed layout: where each pane, trace and annotation goes, and the colours they share.

``base_figure()`` builds the figure once, as the empty view; ``render.figure_patch`` then says
what changes for a ``ViewState``, addressing traces by the ``T_*`` indices here and annotations
by their order (the nodes first, then the arrowheads, then the pane titles).
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from loopnb.engine._recovery import MAX_RECOVERY_ATTEMPTS
from loopnb.notebook._state import Gauge
from loopnb.record._flowchart import EDGES, NODE_INDEX, NODES

CHANNEL_COLOR = {"ok": "#2e9d4a", "soft": "#e69500", "hard": "#d7263d"}
CHANNEL_FILL = {"ok": "#dff3e4", "soft": "#fdf0d5", "hard": "#f9dcdf"}
IDLE_BORDER, _IDLE_FILL, EDGE_COLOR = "#c9ccd1", "#ffffff", "#c9ccd1"
FIGURE_HEIGHT = 560
TIMELINE_HOVER = "turn %{x}: %{customdata}<extra></extra>"
"""A timeline mark's hover template, its label in ``customdata`` (``render`` fills that in)."""

# trace indices
T_EDGES, T_LIT, T_COUNTS, T_OK, T_SOFT, T_HARD, T_SELECTED, T_GAUGE = range(8)
TIMELINE = {"ok": T_OK, "soft": T_SOFT, "hard": T_HARD}
# annotation indices: the nodes first, then one arrowhead per edge, then the pane titles
A_ARROWS = len(NODES)  # arrowheads: static, grey


def _pos(node_id: str) -> tuple[float, float]:
    node = NODES[NODE_INDEX[node_id]]
    return node.x, node.y


def segments(edge_ids: list[str]) -> tuple[list[float | None], list[float | None]]:
    """The lines of ``edge_ids`` as plotly x and y lists, ``None`` between one edge and the next."""
    xs: list[float | None] = []
    ys: list[float | None] = []
    for edge_id in edge_ids:
        edge = next(e for e in EDGES if e.id == edge_id)
        (x0, y0), (x1, y1) = _pos(edge.source), _pos(edge.target)
        xs += [x0, x1, None]
        ys += [y0, y1, None]
    return xs, ys


def _along(edge_id: str, t: float) -> tuple[float, float]:
    edge = next(e for e in EDGES if e.id == edge_id)
    (x0, y0), (x1, y1) = _pos(edge.source), _pos(edge.target)
    return x0 + (x1 - x0) * t, y0 + (y1 - y0) * t


_LABEL_SIDE = {"next-ok": "bottom right", "adapt-soft": "middle left", "adapt-hard": "top right"}


def _label_at(edge_id: str) -> tuple[float, float]:
    """Where an edge's count goes: beside its middle, off the line, on the side ``_LABEL_SIDE`` says."""
    edge = next(e for e in EDGES if e.id == edge_id)
    (x0, y0), (x1, y1) = _pos(edge.source), _pos(edge.target)
    dx, dy = x1 - x0, y1 - y0
    norm = (dx * dx + dy * dy) ** 0.5 or 1.0
    px, py = dy / norm, -dx / norm  # a perpendicular
    if px < 0 or (px == 0 and py < 0):
        px, py = -px, -py
    side = -1.0 if _LABEL_SIDE.get(edge_id, "").endswith("left") else 1.0
    mx, my = _along(edge_id, 0.5)
    return mx + side * 0.08 * px, my + side * 0.08 * py


def base_figure() -> go.Figure:
    """The figure's fixed layout: flow (top left), gauge (top right), timeline (bottom strip)."""
    all_x, all_y = segments([e.id for e in EDGES])
    label_xy = [_label_at(e.id) for e in EDGES]
    flow = {"xaxis": "x", "yaxis": "y", "hoverinfo": "skip", "showlegend": False}
    data: list[Any] = [
        go.Scatter(
            x=all_x, y=all_y, mode="lines", line={"color": EDGE_COLOR, "width": 2}, name="edges", **flow
        ),
        go.Scatter(x=[], y=[], mode="lines", line={"color": EDGE_COLOR, "width": 6}, name="lit path", **flow),
        go.Scatter(
            x=[x for x, _ in label_xy],
            y=[y for _, y in label_xy],
            mode="text",
            text=["0"] * len(EDGES),
            textposition=[_LABEL_SIDE.get(e.id, "middle right") for e in EDGES],
            textfont={"size": 11, "color": "#333"},
            hoverinfo="text",
            hovertext=[""] * len(EDGES),
            name="edge counts",
            xaxis="x",
            yaxis="y",
            showlegend=False,
        ),
    ]
    for channel in ("ok", "soft", "hard"):
        data.append(
            go.Scatter(
                x=[],
                y=[],
                mode="markers",
                marker={"color": CHANNEL_COLOR[channel], "size": 10, "symbol": "square"},
                name=channel,
                customdata=[],
                hovertemplate=TIMELINE_HOVER,
                xaxis="x2",
                yaxis="y2",
            )
        )
    data.append(
        go.Scatter(
            x=[],
            y=[],
            mode="markers",
            marker={"color": "#222", "size": 17, "symbol": "square-open", "line": {"width": 2}},
            name="selected",
            hoverinfo="skip",
            showlegend=False,
            xaxis="x2",
            yaxis="y2",
        )
    )
    data.append(
        go.Indicator(
            mode="gauge",
            value=0,
            domain={"x": [0.72, 0.97], "y": [0.50, 0.90]},
            number={"suffix": f" / {Gauge().max_attempts}", "font": {"size": 26}},
            title={"text": "<b>recovery</b><br>no tool call yet", "font": {"size": 14, "color": "#8a8f98"}},
            gauge={
                "axis": {
                    "range": [0, MAX_RECOVERY_ATTEMPTS + 1],
                    "tickvals": list(range(MAX_RECOVERY_ATTEMPTS + 2)),
                    "ticktext": [*map(str, range(MAX_RECOVERY_ATTEMPTS + 1)), "wall"],
                },
                "bar": {"color": IDLE_BORDER},
                "steps": [
                    {"range": [0, MAX_RECOVERY_ATTEMPTS], "color": "#f1f3f4"},
                    {"range": [MAX_RECOVERY_ATTEMPTS, MAX_RECOVERY_ATTEMPTS + 1], "color": "#f3b6bd"},
                ],
                "threshold": {
                    "line": {"color": CHANNEL_COLOR["hard"], "width": 4},
                    "value": MAX_RECOVERY_ATTEMPTS,
                },
            },
        )
    )
    annotations: list[dict[str, Any]] = [
        {
            "x": n.x,
            "y": n.y,
            "xref": "x",
            "yref": "y",
            "text": n.label,
            "showarrow": False,
            "bgcolor": _IDLE_FILL,
            "bordercolor": IDLE_BORDER,
            "borderwidth": 3,
            "borderpad": 4,
            "font": {"size": 11, "color": "#222"},
        }
        for n in NODES
    ]
    for edge in EDGES:
        head, tail = _along(edge.id, 0.66), _along(edge.id, 0.46)
        annotations.append(
            {
                "x": head[0],
                "y": head[1],
                "ax": tail[0],
                "ay": tail[1],
                "xref": "x",
                "yref": "y",
                "axref": "x",
                "ayref": "y",
                "text": "",
                "showarrow": True,
                "arrowhead": 2,
                "arrowsize": 1.1,
                "arrowwidth": 2.5,
                "arrowcolor": EDGE_COLOR,
            }
        )
    for text, x, y in (("decision flow", 0.0, 1.0), ("turn timeline", 0.0, 0.135)):
        annotations.append(
            {
                "x": x,
                "y": y,
                "xref": "paper",
                "yref": "paper",
                "text": f"<b>{text}</b>",
                "showarrow": False,
                "xanchor": "left",
                "yanchor": "bottom",
                "font": {"size": 13},
            }
        )
    layout = go.Layout(
        height=FIGURE_HEIGHT,
        margin={"l": 10, "r": 10, "t": 24, "b": 30},
        paper_bgcolor="white",
        plot_bgcolor="white",
        hovermode="closest",
        clickmode="event",
        dragmode=False,
        xaxis={"domain": [0.0, 0.68], "range": [-3.4, 3.1], "visible": False, "fixedrange": True},
        yaxis={"domain": [0.22, 1.0], "range": [-0.5, 7.5], "visible": False, "fixedrange": True},
        xaxis2={
            "domain": [0.0, 1.0],
            "anchor": "y2",
            "range": [0.5, 10.5],
            "title": {"text": "turn", "standoff": 2},
            "fixedrange": True,
            "showgrid": False,
        },
        yaxis2={"domain": [0.0, 0.11], "range": [-1, 1], "visible": False, "fixedrange": True},
        legend={"orientation": "h", "x": 1.0, "xanchor": "right", "y": 0.135, "yanchor": "bottom"},
        annotations=annotations,
    )
    return go.Figure(data=data, layout=layout)
