"""What the live view's SVG panes show, read back from their HTML values."""

from __future__ import annotations

import html
import re

from loopnb.notebook import LiveView

_MARK = re.compile(r'<g class="loopnb-mark[^"]*" data-turn="(-?\d+)" data-channel="(\w+)"[^>]*>')
_LATER = re.compile(r'<g class="loopnb-mark loopnb-later" data-turn="(-?\d+)"')


def marks(view: LiveView) -> dict[str, tuple[int, ...]]:
    """The timeline's marks by channel, in order."""
    out: dict[str, list[int]] = {"ok": [], "soft": [], "hard": []}
    for turn, channel in _MARK.findall(view.timeline.value):
        out[channel].append(int(turn))
    return {c: tuple(t) for c, t in out.items()}


def greyed(view: LiveView) -> tuple[int, ...]:
    """The turns the timeline greys (those after the selected one)."""
    return tuple(int(t) for t in _LATER.findall(view.timeline.value))


def ringed(view: LiveView) -> tuple[int, ...]:
    """The turns the timeline rings as selected."""
    return tuple(
        int(t) for t in re.findall(r'class="loopnb-selected" data-turn="(-?\d+)"', view.timeline.value)
    )


def gauge(view: LiveView) -> tuple[int, bool, str]:
    """The gauge's attempt, whether it is greyed, and its words (unescaped)."""
    value = view.gauge.value
    found = re.search(r'data-attempt="(\d+)" data-status="\w+"( data-greyed)?', value)
    assert found, value
    words = html.unescape(re.sub(r"<[^>]+>", "\n", value))
    words = re.sub(r"(?<=\S)\n\n(?=\S)", " ", words)  # a line the gauge wrapped reads as one
    return int(found[1]), bool(found[2]), words


def lit_colour(view: LiveView) -> str | None:
    """The colour of the flow's thick path (None: nothing lit)."""
    found = re.search(r'<line [^>]*stroke="(#[0-9A-Fa-f]+)" stroke-width="4"', view.flow.value)
    return found[1] if found else None
