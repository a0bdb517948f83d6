"""Rows to DataFrames, column by column, with the dtypes the schema declares.

Building is linear in the number of rows: one list per column, one typed array per list, no
row-by-row concatenation. ``conform`` brings a frame read from elsewhere (Parquet) to exactly the
same dtypes, so frames from every source compare equal.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel

from loopnb.record.schema import EventRow, TurnRow, dtypes

__all__ = ["conform", "event_frame", "frame", "pandas_dtypes", "turn_frame"]


@cache
def pandas_dtypes(row_model: type[BaseModel]) -> dict[str, Any]:
    """The pandas dtype objects of ``row_model``'s columns."""
    out: dict[str, Any] = {}
    for name, spec in dtypes(row_model).items():
        if isinstance(spec, tuple):
            out[name] = pd.CategoricalDtype(list(spec[1]), ordered=False)
        else:
            out[name] = pd.api.types.pandas_dtype(spec)
    return out


@cache
def _codes(dtype: pd.CategoricalDtype) -> dict[Any, int]:
    return {value: i for i, value in enumerate(dtype.categories)} | {None: -1}


def _column(values: list[Any], dtype: Any) -> Any:
    if isinstance(dtype, pd.CategoricalDtype):
        index = _codes(dtype)
        try:
            codes = np.fromiter((index[v] for v in values), dtype=np.int16, count=len(values))
        except KeyError as exc:
            raise ValueError(f"{exc.args[0]!r} is not one of {list(dtype.categories)}") from exc
        return pd.Categorical.from_codes(codes, dtype=dtype)
    if isinstance(dtype, pd.DatetimeTZDtype):
        return pd.DatetimeIndex(values, dtype=dtype) if values else pd.array([], dtype=dtype)
    return pd.array(values, dtype=dtype)


def frame(rows: Sequence[dict[str, Any]], row_model: type[BaseModel]) -> pd.DataFrame:
    """A DataFrame of ``rows`` (dicts keyed by ``row_model``'s columns) with its dtypes."""
    types = pandas_dtypes(row_model)
    data = {name: _column([r[name] for r in rows], dtype) for name, dtype in types.items()}
    return pd.DataFrame(data, index=pd.RangeIndex(len(rows)))


def turn_frame(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """The ``turns`` frame of turn rows."""
    return frame(rows, TurnRow)


def event_frame(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """The ``events`` frame of event rows."""
    return frame(rows, EventRow)


def conform(df: pd.DataFrame, row_model: type[BaseModel]) -> pd.DataFrame:
    """``df`` with exactly ``row_model``'s columns, in order, and dtypes; a fresh RangeIndex.

    Raises ``ValueError`` naming the columns that are missing.
    """
    types = pandas_dtypes(row_model)
    missing = [c for c in types if c not in df.columns]
    if missing:
        raise ValueError(f"missing columns: {', '.join(missing)}")
    data = {}
    for name, dtype in types.items():
        col = df[name]
        if col.dtype != dtype:
            if isinstance(dtype, pd.CategoricalDtype) and isinstance(col.dtype, pd.CategoricalDtype):
                col = col.cat.set_categories(dtype.categories)
            else:
                col = col.astype(dtype)
        data[name] = col.array
    return pd.DataFrame(data, index=pd.RangeIndex(len(df)))
