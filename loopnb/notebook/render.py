"""The plotly side of the view: one figure with the decision flow, the recovery gauge and the timeline.

``base_figure()`` lays the figure out once; ``figure_patch(state, selected)`` says what every
changing property should be for a ``ViewState``, as ``{target: {property: value}}``. The live
widget applies only the properties that changed since its last redraw; the static report applies
the whole patch to a fresh figure. One function decides what is drawn, for both.

Every text that comes from a model or a tool is escaped (``plain``): plotly renders a subset of
HTML in text and hover labels.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

import plotly.graph_objects as go

from loopnb.notebook.flow import EDGES, NODE_INDEX, NODES, nodes_on
from loopnb.notebook.viewmodel import Gauge, TurnView, ViewState

__all__ = [
    "CHANNEL_COLOR",
    "CHANNEL_FILL",
    "FIGURE_HEIGHT",
    "Patch",
    "apply_patch",
    "base_figure",
    "figure",
    "figure_patch",
    "plain",
]

CHANNEL_COLOR = {"ok": "#2e9d4a", "soft": "#e69500", "hard": "#d7263d"}
CHANNEL_FILL = {"ok": "#dff3e4", "soft": "#fdf0d5", "hard": "#f9dcdf"}
_IDLE_BORDER, _IDLE_FILL, _EDGE = "#9aa0a6", "#ffffff", "#c9ccd1"
FIGURE_HEIGHT = 560

# trace indices
T_EDGES, T_LIT, T_COUNTS, T_OK, T_SOFT, T_HARD, T_SELECTED, T_GAUGE = range(8)
TIMELINE = {"ok": T_OK, "soft": T_SOFT, "hard": T_HARD}
# annotation indices: the nodes first, then one arrowhead per edge, then the pane titles
A_ARROWS = len(NODES)

Patch = dict[str, dict[str, Any]]
"""``{"data.3": {"x": [...]}, "layout.annotations.2": {"bgcolor": "#..."}}``."""


def plain(text: object, limit: int | None = None) -> str:
    """``text`` made safe for plotly's HTML-like labels: escaped, newlines as ``<br>``, cut."""
    s = str(text)
    if limit is not None and len(s) > limit:
        s = s[: limit - 1] + "…"
    return html.escape(s, quote=False).replace("\n", "<br>")


def _pos(node_id: str) -> tuple[float, float]:
    node = NODES[NODE_INDEX[node_id]]
    return node.x, node.y


def _segments(edge_ids: list[str]) -> tuple[list[float | None], list[float | None]]:
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


def _wrap(label: str, width: int = 14) -> str:
    """A long edge label on two lines, split at the space nearest its middle."""
    if len(label) <= width or " " not in label:
        return label
    middle = len(label) // 2
    cut = min((i for i, ch in enumerate(label) if ch == " "), key=lambda i: abs(i - middle))
    return f"{label[:cut]}<br>{label[cut + 1 :]}"


