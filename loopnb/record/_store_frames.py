"""A recorder's frames, built from its store (``loopnb.record._store``) and its walk (``_walk``).

The turns frame is the walk's rows, a column at a time. The events frame reads each column of a
class of events over all of them at once: a field's values are taken from their places in the
store (one C-level pass), a reply's or a result's through the object or the digest that holds it,
a constant repeated; only a column made of several fields (``ContextCompacted``'s summary,
``RunFinished``'s text) puts its few events back together. The frames equal ``turn_table`` and
``event_table`` of the events observed, column for column.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from itertools import islice
from typing import Any

import numpy as np
import pandas as pd

from loopnb.record._frames import event_parts_frame, event_table, turn_columns_frame
from loopnb.record._rows import EVENT_READS, Fixed, Mapped
from loopnb.record._store import (
    BY_KIND,
    COMMON,
    KEPT,
    LAYOUTS,
    NESTED_VALUES,
    WIDTH,
    Layout,
    event_at,
    nested,
)
from loopnb.record._walk import WIDTH_OF_ROW

_KIND = {cls: kind for kind, cls in BY_KIND.items()}


def rows_frame(rows: list[Any], discarded: Collection[Any]) -> pd.DataFrame:
    """The turns frame of a walk's rows (``WIDTH_OF_ROW`` values a turn, one after the other)."""
    return turn_columns_frame([rows[j::WIDTH_OF_ROW] for j in range(WIDTH_OF_ROW)], discarded)


def _taken(store: np.ndarray, places: np.ndarray) -> list[Any]:
    """The values at ``places`` of the store (as an array: one gather in C)."""
    values: list[Any] = store[places].tolist()
    return values


def store_events_frame(whole: list[Any], starts: Sequence[int]) -> pd.DataFrame:
    """The events frame of the events beginning at ``starts`` in the store, in order."""
    n = len(starts)
    if not n:
        return event_table([])
    begins = np.frombuffer(starts, dtype=np.int64)  # type: ignore[call-overload]
    end = int(begins[-1]) + WIDTH[whole[int(begins[-1])]]
    store = np.fromiter(islice(whole, end), dtype=object, count=end)
    classes = _taken(store, begins)
    if KEPT in classes:  # an event kept as itself: read every event as an event
        return event_table([event_at(whole, i) for i in begins.tolist()])
    common = {name: _taken(store, begins + 1 + COMMON.index(name)) for name in COMMON}
    common["kind"] = list(map(_KIND.__getitem__, classes))
    known = list(dict.fromkeys(classes))
    codes = np.array(list(map({cls: i for i, cls in enumerate(known)}.__getitem__, classes)), dtype=np.intp)
    parts: dict[str, list[tuple[np.ndarray, list[Any]]]] = {}
    for code, cls in enumerate(known):
        index = np.flatnonzero(codes == code)
        column = _Columns(store, LAYOUTS[cls], begins[index])
        for name, read in EVENT_READS[cls]:
            parts.setdefault(name, []).append((index, column(read)))
    return event_parts_frame(n, common, parts)


class _Columns:
    """The columns of one class of events, read from the store (as an array)."""

    def __init__(self, store: np.ndarray, layout: Layout, begins: np.ndarray) -> None:
        self.store, self.layout, self.begins = store, layout, begins

    def field(self, path: str) -> list[Any]:
        """The values at an attribute path: a field, or a field of the reply or the result."""
        parts = nested(path)
        if parts is None:
            return _taken(self.store, self.begins + self.layout.at(path))
        head, name = parts
        return NESTED_VALUES[head](_taken(self.store, self.begins + self.layout.at(head)), name)

    def __call__(self, read: str | Fixed | Mapped | Callable[[Any], Any]) -> list[Any]:
        if isinstance(read, str):
            return self.field(read)
        if isinstance(read, Fixed):
            return [read.value] * len(self.begins)
        if isinstance(read, Mapped):
            return list(map(read.convert, self.field(read.path)))
        layout, width = self.layout, self.layout.width
        return [read(layout.build(self.store[i + 1 : i + width].tolist())) for i in self.begins.tolist()]
