"""The turn timeline as inline SVG: each turn's mark at its place in the run, at its latency.

The x axis is the run, scaled to the pane (a 3-turn run fills it, ticked 1, 2, 3); the y axis
is each turn's latency in milliseconds (``Turn.latency_ms``). A run of more than
``TIMELINE_MARKS`` turns is drawn in bins of consecutive turns, each bin as its worst channel's
mark (hard over soft over ok) at its slowest turn's latency, and saying its counts when hovered.
A hovered mark's label is drawn in a band above the marks, never over a neighbouring one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from loopnb._palette import ACCENT
from loopnb.notebook._html import Html, esc
from loopnb.notebook._layout import mark
from loopnb.notebook._state import TurnView
from loopnb.notebook._svg import legend, svg

TIMELINE_MARKS = 160
"""The most marks the timeline draws: a longer run's turns are binned, so that a pane of a
20,000-turn run stays readable and a few kilobytes."""
_WORST = {"ok": 0, "soft": 1, "hard": 2}
_W, _X0, _X1 = 860, 62, 846
_TOP, _BOTTOM = 52, 132  # the plot's band (marks); the hover labels go above it
_Scale = Callable[[float], float]
_NONE = Html()


@dataclass(frozen=True, slots=True)
class Bin:
    """Consecutive turns drawn as one mark (a single turn when the run fits), summed up once."""

    first: int  # index of its first turn in the run
    size: int  # how many turns it holds
    first_turn: int  # the number of its first turn
    last_turn: int  # and of its last
    worst: TurnView  # the turn the mark stands for: the first of its worst channel
    latency: float  # its slowest turn's, in ms (0 when none is known)
    counts: dict[str, int]

    @classmethod
    def of(cls, first: int, turns: Sequence[TurnView], ranks: list[int], slowest: list[float]) -> Bin:
        """The bin of ``turns[first:]``, as many as ``ranks`` holds: their channels' ranks (hard
        over soft over ok) and latencies (0 when unknown), read once for the whole run."""
        top = max(ranks)
        counts = {channel: ranks.count(rank) for channel, rank in _WORST.items()}
        last = turns[first + len(ranks) - 1].turn
        return cls(
            first, len(ranks), turns[first].turn, last, turns[first + ranks.index(top)], max(slowest), counts
        )

    def tip(self) -> str:
        if self.size == 1:
            return _turn_tip(self.worst)
        said = ", ".join(f"{n:,} {c}" for c, n in self.counts.items())
        return f"turns {self.first_turn:,}–{self.last_turn:,}: {said} · slowest {self.latency:,.1f} ms"

    def holds(self, turn: int | None) -> bool:
        return turn is not None and self.first_turn <= turn <= self.last_turn


@dataclass(frozen=True, slots=True)
class Marks:
    """A run's timeline as drawn: its ``bins`` (``per`` turns each, the last maybe fewer), over
    ``n`` turns from turn ``first_turn``. ``marks_of`` bins a run's turns; a caller holding a long
    run's turns as frame columns bins them there and draws the same picture."""

    bins: tuple[Bin, ...]
    per: int
    n: int
    first_turn: int


def per_mark(n: int) -> int:
    """How many consecutive turns of an ``n``-turn run one mark holds."""
    return max(1, math.ceil(n / TIMELINE_MARKS))


def marks_of(turns: Sequence[TurnView]) -> Marks:
    """The marks to draw of ``turns``: each turn's channel and latency read once, each bin's
    counts and maxima taken over those lists (a redraw of a long run reads each turn once)."""
    per = per_mark(len(turns))
    ranks = [_WORST[t.channel] for t in turns]
    slowest = [ms if (ms := t.latency_ms) is not None and ms > 0.0 else 0.0 for t in turns]  # NaN too
    bins = tuple(
        Bin.of(i, turns, ranks[i : i + per], slowest[i : i + per]) for i in range(0, len(turns), per)
    )
    return Marks(bins, per, len(turns), turns[0].turn if turns else 0)


def _turn_tip(t: TurnView) -> str:
    what = t.producer or ("final reply" if not t.tools else "tool calls ok")
    tools = f" · {', '.join(t.tools)}" if t.tools else ""
    ms = f"{t.latency_ms:,.1f} ms" if t.latency_ms is not None else "latency unknown"
    injected = f" · injected {t.injected}" if t.injected is not None else ""
    return f"turn {t.turn}: {t.channel} ({what}){tools} · {ms}{injected}"


def nice(value: float) -> float:
    """The smallest 1, 2 or 5 times a power of ten at least ``value`` (1 for nothing)."""
    if value <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    return next(m * power for m in (1.0, 2.0, 5.0, 10.0) if m * power >= value * (1 - 1e-9))


