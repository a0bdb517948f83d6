"""The plotly side of the view: one figure with the decision flow, the recovery gauge and the timeline.

``base_figure()`` (from ``layout``) lays the figure out once; ``figure_patch(state, selected)``
says what every changing property should be for a ``ViewState``, as ``{target: {property:
value}}``. The live widget applies only the properties that changed since its last redraw; the
static report applies the whole patch to a fresh figure. One function decides what is drawn, for
both.

Every text that comes from a model or a tool is escaped (``plain``): plotly renders a subset of
HTML in text and hover labels.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

import numpy as np
import plotly.graph_objects as go

from loopnb.notebook._layout import (
    CHANNEL_COLOR,
    EDGE_COLOR,
    IDLE_BORDER,
    T_COUNTS,
    T_GAUGE,
    T_LIT,
    T_SELECTED,
    TIMELINE,
    TIMELINE_HOVER,
    base_figure,
    segments,
)
from loopnb.notebook._state import Gauge, TurnView, ViewState
from loopnb.record._flowchart import EDGES, NODES, nodes_on

HOVER_LIMIT = 500
"""Up to this many turns each timeline mark's hover label names its producer and tools; past it
the label says only the turn and channel (the inspector has the rest), so that a long run does
not resend thousands of labels at every redraw."""

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


def _wrap(label: str, width: int = 14) -> str:
    """A long edge label on two lines, split at the space nearest its middle."""
    if len(label) <= width or " " not in label:
        return label
    middle = len(label) // 2
    cut = min((i for i, ch in enumerate(label) if ch == " "), key=lambda i: abs(i - middle))
    return f"{label[:cut]}<br>{label[cut + 1 :]}"


_WRAPPED = frozenset({"next-ok"})


def _marker_size(n: int) -> int:
    return 10 if n <= 60 else 7 if n <= 250 else 4


def _timeline_hover(t: TurnView) -> str:
    """The hover label of a timeline mark after "turn N: " (escaped; shared by like turns)."""
    what = t.producer or ("final reply" if not t.tools else "tool calls ok")
    tools = ", ".join(t.tools)
    return plain(f"{t.channel} ({what})" + (f"\n{tools}" if tools else ""), 160)


GREYED = "#8a8f98"
"""The gauge's text and bar when there is nothing to count (no call, no recovery strategy)."""


def _gauge_patch(g: Gauge) -> dict[str, Any]:
    """The gauge of one turn: ``Gauge.lines`` as its title, the retries as its value (shown only
    when a recovery strategy is configured), greyed when there is nothing to count."""
    head, *rest = g.lines()
    title = f"<b>{plain(head)}</b><br>" + "<br>".join(plain(line) for line in rest)
    if g.greyed:
        color = IDLE_BORDER
    elif g.status == "exhausted":
        color = CHANNEL_COLOR["hard"]
    elif g.status == "ok":
        color = CHANNEL_COLOR["ok"]
    else:
        color = CHANNEL_COLOR["soft"]
    return {
        "value": g.attempt if g.strategy is not None else 0,
        "mode": "gauge" if g.greyed else "gauge+number",
        "title.text": title,
        "title.font.color": GREYED if g.greyed else "#222",
        "gauge.bar.color": color,
    }


def gauge_of_view(state: ViewState, selected: int | None) -> Gauge:
    """The gauge to draw: the selected turn's; while a run goes on with the newest turn selected,
    the turn in progress once it has dispatched a call (its title names it)."""
    live = state.gauge
    turn = state.turn(selected) if selected else None
    if turn is None:
        return live
    newest = state.turns[-1].turn if state.turns else 0
    if state.run.phase == "running" and selected == newest and live.turn > newest:
        return live
    return turn.gauge


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
    lit_color = CHANNEL_COLOR.get(state.lit_channel or "", EDGE_COLOR)
    xs, ys = segments(list(state.lit))
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
        patch[f"layout.annotations.{i}"] = {"bordercolor": lit_color if on else IDLE_BORDER}
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
            "hovertemplate": TIMELINE_HOVER if labelled else f"turn %{{x}}: {channel}<extra></extra>",
            "marker.size": size,
            # the turns after the selected one stay, greyed (``ViewState.later``)
            "marker.opacity": [0.25 if state.later(x) else 1.0 for x in turns]
            if state.selected is not None and state.selected < state.newest
            else 1.0,
        }
    shown = selected is not None and state.turn(selected) is not None
    patch[f"data.{T_SELECTED}"] = {"x": [selected] if shown else [], "y": [0] if shown else []}
    patch[f"data.{T_GAUGE}"] = _gauge_patch(gauge_of_view(state, selected))
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
