"""Events (or rows) to DataFrames, column by column, with the dtypes the schema declares.

``turn_table`` and ``event_table`` build the frames of an event stream straight from the column
lists (``schema.TURNS`` read from each ``Turn``, ``rows.EVENT_LAYOUTS`` per event class): no dict
per row, one list per column, one typed array per list, each time column converted at once. ``turn_frame`` and
``event_frame`` build the same frames from row dicts. Building is linear in the number of
events, with no row-by-row concatenation. ``conform`` brings a frame read from elsewhere
(Parquet) to exactly the same dtypes, so frames from every source compare equal.
"""

from __future__ import annotations

import gc
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from operator import attrgetter
from typing import Any

import numpy as np
import pandas as pd

from loopnb.engine import Turn, turns_of
from loopnb.engine._events import Event, RunFinished
from loopnb.record._lines import escaped_text
from loopnb.record._rows import COMMON_EVENT_COLUMNS, discarded_runs, layout_of, when
from loopnb.record._schema import ADDED_LATER, EVENTS, TURNS, Table


@cache
def pandas_dtypes(table: Table) -> dict[str, Any]:
    """The pandas dtype objects of ``table``'s columns."""
    out: dict[str, Any] = {}
    for name, spec in table.dtypes().items():
        if isinstance(spec, tuple):
            # categories of the nullable ``string`` dtype: a missing value shows as ``<NA>``,
            # as in every other column (pandas' default ``str`` categories show ``NaN``)
            out[name] = pd.CategoricalDtype(pd.Index(list(spec[1]), dtype="string"), ordered=False)
        else:
            out[name] = pd.api.types.pandas_dtype(spec)
    return out


@cache
def _codes(dtype: pd.CategoricalDtype) -> dict[Any, int]:
    return {value: i for i, value in enumerate(dtype.categories)} | {None: -1}


def _category_codes(values: Sequence[Any], dtype: pd.CategoricalDtype) -> np.ndarray:
    index = _codes(dtype)
    try:
        return np.array(list(map(index.__getitem__, values)), dtype=np.int16)
    except KeyError as exc:
        raise ValueError(f"{exc.args[0]!r} is not one of {list(dtype.categories)}") from exc


def typed_column(values: list[Any], dtype: Any) -> Any:
    """``values`` as one column of ``dtype``, built the fastest way pandas allows for that dtype."""
    if isinstance(dtype, pd.CategoricalDtype):
        return pd.Categorical.from_codes(_category_codes(values, dtype), dtype=dtype)
    if isinstance(dtype, pd.DatetimeTZDtype):
        return pd.DatetimeIndex(values, dtype=dtype) if values else pd.array([], dtype=dtype)
    if (
        isinstance(dtype, pd.StringDtype)
        and dtype.storage == "pyarrow"
        and dtype.na_value is pd.NA
        and set(map(type, values)) <= _TEXT
    ):
        import pyarrow as pa

        # What pd.array makes of str and None, without its own pass over every value first;
        # anything else is left to pd.array (it turns other scalars into text).
        try:
            return pd.arrays.ArrowStringArray(pa.array(values, type=pa.large_string()))
        except UnicodeEncodeError:  # a lone surrogate: shown as its escape (see ``lines``)
            return pd.arrays.ArrowStringArray(pa.array(_escaped(values), type=pa.large_string()))
    if isinstance(dtype, pd.StringDtype) and not _utf8(values):
        values = _escaped(values)  # pandas' python-backed text (pandas 2) shows it the same way
    return pd.array(values, dtype=dtype)


def _utf8(values: list[Any]) -> bool:
    """Whether every text among ``values`` can be written as UTF-8 (no lone surrogate)."""
    try:
        "".join([v for v in values if type(v) is str]).encode()
    except UnicodeEncodeError:
        return False
    return True


def _escaped(values: list[Any]) -> list[Any]:
    return [escaped_text(v) if type(v) is str else v for v in values]


_TEXT = {str, type(None)}


_MASKED = (pd.Int64Dtype, pd.Float64Dtype, pd.BooleanDtype)


