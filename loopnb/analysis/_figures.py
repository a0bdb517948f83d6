"""Plotly counterparts of the audit tables (plotly is imported here, only when asked for).

Bar labels are recorded text (model names, breaker targets): plotly renders a subset of HTML in
tick and hover labels, so every label goes through ``_labels`` and shows as written. Channels take
the one palette (``loopnb._palette``) and a fill pattern each (``PATTERN``), and every bar is named
in the legend or on its axis: a figure never reads by colour alone.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from loopnb._palette import IDLE, PALETTE
from loopnb.engine import MAX_RECOVERY_ATTEMPTS

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from loopnb.analysis._audit import Audit

PATTERN = {"ok": "", "soft": "/", "hard": "x"}
"""Each channel's bar fill pattern (plotly's ``marker.pattern.shape``), beside its colour."""


def _marker(channel: str) -> dict[str, Any]:
    """A bar's colour and pattern for ``channel`` (``idle``: greyed, dotted)."""
    if channel == "idle":
        return {"color": IDLE, "pattern": {"shape": "."}}
    return {"color": PALETTE[channel], "pattern": {"shape": PATTERN[channel]}}


def _markers(channels: list[str]) -> dict[str, Any]:
    """One colour and pattern per bar, for a trace whose bars differ in channel."""
    return {
        "color": [PALETTE[c] for c in channels],
        "pattern": {"shape": [PATTERN[c] for c in channels]},
    }


def _go() -> Any:  # plotly ships no annotations
    import plotly.graph_objects as go

    return go


def _labels(values: Iterable[object]) -> list[str]:
    """Category labels as plotly should show them: escaped, so that no tag or link is drawn."""
    return [html.escape(str(v), quote=False) for v in values]


def _layout(fig: go.Figure, title: str, x: str, y: str) -> go.Figure:
    fig.update_layout(title=title, xaxis_title=x, yaxis_title=y, template="plotly_white", barmode="stack")
    return fig


def by_producer(a: Audit) -> go.Figure:
    """Turns per producer, soft and hard stacked."""
    go = _go()
    t = a.by_producer()
    fig = go.Figure()
    for channel in ("soft", "hard"):
        sel = t[t["channel"] == channel]
        fig.add_bar(
            name=channel,
            x=_labels(sel["producer"]),
            y=sel["turns"].tolist(),
            marker=_marker(channel),
        )
    return _layout(fig, "Soft and hard turns per producer", "producer", "turns")


def recovery(a: Audit) -> go.Figure:
    """How soft streaks ended, per producer."""
    go = _go()
    ep = a.recovery_episodes()
    fig = go.Figure()
    channels = {"recovered": "ok", "ended_hard": "hard", "unfinished": "idle"}
    producers = [p for p in ep["producer"].cat.categories if (ep["producer"] == p).any()]
    for outcome, channel in channels.items():
        sel = ep[ep["outcome"] == outcome]
        fig.add_bar(
            name=outcome,
            x=_labels(producers),
            y=[int((sel["producer"] == p).sum()) for p in producers],
            marker=_marker(channel),
        )
    return _layout(fig, "Did the model recover on its own?", "producer of the first error", "streaks")


def retries(a: Audit) -> go.Figure:
    """Calls by number of retries, with the ceiling marked."""
    go = _go()
    r = a.retries()
    counts = [int((r["retries"] == k).sum()) for k in range(MAX_RECOVERY_ATTEMPTS + 1)]
    fig = go.Figure()
    fig.add_bar(x=list(range(MAX_RECOVERY_ATTEMPTS + 1)), y=counts, name="calls", marker=_marker("soft"))
    fig.add_vline(
        x=MAX_RECOVERY_ATTEMPTS,
        line_dash="dash",
        line_color=PALETTE["hard"],
        annotation_text=f"ceiling ({MAX_RECOVERY_ATTEMPTS})",
    )
    return _layout(fig, "Retries per call against the ceiling", "retries", "calls")


def breakers(a: Audit) -> go.Figure:
    """Trips and refusals per breaker target."""
    go = _go()
    b = a.breakers()
    fig = go.Figure()
    x = _labels(b["target"])
    fig.add_bar(name="trips", x=x, y=b["trips"].tolist(), marker=_marker("hard"))
    fig.add_bar(name="refusals", x=x, y=b["refusals"].tolist(), marker=_marker("soft"))
    fig.update_layout(barmode="group")
    return _layout(fig, "Circuit breakers", "target", "count").update_layout(barmode="group")


def loops(a: Audit) -> go.Figure:
    """Safety detectors acting, per detector and action."""
    go = _go()
    t = a.loops()
    fig = go.Figure()
    fig.add_bar(
        x=_labels(f"{d} {act}" for d, act in zip(t["detector"], t["action"], strict=True)),
        y=t["fired"].tolist(),
        marker=_markers(["soft" if act in ("refuse", "warn") else "hard" for act in t["action"]]),
    )
    return _layout(fig, "Loops caught", "detector and action", "times fired")


def models(a: Audit) -> go.Figure:
    """Turns per model, by channel."""
    go = _go()
    m = a.models()
    fig = go.Figure()
    for channel in ("ok", "soft", "hard"):
        fig.add_bar(
            name=channel,
            x=_labels(m["model"]),
            y=m[channel].tolist(),
            marker=_marker(channel),
        )
    return _layout(fig, "Turns per model", "model", "turns")
