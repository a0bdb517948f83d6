"""Damage no writer makes: a run's events out of order, or repeated (a double append, a bad merge).

Within a run, ``seq`` only grows (0, 1, 2, ...); a file whose lines break that would load with
doubled turns, so it is refused, naming the first line that breaks it.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby, islice
from operator import attrgetter, lt
from pathlib import Path

from loopnb.engine._events import Event
from loopnb.record._errors import RecordingError


def check_order(events: Sequence[Event], path: Path, *, first_line: int | None = 2) -> None:
    """A ``RecordingError`` at the first event whose ``seq`` is not past the one before it in its
    run: lines duplicated (a double append, a bad merge) or out of order. ``events[0]`` is line
    ``first_line`` of the file (``None``: events are counted from 1 instead of lines).

    Each stretch of one run's events is checked at C speed; only a failing file is walked in Python.
    """
    seqs = list(map(attrgetter("seq"), events))
    last: dict[str, int] = {}
    start = 0
    for run_id, stretch in groupby(map(attrgetter("run_id"), events)):
        n = sum(1 for _ in stretch)
        mine = seqs[start : start + n]
        if last.get(run_id, -1) >= mine[0] or not all(map(lt, mine, islice(mine, 1, None))):
            _misordered(events, path, first_line)
        last[run_id] = mine[-1]
        start += n


def _misordered(events: Sequence[Event], path: Path, first_line: int | None) -> None:
    seen: dict[str, tuple[int, int]] = {}  # run id -> its last seq, and where
    for index, event in enumerate(events):
        before = seen.get(event.run_id)
        if before is not None and event.seq <= before[0]:
            if first_line is None:
                where, line, prior = f"event {index + 1}: ", None, f"event {before[1] + 1}"
            else:
                where, line, prior = "", index + first_line, f"line {before[1] + first_line}"
            raise RecordingError(
                f"{where}seq {event.seq} of run {event.run_id[:80]!r} comes after its seq {before[0]} "
                f"({prior}): lines duplicated (a double append, a bad merge) or out of order; within "
                "a run, seq only grows",
                path=path,
                line=line,
            )
        seen[event.run_id] = (event.seq, index)
