"""What the live view keeps of a run's turns: plain values, out of the garbage collector's way.

A ``TurnView`` keeps only strings, numbers and flat tuples of them (its turn's calls as
``calls_kept`` makes them), which CPython's cyclic garbage collector does not walk. The
inspector's detail is the turn's ``Turn``, which ``TurnStore.turn_at`` puts back together when
asked, from the run's events kept as the recorder keeps them (``loopnb.record``'s store: each
event's field values in one flat list, and the replies and results the run holds anyway). Held
whole, the turns and their events of a long run were most of what a full collection walked, and
so most of what watching a run cost (issue #30).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from itertools import chain
from operator import attrgetter
from typing import Any, Protocol

from loopnb.analysis._retries import CallRecovery
from loopnb.engine import Turn
from loopnb.engine._events import Event
from loopnb.engine._turns import turns_of
from loopnb.record._store import PACK, WIDTH, events_at, keep


class TurnSource(Protocol):
    """Where a ``TurnView`` reads its turn back from: a ``TurnStore``, or the ``Turn`` itself."""

    def turn_at(self, begin: int, end: int) -> Turn:
        """The turn whose events are kept from place ``begin`` up to ``end``."""
        ...


@dataclass(frozen=True, slots=True)
class Held:
    """The ``TurnSource`` of a view made of one ``Turn`` outside any store (``turn_view(t)``)."""

    turn: Turn

    def turn_at(self, begin: int, end: int) -> Turn:
        return self.turn


class TurnStore:
    """One run's events, from its ``RunStarted`` on, and any of its turns put back together.

    ``add`` is the recorder's hot path (one C-level read of the event's fields and one
    ``extend``); ``turn_at`` reads the events of one turn back and groups them with
    ``TurnAssembler``, after the run's start (which names the run's breakers): the very ``Turn``
    the view was folded from. The last one asked for is kept, as the inspector asks for one turn
    several times a redraw. ``add`` is called by one thread at a time; ``turn_at`` reads only
    places already written and may run beside it.
    """

    __slots__ = ("_extend", "_last", "_store")

    def __init__(self) -> None:
        self._store: list[Any] = []
        self._extend = self._store.extend
        self._last: tuple[int, int, Turn] | None = None

    def __len__(self) -> int:
        return len(self._store)

    def add(self, event: Event) -> None:
        """Keep one event (after the run's ``RunStarted``, which comes first)."""
        try:
            self._extend(PACK[type(event)](event))
        except KeyError:
            keep(self._store, event)

    def turn_at(self, begin: int, end: int) -> Turn:
        last = self._last
        if last is not None and last[0] == begin and last[1] == end:
            return last[2]
        store, starts, i = self._store, [0], begin
        while i < end:
            starts.append(i)
            i += WIDTH[store[i]]
        turns = turns_of(events_at(store, starts))
        if not turns:
            raise ValueError(f"no turn ends between places {begin} and {end} of the view's events")
        self._last = (begin, end, turns[-1])
        return turns[-1]


_call_values = attrgetter(*(f.name for f in fields(CallRecovery)))
_CALL_WIDTH = len(fields(CallRecovery))


def calls_kept(calls: Sequence[CallRecovery]) -> tuple[Any, ...]:
    """``calls``' fields, one call after the other, as they stand now: one flat tuple (a nested
    one would stay in the collector's lists until a later collection); ``calls_of`` reads it."""
    if len(calls) == 1:  # most turns: one call, or none
        kept: tuple[Any, ...] = _call_values(calls[0])
        return kept
    return tuple(chain.from_iterable(map(_call_values, calls)))


def calls_of(kept: tuple[Any, ...]) -> tuple[CallRecovery, ...]:
    """The calls ``calls_kept`` kept."""
    width = _CALL_WIDTH
    return tuple(CallRecovery(*kept[k : k + width]) for k in range(0, len(kept), width))
