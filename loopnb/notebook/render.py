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

import numpy as np
import plotly.graph_objects as go

from loopnb.notebook.flow import EDGES, NODE_INDEX, NODES, nodes_on
from loopnb.notebook.viewmodel import Gauge, TurnView, ViewState

__all__ = [
    "CHANNEL_COLOR",
    "CHANNEL_FILL",
    "CONTROL_PICTURES",
    "FIGURE_HEIGHT",
    "HOVER_LIMIT",
    "Patch",
    "apply_patch",
    "base_figure",
    "figure",
    "figure_patch",
    "plain",
]

CHANNEL_COLOR = {"ok": "#2e9d4a", "soft": "#e69500", "hard": "#d7263d"}
CHANNEL_FILL = {"ok": "#dff3e4", "soft": "#fdf0d5", "hard": "#f9dcdf"}
_IDLE_BORDER, _IDLE_FILL, _EDGE = "#c9ccd1", "#ffffff", "#c9ccd1"
FIGURE_HEIGHT = 560

HOVER_LIMIT = 500
"""Up to this many turns each timeline mark's hover label names its producer and tools; past it
the label says only the turn and channel (the inspector has the rest), so that a long run does
not resend thousands of labels at every redraw."""
_LABELLED = "turn %{x}: %{customdata}<extra></extra>"

# trace indices
T_EDGES, T_LIT, T_COUNTS, T_OK, T_SOFT, T_HARD, T_SELECTED, T_GAUGE = range(8)
TIMELINE = {"ok": T_OK, "soft": T_SOFT, "hard": T_HARD}
# annotation indices: the nodes first, then one arrowhead per edge, then the pane titles
A_ARROWS = len(NODES)  # arrowheads: static, grey

Patch = dict[str, dict[str, Any]]
"""``{"data.3": {"x": [...]}, "layout.annotations.2": {"bgcolor": "#..."}}``; property paths dotted."""


CONTROL_PICTURES = {c: 0x2400 + c for c in range(32) if chr(c) not in "\t\n\r"} | {0x7F: 0x2421}
"""``str.translate`` table: control characters as their visible pictures (NUL as ␀), because
browsers drop a NUL from HTML and draw nothing for the others."""


def plain(text: object, limit: int | None = None) -> str:
    """``text`` made safe for plotly's HTML-like labels: escaped, newlines as ``<br>``, cut."""
    s = str(text)
    if limit is not None and len(s) > limit:
        s = s[: limit - 1] + "…"
    return html.escape(s.translate(CONTROL_PICTURES), quote=False).replace("\n", "<br>")


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
                customdata=[],
                hovertemplate=_LABELLED,
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
    """The hover label of a timeline mark after "turn N: " (escaped; shared by like turns)."""
    what = t.producer or ("final reply" if not t.tools else "tool calls ok")
    tools = ", ".join(t.tools)
    return plain(f"{t.channel} ({what})" + (f"\n{tools}" if tools else ""), 160)


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
    return {"value": g.attempt, "title.text": title, "gauge.bar.color": color}


class Timeline:
    """The timeline's marks by channel, extended turn by turn across redraws of one run.

    A live view redraws the same growing run many times: only the turns new since the last call
    are looked at, and hover labels are shared by turns alike.
    """

    def __init__(self) -> None:
        self._reset(None)

    def _reset(self, first: TurnView | None) -> None:
        self._first = first
        self._seen = 0
        self._marks: dict[str, tuple[list[int], list[str]]] = {c: ([], []) for c in TIMELINE}
        self._labels: dict[Any, str] = {}

    def update(self, turns: tuple[TurnView, ...]) -> dict[str, tuple[list[int], list[str]]]:
        first = turns[0] if turns else None
        if first is not self._first or len(turns) < self._seen:
            self._reset(first)
        marks, labels = self._marks, self._labels
        for t in turns[self._seen :]:
            xs, hovers = marks[t.channel]
            key = (t.channel, t.producer, t.tools)
            label = labels.get(key)
            if label is None:
                label = labels[key] = _timeline_hover(t)
            xs.append(t.turn)
            hovers.append(label)
        self._seen = len(turns)
        return marks