_LABEL_SIDE = {"next-ok": "bottom right", "adapt-soft": "middle left", "adapt-hard": "top right"}
_WRAPPED = frozenset({"next-ok"})


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
    all_x, all_y = _segments([e.id for e in EDGES])
    label_xy = [_label_at(e.id) for e in EDGES]
    flow = {"xaxis": "x", "yaxis": "y", "hoverinfo": "skip", "showlegend": False}
    data: list[Any] = [
        go.Scatter(x=all_x, y=all_y, mode="lines", line={"color": _EDGE, "width": 2}, name="edges", **flow),
        go.Scatter(x=[], y=[], mode="lines", line={"color": _EDGE, "width": 6}, name="lit path", **flow),
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
                hoverinfo="text",
                hovertext=[],
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
            mode="gauge+number",
            value=0,
            domain={"x": [0.72, 0.97], "y": [0.50, 0.90]},
            number={"suffix": f" / {Gauge().max_attempts}", "font": {"size": 26}},
            title={"text": "recovery: no tool call yet", "font": {"size": 13}},
            gauge={
                "axis": {
                    "range": [0, 6],
                    "tickvals": [0, 1, 2, 3, 4, 5, 6],
                    "ticktext": ["0", "1", "2", "3", "4", "5", "wall"],
                },
                "bar": {"color": _IDLE_BORDER},
                "steps": [
                    {"range": [0, 5], "color": "#f1f3f4"},
                    {"range": [5, 6], "color": "#f3b6bd"},
                ],
                "threshold": {"line": {"color": CHANNEL_COLOR["hard"], "width": 4}, "value": 5},
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
            "bordercolor": _IDLE_BORDER,
            "borderwidth": 1,
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
                "arrowsize": 1.2,
                "arrowwidth": 2,
                "arrowcolor": _EDGE,
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


def _marker_size(n: int) -> int:
    return 10 if n <= 60 else 7 if n <= 250 else 4


def _timeline_hover(t: TurnView) -> str:
    what = t.producer or ("final reply" if not t.calls else "tool calls ok")
    tools = ", ".join(c.name for c in t.calls)
    text = f"turn {t.turn}: {t.channel} ({what})"
    return plain(text + (f"\n{tools}" if tools else ""), 160)


def _gauge_patch(g: Gauge) -> dict[str, Any]:
    if g.tool is None:
        title, color = "recovery: no tool call yet", _IDLE_BORDER
    else:
        status = {
            "idle": "",
            "ok": "succeeded",
            "failed": "failed",
            "retrying": "recovery retries",
            "gave_up": f"recovery gave up ({g.decision})",
            "exhausted": "hit the wall: ToolRecoveryExhausted",
        }[g.status]
        where = "the wall" if g.at_wall else f"attempt {g.attempt}"
        title = f"recovery: {plain(g.tool, 40)} · {where} · turn {g.turn}<br><sub>{plain(status)}</sub>"
        color = (
            CHANNEL_COLOR["hard"]
            if g.status == "exhausted"
            else CHANNEL_COLOR["ok"]
            if g.status == "ok"
            else CHANNEL_COLOR["soft"]
        )
    return {"value": g.attempt, "title_text": title, "gauge_bar_color": color}


def figure_patch(state: ViewState, selected: int | None = None) -> Patch:
    """Every changing property of the figure for ``state``; ``selected`` rings that turn."""
    patch: Patch = {}
    lit_color = CHANNEL_COLOR.get(state.lit_channel or "", _EDGE)
    lit_fill = CHANNEL_FILL.get(state.lit_channel or "", _IDLE_FILL)
    xs, ys = _segments(list(state.lit))
    patch[f"data.{T_LIT}"] = {"x": xs, "y": ys, "line_color": lit_color}
    texts, hovers = [], []
    for edge, count in zip(EDGES, state.edge_counts, strict=True):
        label = _wrap(edge.label) if edge.id in _WRAPPED else edge.label
        texts.append(f"{label} · {count}" if label else str(count))
        hovers.append(f"{plain(edge.label or edge.id)}: {count} turn{'s' if count != 1 else ''}")
    patch[f"data.{T_COUNTS}"] = {"text": texts, "hovertext": hovers}
    lit_nodes = set(nodes_on(state.lit))
    for i, node in enumerate(NODES):
        on = node.id in lit_nodes
        patch[f"layout.annotations.{i}"] = {
            "bgcolor": lit_fill if on else _IDLE_FILL,
            "bordercolor": lit_color if on else _IDLE_BORDER,
            "borderwidth": 3 if on else 1,
        }
    lit_edges = set(state.lit)
    for i, edge in enumerate(EDGES):
        on = edge.id in lit_edges
        patch[f"layout.annotations.{A_ARROWS + i}"] = {
            "arrowcolor": lit_color if on else _EDGE,
            "arrowwidth": 3 if on else 2,
        }
    size = _marker_size(len(state.turns))
    by_channel: dict[str, tuple[list[int], list[str]]] = {c: ([], []) for c in TIMELINE}
    for t in state.turns:
        xs_c, hover_c = by_channel[t.channel]
        xs_c.append(t.turn)
        hover_c.append(_timeline_hover(t))
    for channel, index in TIMELINE.items():
        turns, hover = by_channel[channel]
        patch[f"data.{index}"] = {"x": turns, "y": [0] * len(turns), "hovertext": hover, "marker_size": size}
    shown = selected is not None and state.turn(selected) is not None
    patch[f"data.{T_SELECTED}"] = {"x": [selected] if shown else [], "y": [0] if shown else []}
    patch[f"data.{T_GAUGE}"] = _gauge_patch(state.gauge)
    last = max((t.turn for t in state.turns), default=0)
    patch["layout"] = {"xaxis2_range": [0.5, max(last, 10) + 0.5]}
    return patch


def _target(fig: go.Figure, key: str) -> Any:
    parts = key.split(".")
    if parts[0] == "data":
        return fig.data[int(parts[1])]
    if len(parts) == 1:
        return fig.layout
    return fig.layout.annotations[int(parts[2])]


def apply_patch(fig: go.Figure, patch: Patch, last: Mapping[str, Mapping[str, Any]] | None = None) -> int:
    """Set the properties of ``patch`` that differ from ``last``; returns how many were set.

    Call it inside ``fig.batch_update()`` for a widget so that all changes go out as one message.
    """
    changed_count = 0
    for key, props in patch.items():
        old = last.get(key) if last is not None else None
        changed = props if old is None else {k: v for k, v in props.items() if old.get(k) != v}
        if changed:
            _target(fig, key).update(changed)
            changed_count += len(changed)
    return changed_count


def figure(state: ViewState, selected: int | None = None) -> go.Figure:
    """A static figure of ``state`` (for reports and exports)."""
    fig = base_figure()
    apply_patch(fig, figure_patch(state, selected))
    return fig
