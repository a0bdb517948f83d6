"""Each side of a ``Comparison`` as its panes draw it: the whole run's timeline, one turn at a time.

A ``SideView`` costs the same however long the run: its timeline (``marks``) is the run binned as
``timeline_svg`` bins it, read from the side's turns frame a column at a time, and a turn for the
inspector is put together when it is first asked for, by folding that turn's events alone (found
through the events frame's ``turn`` column, ``EventIndex``) as the live view folds a run's (``ViewModel``), or
read from the turns frame for a side that has no events. Nothing is folded for turns nobody
looks at, so a comparison of two million-turn runs draws as fast as one of two short ones.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from loopnb.notebook._kept import Held
from loopnb.notebook._state import TurnView
from loopnb.notebook._timeline import Bin, Marks, per_mark

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from loopnb.analysis._compare import Comparison, Side
    from loopnb.engine._events import Event

Redact = Callable[[str], str]
SAME: Redact = str
"""No redaction (the widget's panes escape and redact as ``Html``; a page redacts the events)."""
_KEPT = 64
"""Turns a view keeps folded (a widget's slider visits any number)."""
_RANK = {"ok": 0, "soft": 1, "hard": 2}


class SideView:
    """One side's turns as the timeline and the inspector draw them.

    ``marks``: the whole run binned for the timeline; ``turn(number)``: one turn's view, folded
    from its events when the side has them (``full``: the inspector then shows exactly what the
    model read, redacted by ``redact`` first for a page), else read from the turns frame.
    """

    def __init__(self, side: Side, redact: Redact = SAME) -> None:
        self.label = side.label
        self.run_id = side.run_id
        self.full = side.event_objects is not None
        self.marks = frame_marks(side.turns, side.run_id)
        self._side = side
        self._redact = redact
        self._turns: dict[int, TurnView | None] = {}
        self._index: EventIndex | None = None

    def turn(self, number: int | None) -> TurnView | None:
        """The view of turn ``number``, ``None`` when the run has no such finished turn."""
        if number is None:
            return None
        if number not in self._turns:
            if len(self._turns) >= _KEPT:
                self._turns.clear()
            self._turns[number] = self._view_of(number)
        return self._turns[number]

    def _view_of(self, number: int) -> TurnView | None:
        side = self._side
        if side.event_objects is None:
            rows = side.turns[side.turns["turn"].eq(number).fillna(False).to_numpy()]
            views = frame_turn_views(rows, side.run_id)
            return views[0] if views else None
        from loopnb.notebook._viewmodel import ViewModel

        if self._index is None:
            self._index = EventIndex(side)
        events = self._index.turn_events(number)
        if self._redact is not SAME:
            from loopnb.notebook._report import exported_events

            events = exported_events(events)
        return ViewModel.fold(events).turn(number)


def side_views(c: Comparison, redact: Redact = SAME) -> tuple[SideView, SideView]:
    """Both sides' views (their events redacted by ``redact`` first, for a page)."""
    return SideView(c.sides[0], redact), SideView(c.sides[1], redact)


class EventIndex:
    """Where each turn's events are among a side's event objects: the events frame's ``turn``,
    ``kind`` and ``seq`` columns, read once, when its rows are the event objects one for one."""

    def __init__(self, side: Side) -> None:
        import numpy as np

        self.objects = side.event_objects or []
        frame = side.events
        self.turn: np.ndarray | None = None
        self.seq: np.ndarray | None = None
        self.started: np.ndarray | None = None
        if frame is not None and len(frame) == len(self.objects):
            self.turn = frame["turn"].to_numpy(dtype=np.float64, na_value=np.nan)
            self.seq = frame["seq"].to_numpy(dtype=np.float64, na_value=np.nan)
            self.started = frame["kind"].eq("run_started").fillna(False).to_numpy()

    def turn_events(self, number: int) -> list[Event]:
        """The events of turn ``number``, in order, after the run's ``RunStarted`` (what folding
        the turn needs): found by the frame's columns (checked on the rows found: each event's
        ``seq`` and turn), else by reading every event."""
        import numpy as np

        if self.turn is not None and self.seq is not None and self.started is not None:
            at = np.flatnonzero((self.turn == number) | self.started)
            found = [self.objects[i] for i in at.tolist()]
            seqs = self.seq[at].tolist()
            if all(e.seq == s and _of_turn(e, number) for e, s in zip(found, seqs, strict=True)):
                return found
        return [e for e in self.objects if _of_turn(e, number)]


def _of_turn(e: Event, number: int) -> bool:
    return e.kind == "run_started" or getattr(e, "turn", None) == number


def frame_marks(turns: pd.DataFrame, run_id: str) -> Marks:
    """``marks_of`` of a run's turns, read from its turns frame a column at a time: each bin's
    counts, slowest latency and worst turn (the first of its worst channel) by numpy, and a
    ``TurnView`` made only for the turns the marks stand for."""
    import numpy as np

    n = len(turns)
    if not n:
        return Marks((), 1, 0, 0)
    per = per_mark(n)
    starts = np.arange(0, n, per)
    channel = turns["channel"].astype(object).to_numpy()
    rank = np.zeros(n, dtype=np.int64)
    for name, value in _RANK.items():
        rank[channel == name] = value
    worst_rank = np.maximum.reduceat(rank, starts)
    index = np.arange(n)
    worst = np.minimum.reduceat(np.where(rank == np.repeat(worst_rank, per)[:n], index, n), starts)
    ms = np.round(turns["latency_ms"].to_numpy(dtype=np.float64, na_value=np.nan), 3)
    slowest = np.maximum.reduceat(np.where(ms > 0, ms, 0.0), starts)
    counts = {name: np.add.reduceat((channel == name).astype(np.int64), starts) for name in _RANK}
    number = turns["turn"].to_numpy(dtype=np.int64)
    views = frame_turn_views(turns.iloc[worst], run_id)
    bins = tuple(
        Bin(
            int(start),
            min(per, n - int(start)),
            int(number[start]),
            int(number[min(start + per, n) - 1]),
            views[k],
            float(slowest[k]),
            {name: int(counts[name][k]) for name in _RANK},
        )
        for k, start in enumerate(starts.tolist())
    )
    return Marks(bins, per, n, int(number[0]))


def frame_turn_views(t: pd.DataFrame, run_id: str) -> tuple[TurnView, ...]:
    """The view of each turn of turns frame ``t`` (of run ``run_id``): its number, channel,
    producer, tools and latency, as the frame holds them (no reply, no results)."""
    from loopnb.engine import Turn
    from loopnb.engine._events import TurnFinished

    out = []
    columns = ("turn", "seq", "channel", "producer", "tools", "model", "dropped", "latency_ms")
    values = zip(*(t[c].astype(object).tolist() for c in columns), strict=True)
    for turn, seq, channel, producer, tools, model, dropped, ms in values:
        known = isinstance(ms, float) and ms == ms
        said: dict[str, Any] = {"channel": str(channel), "producer": _text(producer)}  # the engine's literals
        at = ms / 1000.0 if known else 0.0
        finished = TurnFinished(
            seq=int(seq), run_id=run_id, at=at, turn=int(turn), dropped=bool(dropped), **said
        )
        event = Turn(run_id=run_id, turn=int(turn), started_at=0.0 if known else None, finished=finished)
        names = tuple(tools.split(", ")) if isinstance(tools, str) and tools else ()
        shown = (event.channel, event.producer, _text(model), names, bool(dropped), None)
        out.append(TurnView(int(turn), *shown, event.latency_ms, None, Held(event)))
    return tuple(out)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None