def _scattered(n: int, parts: list[tuple[np.ndarray, list[Any]]], dtype: Any) -> Any:
    """A column of ``n`` values, ``None`` but at the positions of ``parts`` (index, values)."""
    if isinstance(dtype, _MASKED):
        # Convert only the values given; every other position is missing.
        numpy_dtype: np.dtype[Any] = dtype.numpy_dtype  # type: ignore[union-attr]  # pandas-stubs lack it
        data = np.zeros(n, dtype=numpy_dtype)
        mask = np.ones(n, dtype=bool)
        for index, values in parts:
            part = pd.array(list(values), dtype=dtype)
            data[index] = part.to_numpy(dtype=numpy_dtype, na_value=numpy_dtype.type(0))
            mask[index] = part.isna()
        return dtype.construct_array_type()(data, mask)
    if isinstance(dtype, pd.CategoricalDtype):
        codes = np.full(n, -1, dtype=np.int16)
        for index, values in parts:
            codes[index] = _category_codes(values, dtype)
        return pd.Categorical.from_codes(codes, dtype=dtype)
    full = np.full(n, None, dtype=object)
    for index, values in parts:
        chunk = np.empty(len(values), dtype=object)
        chunk[:] = values
        full[index] = chunk
    return typed_column(full.tolist(), dtype)


_FIRST_SECOND = -62_135_596_800.0  # 0001-01-01T00:00:00Z, the first time a datetime holds
_PAST_LAST_SECOND = 253_402_300_800.0  # 10000-01-01T00:00:00Z


def time_column(seconds: Sequence[float]) -> Any:
    """Epoch seconds as a ``datetime64[us, UTC]`` array: to the microsecond what ``when`` gives
    for each value (the fraction rounded half to even, as ``datetime.fromtimestamp`` does)."""
    dtype = pd.DatetimeTZDtype("us", "UTC")
    s = np.asarray(seconds, dtype=np.float64)
    if not ((s >= _FIRST_SECOND) & (s < _PAST_LAST_SECOND)).all():
        # NaN, infinite or beyond the years 1 to 9999: ``when`` raises the error it raises for
        # such a value (numpy would wrap it around into a wrong date without a word)
        return pd.array([when(x) for x in s.tolist()], dtype=dtype)
    whole = np.trunc(s)
    micros = np.round((s - whole) * 1e6)  # s - trunc(s) is exact, as C's modf
    carry = (micros >= 1e6).astype(np.int64) - (micros < 0)
    us = (whole.astype(np.int64) + carry) * 1_000_000 + (micros - carry * 1e6).astype(np.int64)
    return pd.array(us.view("datetime64[us]"), dtype="datetime64[us]").tz_localize("UTC")


@contextmanager
def _building(name: str) -> Iterator[None]:
    """A value column ``name`` cannot hold raises a ``ValueError`` that names the column."""
    try:
        yield
    except (ValueError, TypeError, OverflowError) as exc:
        raise ValueError(f"column {name!r}: {exc}") from exc


def turns_frame(turns: Sequence[Turn], discarded: Collection[str] = ()) -> pd.DataFrame:
    """The ``turns`` frame of finished turns, each column read as ``TURNS`` declares; turns of the
    ``discarded`` runs are marked dropped."""
    return turn_columns_frame([list(map(c.read, turns)) for c in TURNS.columns], discarded)  # type: ignore[arg-type]


def turn_columns_frame(columns: Sequence[list[Any]], discarded: Collection[str] = ()) -> pd.DataFrame:
    """The ``turns`` frame of its columns' values as read (in ``TURNS``' order, times in epoch
    seconds); turns of the ``discarded`` runs are marked dropped."""
    run_ids = columns[TURNS.names.index("run_id")]
    if not run_ids:
        return turn_frame([])
    types = pandas_dtypes(TURNS)
    data = {}
    for column, values in zip(TURNS.columns, columns, strict=True):
        name = column.name
        if name == "dropped" and discarded:
            values = [d or r in discarded for d, r in zip(values, run_ids, strict=True)]
        with _building(name):
            data[name] = time_column(values) if column.is_time else typed_column(values, types[name])
    return pd.DataFrame(data, index=pd.RangeIndex(len(run_ids)), copy=False)  # each column is new


def turn_table(events: Sequence[Event]) -> pd.DataFrame:
    """The ``turns`` frame of an event stream: ``turn_frame(turn_rows(events))``, faster."""
    discarded = discarded_runs(e for e in events if isinstance(e, RunFinished))
    with collector_paused():
        return turns_frame(turns_of(events), discarded)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a frame is built: turns and rows hold no cycles,
    and each full collection would walk the whole growing heap again (as ``jsonl`` does on load)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def event_table(events: Sequence[Event]) -> pd.DataFrame:
    """The ``events`` frame of an event stream: ``event_frame([event_row(e) ...])``, faster.

    The columns every event fills are read straight off the events; the others class by class
    (each column of a class's layout read over its events at once) and scattered into place,
    missing elsewhere.
    """
    n = len(events)
    if not n:
        return event_frame([])
    types = list(map(type, events))
    classes = list(dict.fromkeys(types))
    codes = np.array(list(map({cls: i for i, cls in enumerate(classes)}.__getitem__, types)), dtype=np.intp)
    order = np.argsort(codes, kind="stable")  # the positions of each class's events, in order
    ends = np.cumsum(np.bincount(codes, minlength=len(classes))).tolist()
    parts: dict[str, list[tuple[np.ndarray, list[Any]]]] = {}
    for cls, start, end in zip(classes, [0, *ends[:-1]], ends, strict=True):
        index = order[start:end]
        of_class = list(map(events.__getitem__, index.tolist()))
        for name, read in layout_of(cls):
            parts.setdefault(name, []).append((index, list(map(read, of_class))))
    common = {name: list(map(attrgetter(name), events)) for name in COMMON_EVENT_COLUMNS}
    return event_parts_frame(n, common, parts)