def _tick_step(n: int) -> int:
    """A turn every this many gets a tick: at most about ten."""
    return int(nice(n / 10)) if n > 10 else 1


def _ms(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 or value == int(value) else f"{value:g}"


def timeline_svg(
    turns: Sequence[TurnView],
    anchor: str | None,
    *,
    selected: int | None = None,
    marked: int | None = None,
    simulated: bool = False,
) -> Html:
    """Every turn of the run as its channel's mark, at its latency; hover a mark for its turn.

    With an ``anchor`` a mark is a link to its row (``#{anchor}-t{turn}``, a bin's to its worst
    turn), as in the report; without, a mark is a group with its ``data-turn`` (a bin's worst
    turn), which the live view selects when it is clicked. ``selected`` rings that turn (or its
    bin) and greys the turns after it; ``marked`` draws a dashed rule at that turn (or its bin),
    where a comparison's two runs first diverge. A run on a simulated clock (``simulated``) says
    so, on its axis and in its caption: a ``FakeClock``'s 30-second wait is no latency.
    """
    return marks_svg(marks_of(turns), anchor, selected=selected, marked=marked, simulated=simulated)


def marks_svg(
    marks: Marks,
    anchor: str | None,
    *,
    selected: int | None = None,
    marked: int | None = None,
    simulated: bool = False,
) -> Html:
    """``timeline_svg`` of a run's ``marks`` (see there)."""
    n, bins, per = marks.n, marks.bins, marks.per
    said = f"{n:,} turn{'' if n == 1 else 's'}"
    if per > 1:
        said += f" in marks of {per:,}, each its worst turn"
    said += "; a mark links to its row" if anchor is not None else "; click a mark to inspect its turn"
    if simulated:
        said += " · simulated clock: times are simulated, not waited"
    if any(b.worst.injected is not None for b in bins):
        said += " · \u26a1 a fault loopnb.inject put there"
    parts = [
        Html('<text class="cap" x="12" y="20">turn timeline</text><text x="130" y="20">{}</text>{}').format(
            said, legend(_W - 180, 20)
        )
    ]
    if not bins:
        parts.append(Html('<text class="small" x="12" y="46">no turn finished</text>'))
        return svg(_W, 60, "loopnb-timeline", "turn timeline", Html().join(parts))
    slot = (_X1 - _X0) / n  # one turn's width

    def x_of(index: float) -> float:
        return _X0 + (index + 0.5) * slot

    top = max(b.latency for b in bins)
    ceiling = nice(top)
    size = max(4.0, min(11.0, slot * per * 0.8))
    low, high = _BOTTOM - size / 2 - 1, _TOP + size / 2 + 1

    def y_of(ms: float) -> float:
        return low - (low - high) * min(ms, ceiling) / ceiling

    parts.append(_axes(marks.first_turn, n, ceiling, x_of, y_of, simulated))
    for b in bins:
        parts.append(_mark(b, x_of(b.first + (b.size - 1) / 2), y_of(b.latency), size,
                           slot * b.size, anchor, selected))  # fmt: skip
    at = next((b for b in bins if b.holds(marked)), None)
    if at is not None:
        parts.append(_diverges(x_of(at.first + (at.size - 1) / 2)))
    return svg(_W, _BOTTOM + 40, "loopnb-timeline", "turn timeline", Html().join(parts))


def _diverges(x: float) -> Html:
    """The dashed rule at the turn where two compared runs first differ, with its word."""
    anchor, dx = ("end", -4) if x > _W - 120 else ("start", 4)
    return Html(
        '<g class="loopnb-diverge"><line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{bottom}" '
        'stroke="{accent}" stroke-width="1.5" stroke-dasharray="4 3"/>'
        '<text class="small" x="{tx:.1f}" y="{ty}" text-anchor="{anchor}">diverges here</text></g>'
    ).format(x=x, top=_TOP - 14, bottom=_BOTTOM, accent=ACCENT, tx=x + dx, ty=_TOP - 16, anchor=anchor)


_GRID = Html(
    '<line class="grid" x1="{x0}" y1="{y:.1f}" x2="{x1}" y2="{y:.1f}"/>'
    '<text class="small" x="{tx}" y="{ty:.1f}" text-anchor="end">{ms}</text>'
)
_TICK = Html(
    '<line class="axis" x1="{x:.1f}" y1="{y0}" x2="{x:.1f}" y2="{y1}"/>'
    '<text class="small" x="{x:.1f}" y="{ty}" text-anchor="middle">{turn:,}</text>'
)


def _axes(first: int, n: int, ceiling: float, x_of: _Scale, y_of: _Scale, simulated: bool = False) -> Html:
    out = []
    for ms in (0.0, ceiling / 2, ceiling):
        y = y_of(ms)
        out.append(_GRID.format(x0=_X0, y=y, x1=_X1, tx=_X0 - 5, ty=y + 3, ms=_ms(ms)))
    mid = (_TOP + _BOTTOM) / 2
    out.append(
        Html(
            '<text class="small" x="14" y="{mid:g}" text-anchor="middle" '
            'transform="rotate(-90 14 {mid:g})">{what}</text>'
            '<line class="axis" x1="{x0}" y1="{y}" x2="{x1}" y2="{y}"/>'
        ).format(mid=mid, x0=_X0, y=_BOTTOM, x1=_X1, what="simulated ms" if simulated else "latency (ms)")
    )
    step = _tick_step(n)
    for turn in range(step * math.ceil(first / step), first + n, step):
        x = x_of(turn - first)
        out.append(_TICK.format(x=x, y0=_BOTTOM, y1=_BOTTOM + 4, ty=_BOTTOM + 15, turn=turn))
    out.append(
        Html('<text class="small" x="{:g}" y="{}" text-anchor="middle">turn</text>').format(
            (_X0 + _X1) / 2, _BOTTOM + 32
        )
    )
    return Html().join(out)


_ANCHOR = {a: Html(a) for a in ("start", "middle", "end")}


def _tip_at(text: str, x: float) -> tuple[float, Html]:
    """Where the hover label goes, in the band above the marks, kept inside the pane: its x and
    its anchor."""
    room = 3.4 * len(text)  # about half its width at 11 px
    if x - room < 8:
        return max(x - 6, 8), _ANCHOR["start"]
    if x + room > _W - 8:
        return min(x + 6, _W - 8), _ANCHOR["end"]
    return x, _ANCHOR["middle"]


_RING = Html(
    '<rect class="loopnb-selected" data-turn="{}" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}"/>'
)
# a mark, then its label (shown by ``.loopnb-mark:hover + .tip``): the mark's box, the place a
# click lands, holds the mark alone. Fields by position, which ``str.format`` fills fastest (a
# redraw fills 160): 0 ring, 1 turn, 2 channel, 3 its turns, 4 hit box x, 5 its width, 6 the
# mark, 7 label x, 8 its anchor, 9 its text, 10 top, 11 height, 12 label y; then 13 the link's
# anchor (_LINKED), or 13 a later turn's class and 14 its opacity (_GROUP).
_BODY = '<rect class="hit" x="{4:.1f}" y="{10}" width="{5:.1f}" height="{11}"/>{6}'
_TIP = '<text class="tip halo" x="{7:.1f}" y="{12}" text-anchor="{8}">{9}</text>'
_LINKED = Html('{0}<a href="#{13}-t{1}" class="loopnb-mark" data-channel="{2}"{3}>' + _BODY + "</a>" + _TIP)
_GROUP = Html(
    '{0}<g class="loopnb-mark{13}" data-turn="{1}" data-channel="{2}"{3}{14}>' + _BODY + "</g>" + _TIP
)
_LATER, _GREY = Html(" loopnb-later"), Html(' opacity="0.3"')
_INJECTED = Html(
    '<text class="loopnb-injected" x="{:.1f}" y="{:.1f}" text-anchor="middle" '
    'style="font-size:15px">&#x26A1;</text>'
)
"""The flag over a turn a fault was injected into: a lightning sign, the tip says which fault."""
_CHANNEL = {c: Html.escape(c) for c in _WORST}


def _mark(
    b: Bin, x: float, y: float, size: float, width: float, anchor: str | None, selected: int | None
) -> Html:
    t = b.worst
    ring = _NONE
    if b.holds(selected):
        r = size / 2 + 3
        ring = _RING.format(selected, x - r, y - r, 2 * r, 2 * r)
    tip = b.tip()
    turns = Html(' data-turns="{}-{}"').format(b.first_turn, b.last_turn) if b.size > 1 else _NONE
    tx, tip_anchor = _tip_at(tip, x)
    drawn: tuple[object, ...] = (
        ring,
        t.turn,
        _CHANNEL.get(t.channel, t.channel),
        turns,
        x - width / 2,
        width,
    )
    drawn_mark = mark(t.channel, x, y, size)
    if t.injected is not None:  # a failure put there on purpose (loopnb.inject): flagged
        drawn_mark += _INJECTED.format(x, y - size / 2 - 4)
    drawn += (drawn_mark, tx, tip_anchor, esc(tip, 200), _TOP, _BOTTOM - _TOP, _TOP - 10)
    if anchor is not None:
        return _LINKED.format(*drawn, anchor)
    if selected is not None and b.first_turn > selected:  # after the selected turn: greyed
        return _GROUP.format(*drawn, _LATER, _GREY)
    return _GROUP.format(*drawn, _NONE, _NONE)