def figure_patch(state: ViewState, selected: int | None = None, timeline: Timeline | None = None) -> Patch:
    """Every changing property of the figure for ``state``; ``selected`` rings that turn.

    ``timeline`` carries the timeline's marks between calls for the same run (see ``Timeline``).
    """
    patch: Patch = {}
    lit_color = CHANNEL_COLOR.get(state.lit_channel or "", _EDGE)
    xs, ys = _segments(list(state.lit))
    patch[f"data.{T_LIT}"] = {"x": xs, "y": ys, "line.color": lit_color}
    texts, edge_hovers = [], []
    for edge, count in zip(EDGES, state.edge_counts, strict=True):
        label = _wrap(edge.label) if edge.id in _WRAPPED else edge.label
        texts.append(f"{label} · {count}" if label else str(count))
        edge_hovers.append(f"{plain(edge.label or edge.id)}: {count} turn{'s' if count != 1 else ''}")
    patch[f"data.{T_COUNTS}"] = {"text": texts, "hovertext": edge_hovers}
    lit_nodes = set(nodes_on(state.lit))
    for i, node in enumerate(NODES):  # only the frame's colour changes: one flat relayout
        on = node.id in lit_nodes
        patch[f"layout.annotations.{i}"] = {"bordercolor": lit_color if on else _IDLE_BORDER}
    timeline = timeline if timeline is not None else Timeline()
    by_channel = timeline.update(state.turns)
    size = _marker_size(len(state.turns))
    labelled = len(state.turns) <= HOVER_LIMIT
    for channel, index in TIMELINE.items():
        turns, hover = by_channel[channel]
        patch[f"data.{index}"] = {
            "x": list(turns),
            "y": [0] * len(turns),
            "customdata": list(hover) if labelled else [],
            "hovertemplate": _LABELLED if labelled else f"turn %{{x}}: {channel}<extra></extra>",
            "marker.size": size,
        }
    shown = selected is not None and state.turn(selected) is not None
    patch[f"data.{T_SELECTED}"] = {"x": [selected] if shown else [], "y": [0] if shown else []}
    patch[f"data.{T_GAUGE}"] = _gauge_patch(state.gauge)
    last = max((t.turn for t in state.turns), default=0)
    patch["layout"] = {"xaxis2.range": [0.5, max(last, 10) + 0.5]}
    return patch


def apply_patch(fig: go.Figure, patch: Patch, last: Mapping[str, Mapping[str, Any]] | None = None) -> int:
    """Set the properties of ``patch`` that differ from ``last``; returns how many were set.

    All layout changes go in one ``plotly_relayout`` and each changed trace in one
    ``plotly_restyle``: plotly validates flat property paths far faster than nested updates, and
    a widget sends one message per call.
    """
    relayout: dict[str, Any] = {}
    restyles: dict[int, dict[str, list[Any]]] = {}
    for key, props in patch.items():
        old = last.get(key) if last is not None else None
        changed = props if old is None else {k: v for k, v in props.items() if old.get(k) != v}
        if not changed:
            continue
        parts = key.split(".")
        if parts[0] == "data":
            restyles.setdefault(int(parts[1]), {}).update({k: [_array(k, v)] for k, v in changed.items()})
        elif len(parts) == 1:
            relayout.update(changed)
        else:
            relayout.update({f"annotations[{parts[2]}].{k}": v for k, v in changed.items()})
    if relayout:
        fig.plotly_relayout(relayout)
    for index, data in restyles.items():
        fig.plotly_restyle(data, trace_indexes=[index])
    return len(relayout) + sum(len(d) for d in restyles.values())


_ARRAYS = {"x": np.int32, "y": np.int8, "customdata": object}  # the widget's JS has no int64


def _array(key: str, value: Any) -> Any:
    """Long timeline arrays as numpy: plotly validates those without a Python loop per point."""
    dtype = _ARRAYS.get(key)
    if dtype is None or not isinstance(value, list) or len(value) < 64 or None in value[:1]:
        return value
    try:
        return np.asarray(value, dtype=dtype)
    except OverflowError:  # turn numbers past int32, from a damaged or hand-made recording
        return value


def figure(state: ViewState, selected: int | None = None) -> go.Figure:
    """A static figure of ``state`` (for reports and exports)."""
    fig = base_figure()
    apply_patch(fig, figure_patch(state, selected))
    return fig