def event_parts_frame(
    n: int, common: dict[str, list[Any]], parts: dict[str, list[tuple[np.ndarray, list[Any]]]]
) -> pd.DataFrame:
    """The ``events`` frame of ``n`` events: the columns every event fills (``common``, in order),
    and each other column's ``parts`` (the rows of a class of events, their values), missing elsewhere."""
    data = {}
    for name, dtype in pandas_dtypes(EVENTS).items():
        with _building(name):
            if name in COMMON_EVENT_COLUMNS:
                column = common[name]
                data[name] = time_column(column) if name == "at" else typed_column(column, dtype)
            else:
                data[name] = _scattered(n, parts.get(name, []), dtype)
    return pd.DataFrame(data, index=pd.RangeIndex(n), copy=False)  # each column is new


def frame(rows: Sequence[dict[str, Any]], table: Table) -> pd.DataFrame:
    """A DataFrame of ``rows`` (dicts keyed by ``table``'s columns) with its dtypes.

    Raises ``ValueError`` naming the column (and the row, when one lacks it) that is wrong.
    """
    types = pandas_dtypes(table)
    data = {}
    for name, dtype in types.items():
        try:
            values = [r[name] for r in rows]
        except KeyError:
            index = next(i for i, r in enumerate(rows) if name not in r)
            raise ValueError(
                f"row {index} has no {name!r} column (a {table.title} row has all of: {', '.join(types)})"
            ) from None
        with _building(name):
            data[name] = typed_column(values, dtype)
    return pd.DataFrame(data, index=pd.RangeIndex(len(rows)))


def turn_frame(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """The ``turns`` frame of turn rows."""
    return frame(rows, TURNS)


def event_frame(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """The ``events`` frame of event rows."""
    return frame(rows, EVENTS)


def conform(df: pd.DataFrame, table: Table) -> pd.DataFrame:
    """``df`` with exactly ``table``'s columns, in order, and dtypes; a fresh RangeIndex.

    Raises ``ValueError`` naming the columns that are missing.
    """
    types = pandas_dtypes(table)
    for name in ADDED_LATER.intersection(types).difference(df.columns):
        df[name] = pd.Series(pd.NA, index=df.index, dtype=types[name])
    missing = [c for c in types if c not in df.columns]
    if missing:
        raise ValueError(f"missing columns: {', '.join(missing)}")
    data: dict[str, Any] = {}
    share = _copy_on_write()
    for name, dtype in types.items():
        col = df[name]
        if col.dtype != dtype:
            try:
                col = _converted(col, dtype)
            except (ValueError, TypeError, OverflowError) as exc:
                raise ValueError(f"column {name!r}: {exc}") from exc
        data[name] = col.reset_index(drop=True) if share else col.array
    # Under copy-on-write the columns are shared, not copied (a frame of a million turns is not
    # copied each time it is checked): pandas copies one the moment either frame writes to it.
    return pd.DataFrame(data, index=pd.RangeIndex(len(df)), copy=not share)


@cache
def _copy_on_write() -> bool:
    """Whether pandas copies on write: always from pandas 3, when asked for in pandas 2."""
    if int(pd.__version__.split(".")[0]) >= 3:
        return True
    return pd.options.mode.copy_on_write is True  # pragma: no cover - pandas 2 only


def _converted(col: pd.Series, dtype: Any) -> pd.Series:
    """``col`` as ``dtype``; a value outside a category's values raises (rather than going missing)."""
    if not isinstance(dtype, pd.CategoricalDtype):
        return col.astype(dtype)
    if not isinstance(col.dtype, pd.CategoricalDtype):
        col = col.astype("category")
    unknown = [v for v in col.cat.remove_unused_categories().cat.categories if v not in dtype.categories]
    if unknown:
        raise ValueError(f"{unknown[:5]!r} not among {list(dtype.categories)}")
    return col.cat.set_categories(dtype.categories)
