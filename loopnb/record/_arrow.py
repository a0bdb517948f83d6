"""The frames' columns as Arrow types, and Arrow tables read back into frames (for ``parquet``).

Written, a frame's categories are plain strings (Parquet dictionary-encodes them all the same), so
that files of different runs, holding different sets of values, unify into one table in
``pyarrow.dataset``, DuckDB or polars. Read back, a column another tool rewrote (a dictionary for
a string, another time unit, a narrower integer) is accepted when it converts without loss.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loopnb.engine._events import Event
from loopnb.record._errors import RecordingError
from loopnb.record._frames import conform, pandas_dtypes
from loopnb.record._schema import ADDED_LATER, Table


def pyarrow() -> Any:
    """``(pyarrow, pyarrow.parquet)``, or an ``ImportError`` saying what to install."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("Parquet recordings need pyarrow: pip install 'loopnb[parquet]'") from exc
    return pa, pq


def _arrow_type(dtype: Any, pa: Any, categories: Any) -> Any:
    import pandas as pd

    if isinstance(dtype, pd.CategoricalDtype):
        return categories
    if isinstance(dtype, pd.DatetimeTZDtype):
        return pa.timestamp("us", tz="UTC")
    if isinstance(dtype, pd.StringDtype):
        return pa.large_string()
    name = str(dtype)
    return {"Int64": pa.int64(), "Float64": pa.float64(), "bool": pa.bool_(), "boolean": pa.bool_()}[name]


def arrow_fields(table: Table, pa: Any, *, prefix: str = "", categories: Any = None) -> list[Any]:
    """The Arrow fields of ``table``'s columns (names prefixed with ``prefix``); categories are
    of type ``categories`` (plain strings unless told)."""
    kind = pa.string() if categories is None else categories
    return [
        pa.field(prefix + name, _arrow_type(dtype, pa, kind)) for name, dtype in pandas_dtypes(table).items()
    ]


def _text(t: Any, pa: Any) -> bool:
    string_view = getattr(pa.types, "is_string_view", lambda _: False)
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or string_view(t))


def _compatible(actual: Any, expected: Any, pa: Any) -> bool:
    """Whether a column of type ``actual`` converts to the column ``expected`` without loss (as
    another tool may have rewritten it: plain strings for dictionaries, other units, narrower ints)."""
    t = pa.types
    if t.is_null(actual) or actual == expected:
        return True
    if t.is_dictionary(actual):
        return (t.is_dictionary(expected) or _text(expected, pa)) and _text(actual.value_type, pa)
    if t.is_dictionary(expected) or _text(expected, pa):
        return _text(actual, pa)
    if t.is_timestamp(expected):
        return bool(t.is_timestamp(actual) and actual.tz is not None)
    if t.is_integer(expected):
        return bool(t.is_integer(actual))
    if t.is_floating(expected):
        return bool(t.is_floating(actual) or t.is_integer(actual))
    return False


def check_columns(schema: Any, expected: list[Any], pa: Any, path: Path) -> None:
    """A ``RecordingError`` naming every field of ``expected`` that ``schema`` lacks or holds in a
    type that is not its own (a column added since the file was written may be absent)."""
    missing, wrong = [], []
    for field in expected:
        index = schema.get_field_index(field.name)
        if index < 0:
            if field.name.removeprefix("event_") not in ADDED_LATER:
                missing.append(field.name)
        elif not _compatible(schema.field(index).type, field.type, pa):
            wrong.append(f"{field.name} is {schema.field(index).type}, not {field.type}")
    if missing or wrong:
        more = f" (and {len(missing) - 8} more)" if len(missing) > 8 else ""
        faults = ([f"missing columns: {', '.join(missing[:8])}{more}"] if missing else []) + wrong
        raise RecordingError(f"not a loopnb recording: {'; '.join(faults)}", path=path)


def check_meta(header: dict[str, Any], path: Path) -> None:
    """A ``RecordingError`` when the header's counts or run ids are not what they must be."""
    for key in ("n_turns", "n_events"):
        value = header.get(key)
        if value is not None and (type(value) is not int or value < 0):
            raise RecordingError(f"the header's {key} must be a count, found {value!r}", path=path)
    run_ids = header.get("run_ids", [])
    if not isinstance(run_ids, list) or not all(isinstance(r, str) for r in run_ids):
        raise RecordingError(f"the header's run_ids must be a list of strings, found {run_ids!r}", path=path)


def present(schema: Any, names: list[str]) -> list[str]:
    """Those of ``names`` that the Arrow ``schema`` holds (``check_columns`` vouched for the rest)."""
    return [n for n in names if schema.get_field_index(n) >= 0]


def to_frame(table: Any, spec: Table, prefix: str = "") -> Any:
    """The Arrow ``table`` as a frame of ``spec`` (its column names without ``prefix``)."""
    import pandas as pd

    df = table.to_pandas(types_mapper=_mapper(), split_blocks=True, self_destruct=True, ignore_metadata=True)
    if prefix:
        df.columns = [c[len(prefix) :] for c in df.columns]
    for name, dtype in pandas_dtypes(spec).items():
        col = df.get(name)
        if isinstance(dtype, pd.CategoricalDtype) and isinstance(
            getattr(col, "dtype", None), pd.CategoricalDtype
        ):
            df[name] = _recategorised(name, col, dtype)
    return conform(df, spec)


def _recategorised(name: str, col: Any, dtype: Any) -> Any:
    """A categorical column read from a file, with ``dtype``'s categories in their order (pandas
    holds categoricals of one set of values in another order equal, and would keep that order)."""
    if list(col.cat.categories) == list(dtype.categories):
        return col
    unknown = [v for v in col.cat.remove_unused_categories().cat.categories if v not in dtype.categories]
    if unknown:
        raise ValueError(f"column {name!r}: {unknown[:5]!r} not among {list(dtype.categories)}")
    return col.cat.set_categories(dtype.categories)


def _mapper() -> Any:
    import pandas as pd
    import pyarrow as pa

    # Every integer type straight to Int64 (through float64, a large one would lose digits or
    # wrap around), every float type to Float64.
    ints = (pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64())
    mapping = {
        pa.large_string(): pd.StringDtype("pyarrow"),
        pa.string(): pd.StringDtype("pyarrow"),
        **dict.fromkeys(ints, pd.Int64Dtype()),
        **dict.fromkeys((pa.float16(), pa.float32(), pa.float64()), pd.Float64Dtype()),
    }
    return mapping.get


def parse_json(lines: list[Any], path: Path, version: int) -> list[Event]:
    """The events of their JSON lines, in order (checked: a run's seqs grow); a bad one is a
    ``RecordingError`` naming it (``event N``, counted from 1)."""
    from pydantic import ValidationError

    from loopnb.record._jsonl import parse_events, parse_lines
    from loopnb.record._lines import describe, parse_event
    from loopnb.record._seqs import check_order

    def one(raw: str | bytes | None, index: int) -> Event:
        if raw is None:
            raise RecordingError(f"event {index + 1}: its JSON line is missing", path=path)
        try:
            return parse_event(raw)
        except (ValueError, TypeError) as exc:
            what = describe(exc) if isinstance(exc, ValidationError) else str(exc)
            raise RecordingError(f"event {index + 1}: not a valid event: {what}", path=path) from exc

    if None in lines:
        one(None, lines.index(None))
    if version == 1:
        try:
            events = parse_events(lines, 1)
        except (ValueError, TypeError) as exc:
            raise RecordingError(f"a version-1 event is not valid: {exc}", path=path) from exc
    else:
        events = parse_lines(lines, one)
    check_order(events, path, first_line=None)
    return events
