"""The Parquet recording format: turns and events in one file (needs pyarrow, extra ``parquet``).

One Parquet file holds two tables, told apart by the ``record`` column and never mixed in a
row group: first the turns (``record == "turn"``, the columns of ``TurnRow``, same names and
types), then the events (``record == "event"``, the columns of ``EventRow`` prefixed
``event_``, plus ``event_json``: each event's exact, redacted JSON, for replay). The header of
the JSON Lines format, with ``run_ids``, ``n_turns`` and ``n_events`` added, is the file's
key-value metadata under ``loopnb``. Reading the turns touches only their row groups and
columns, so a million turns load in well under two seconds. In SQL::

    SELECT * EXCLUDE (record) FROM 'run.parquet' WHERE record = 'turn'
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopnb.engine.events import Event
from loopnb.record.errors import RecordingError
from loopnb.record.frames import conform, event_frame, event_table, pandas_dtypes, turn_frame, turn_table
from loopnb.record.jsonl import check_header, replacing
from loopnb.record.schema import EVENT_COLUMNS, TURN_COLUMNS, EventRow, TurnRow

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from loopnb.record.recording import Recording

__all__ = ["read_parquet", "write_frames", "write_parquet"]

_META_KEY = b"loopnb"
_PREFIX = "event_"
_ROW_GROUP = 256 * 1024


def _pyarrow() -> Any:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("Parquet recordings need pyarrow: pip install 'loopnb[parquet]'") from exc
    return pa, pq


def _arrow_type(dtype: Any, pa: Any) -> Any:
    import pandas as pd

    if isinstance(dtype, pd.CategoricalDtype):
        return pa.dictionary(pa.int8(), pa.string())
    if isinstance(dtype, pd.DatetimeTZDtype):
        return pa.timestamp("us", tz="UTC")
    if isinstance(dtype, pd.StringDtype):
        return pa.large_string()
    name = str(dtype)
    return {"Int64": pa.int64(), "Float64": pa.float64(), "bool": pa.bool_(), "boolean": pa.bool_()}[name]


def _fields(row_model: Any, prefix: str, pa: Any) -> list[Any]:
    return [
        pa.field(prefix + name, _arrow_type(dtype, pa)) for name, dtype in pandas_dtypes(row_model).items()
    ]


def _schema(pa: Any, header: dict[str, Any]) -> pa.Schema:
    fields = [
        pa.field("record", pa.dictionary(pa.int8(), pa.string())),
        *_fields(TurnRow, "", pa),
        *_fields(EventRow, _PREFIX, pa),
        pa.field(_PREFIX + "json", pa.large_string()),
    ]
    return pa.schema(fields, metadata={_META_KEY: json.dumps(header).encode()})


def _table(pa: Any, schema: Any, record: str, columns: dict[str, Any], n: int) -> Any:
    arrays = []
    for field in schema:
        if field.name == "record":
            arrays.append(pa.DictionaryArray.from_arrays(pa.array([0] * n, pa.int8()), [record]))
        elif field.name in columns:
            arrays.append(columns[field.name])
        else:
            arrays.append(pa.nulls(n, field.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def _columns(df: Any, prefix: str, schema: Any, pa: Any) -> dict[str, Any]:
    out = {}
    for name in df.columns:
        field = schema.field(prefix + name)
        out[prefix + name] = pa.array(df[name], type=field.type, from_pandas=True)
    return out


def write_parquet(path: str | Path, header: dict[str, Any], events: list[Event], lines: list[str]) -> None:
    """Write ``events`` (already redacted, with their JSON ``lines``) as a Parquet recording."""
    turns = turn_table(events)
    meta = {
        **header,
        "run_ids": list(dict.fromkeys(e.run_id for e in events)),
        "n_turns": len(turns),
        "n_events": len(events),
    }
    write_frames(path, meta, [turns], [(event_table(events), lines)])


def write_frames(
    path: str | Path,
    meta: dict[str, Any],
    turns: Iterable[pd.DataFrame],
    events: Iterable[tuple[pd.DataFrame, list[str]]],
) -> None:
    """Write frames (conforming to ``TurnRow`` / ``EventRow``) as a Parquet recording, chunk by
    chunk: all turn chunks, then all event chunks with their JSON lines. ``meta`` must give
    ``n_turns``, the total number of turn rows."""
    pa, pq = _pyarrow()
    path = Path(path)
    schema = _schema(pa, meta)
    with replacing(path) as tmp:
        _write_chunks(pq.ParquetWriter(tmp, schema), schema, pa, turns, events, meta.get("n_turns"))


def _write_chunks(
    writer: Any,
    schema: Any,
    pa: Any,
    turns: Iterable[pd.DataFrame],
    events: Iterable[tuple[pd.DataFrame, list[str]]],
    n_turns: Any,
) -> None:
    written = 0
    with writer:
        for chunk in turns:
            if len(chunk):
                cols = _columns(chunk, "", schema, pa)
                table = _table(pa, schema, "turn", cols, len(chunk))
                writer.write_table(table, row_group_size=_ROW_GROUP)
                written += len(chunk)
        for chunk, lines in events:
            if len(chunk):
                cols = _columns(chunk, _PREFIX, schema, pa)
                cols[_PREFIX + "json"] = pa.array(lines, type=pa.large_string())
                table = _table(pa, schema, "event", cols, len(chunk))
                writer.write_table(table, row_group_size=_ROW_GROUP)
    if written != n_turns:
        raise ValueError(f"meta says n_turns={n_turns} but {written} were given")


def _row_groups(pf: Any, n_turns: int) -> tuple[list[int], list[int]]:
    turns, events, seen = [], [], 0
    for i in range(pf.metadata.num_row_groups):
        (turns if seen < n_turns else events).append(i)
        seen += pf.metadata.row_group(i).num_rows
    if seen < n_turns:
        raise ValueError(f"the header promises {n_turns} turns but the file has {seen} rows")
    return turns, events


def _read(pf: Any, groups: list[int], columns: list[str], row_model: Any, prefix: str) -> Any:
    if not groups:
        return (turn_frame if row_model is TurnRow else event_frame)([])
    table = pf.read_row_groups(groups, columns=[prefix + c for c in columns])
    df = table.to_pandas(types_mapper=_mapper(), split_blocks=True, self_destruct=True)
    if prefix:
        df.columns = [c[len(prefix) :] for c in df.columns]
    return conform(df, row_model)


def _mapper() -> Any:
    import pandas as pd
    import pyarrow as pa

    mapping = {
        pa.large_string(): pd.StringDtype("pyarrow"),
        pa.string(): pd.StringDtype("pyarrow"),
        pa.int64(): pd.Int64Dtype(),
        pa.float64(): pd.Float64Dtype(),
    }
    return mapping.get


def read_parquet(path: str | Path) -> Recording:
    """Open a Parquet recording; frames and events are read on first use."""
    from loopnb.record.recording import Recording

    _, pq = _pyarrow()
    path = Path(path)
    try:
        pf = pq.ParquetFile(path)
    except FileNotFoundError as exc:
        raise RecordingError("no such file", path=path) from exc
    except Exception as exc:
        raise RecordingError(f"not a readable Parquet file: {exc}", path=path) from exc
    raw = (pf.schema_arrow.metadata or {}).get(_META_KEY)
    if raw is None:
        raise RecordingError("not a loopnb recording: no 'loopnb' header in its metadata", path=path)
    header = check_header(raw, path)
    meta = {**header, "path": str(path)}
    try:
        turn_groups, event_groups = _row_groups(pf, int(header.get("n_turns", 0)))
    except ValueError as exc:
        raise RecordingError(str(exc), path=path) from exc

    def turns() -> Any:
        return _read(pf, turn_groups, list(TURN_COLUMNS), TurnRow, "")

    def events() -> Any:
        return _read(pf, event_groups, list(EVENT_COLUMNS), EventRow, _PREFIX)

    def event_objects() -> list[Event]:
        from loopnb.record.jsonl import parse_events

        if not event_groups:
            return []
        lines = pf.read_row_groups(event_groups, columns=[_PREFIX + "json"]).column(0)
        try:
            return parse_events(lines.to_pylist())
        except Exception as exc:
            raise RecordingError(f"an event in the file is not valid: {exc}", path=path) from exc

    return Recording(meta=meta, turns=turns, events=events, event_objects=event_objects)
