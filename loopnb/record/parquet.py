"""The Parquet recording format: turns and events in one file (needs pyarrow, extra ``parquet``).

One Parquet file holds two tables, told apart by the ``record`` column and never mixed in a
row group: first the turns (``record == "turn"``, the columns of ``TURNS``, same names and
types), then the events (``record == "event"``, the columns of ``EVENTS`` prefixed
``event_``, plus ``event_json``: each event's exact, redacted JSON, for replay). The header of
the JSON Lines format, with ``run_ids``, ``n_turns`` and ``n_events`` added, is the file's
key-value metadata under ``loopnb``. Reading the turns touches only their row groups and
columns, so a million turns load in well under two seconds. In SQL::

    SELECT * EXCLUDE (record) FROM 'run.parquet' WHERE record = 'turn'
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopnb.engine.events import Event
from loopnb.record.errors import RecordingError
from loopnb.record.files import replacing
from loopnb.record.frames import conform, event_frame, event_table, pandas_dtypes, turn_frame, turn_table
from loopnb.record.jsonl import check_header, check_order
from loopnb.record.schema import EVENT_COLUMNS, EVENTS, TURN_COLUMNS, TURNS, Table

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


def _fields(table: Any, prefix: str, pa: Any) -> list[Any]:
    return [pa.field(prefix + name, _arrow_type(dtype, pa)) for name, dtype in pandas_dtypes(table).items()]


def _schema(pa: Any, header: dict[str, Any]) -> pa.Schema:
    fields = [
        pa.field("record", pa.dictionary(pa.int8(), pa.string())),
        *_fields(TURNS, "", pa),
        *_fields(EVENTS, _PREFIX, pa),
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
    """Write frames (conforming to ``TURNS`` / ``EVENTS``) as a Parquet recording, chunk by
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


def _extension_marks() -> tuple[bytes, ...]:
    """The marker of an Arrow extension type as it reads in the footer: raw, and base64-encoded
    (the Arrow schema is stored base64) at each of the three alignments it may fall on."""
    mark = b"ARROW:extension:name"
    forms = [mark]
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + mark)
        forms.append(encoded[(8 * shift + 5) // 6 : (shift + len(mark)) // 3 * 4])
    return tuple(forms)


_EXTENSION_MARKS = _extension_marks()


def _refuse_extension_types(path: Path) -> None:
    """Refuse a file whose schema names Arrow extension types, before pyarrow reads its schema:
    reading it hands bytes from the file to whatever code registered those types (pandas' metadata
    is ignored for the same reason). A loopnb recording never uses one."""
    try:
        with path.open("rb") as f:
            size = f.seek(0, os.SEEK_END)
            if size < 12:
                return  # pyarrow says what is wrong with it
            f.seek(size - 8)
            tail = f.read(8)
            length = int.from_bytes(tail[:4], "little")
            if tail[4:] != b"PAR1" or length > size - 8:
                return
            f.seek(size - 8 - length)
            footer = f.read(length)
    except FileNotFoundError as exc:
        raise RecordingError("no such file", path=path) from exc
    except OSError as exc:
        raise RecordingError(f"cannot read: {exc.strerror or exc}", path=path) from exc
    if any(mark in footer for mark in _EXTENSION_MARKS):
        raise RecordingError(
            "not a loopnb recording: its schema uses Arrow extension types, which a recording never "
            "does (and reading them would run code registered for them)",
            path=path,
        )


def _open(pq: Any, path: Path) -> Any:
    try:
        return pq.ParquetFile(path, arrow_extensions_enabled=False)
    except TypeError:  # pyarrow before 19 maps no Parquet type to an extension type
        return pq.ParquetFile(path)


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
        return (t.is_dictionary(expected) or t.is_large_string(expected)) and _text(actual.value_type, pa)
    if t.is_dictionary(expected) or t.is_large_string(expected):
        return _text(actual, pa)
    if t.is_timestamp(expected):
        return bool(t.is_timestamp(actual) and actual.tz is not None)
    if t.is_integer(expected):
        return bool(t.is_integer(actual))
    if t.is_floating(expected):
        return bool(t.is_floating(actual) or t.is_integer(actual))
    return False


def _check_schema(schema: Any, pa: Any, path: Path) -> None:
    """A ``RecordingError`` naming every column that is missing or of a type that is not its own."""
    missing, wrong = [], []
    for field in _schema(pa, {}):
        index = schema.get_field_index(field.name)
        if index < 0:
            missing.append(field.name)
        elif not _compatible(schema.field(index).type, field.type, pa):
            wrong.append(f"{field.name} is {schema.field(index).type}, not {field.type}")
    if missing or wrong:
        more = f" (and {len(missing) - 8} more)" if len(missing) > 8 else ""
        faults = ([f"missing columns: {', '.join(missing[:8])}{more}"] if missing else []) + wrong
        raise RecordingError(f"not a loopnb recording: {'; '.join(faults)}", path=path)


def _check_meta(header: dict[str, Any], path: Path) -> None:
    for key in ("n_turns", "n_events"):
        value = header.get(key)
        if value is not None and (type(value) is not int or value < 0):
            raise RecordingError(f"the header's {key} must be a count, found {value!r}", path=path)
    run_ids = header.get("run_ids", [])
    if not isinstance(run_ids, list) or not all(isinstance(r, str) for r in run_ids):
        raise RecordingError(f"the header's run_ids must be a list of strings, found {run_ids!r}", path=path)


Rows = tuple[list[int], Any]
"""The row groups holding one kind of row, and a mask over their rows when they hold others too."""


def _layout(pf: Any, pa: Any) -> dict[str, Rows]:
    """Where the turns and the events are. Row groups loopnb wrote hold one kind each (their
    statistics say which); a file another tool rewrote may mix them, and its ``record`` column
    is read to tell them apart."""
    md = pf.metadata
    column = [md.schema.column(j).path for j in range(md.num_columns)].index("record")
    layout: dict[str, Rows] = {"turn": ([], None), "event": ([], None)}
    for i in range(md.num_row_groups):
        group = md.row_group(i)
        stats = group.column(column).statistics
        pure = stats is not None and stats.has_min_max and stats.null_count == 0 and stats.min == stats.max
        if not pure or stats.min not in layout:
            return _masked_layout(pf, pa)
        layout[stats.min][0].append(i)
    return layout


def _masked_layout(pf: Any, pa: Any) -> dict[str, Rows]:
    import pyarrow.compute as pc

    record = pf.read(columns=["record"]).column(0).cast(pa.string())
    unknown = pc.unique(pc.filter(record, pc.invert(pc.is_in(record, pa.array(["turn", "event"])))))
    if len(unknown) or record.null_count:
        found = unknown.to_pylist() + ([None] if record.null_count else [])
        raise ValueError(f"the record column must say 'turn' or 'event', found {found}")
    layout: dict[str, Rows] = {}
    for kind in ("turn", "event"):
        mask = pc.equal(record, kind)
        groups, parts, start = [], [], 0
        for i in range(pf.metadata.num_row_groups):
            n = pf.metadata.row_group(i).num_rows
            part = mask.slice(start, n)
            if pc.any(part).as_py():
                groups.append(i)
                parts.extend(part.chunks)
            start += n
        layout[kind] = (groups, pa.chunked_array(parts, pa.bool_()))
    return layout


def _count(pf: Any, rows: Rows) -> int:
    groups, mask = rows
    if mask is not None:
        import pyarrow.compute as pc

        return int(pc.sum(mask).as_py() or 0)
    return sum(pf.metadata.row_group(i).num_rows for i in groups)


def _read(pf: Any, rows: Rows, columns: list[str], spec: Table, prefix: str) -> Any:
    groups, mask = rows
    if not groups:
        return (turn_frame if spec is TURNS else event_frame)([])
    table = pf.read_row_groups(groups, columns=[prefix + c for c in columns])
    if mask is not None:
        table = table.filter(mask)
    df = table.to_pandas(types_mapper=_mapper(), split_blocks=True, self_destruct=True, ignore_metadata=True)
    if prefix:
        df.columns = [c[len(prefix) :] for c in df.columns]
    return conform(df, spec)


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


def read_parquet(path: str | Path) -> Recording:
    """Open a Parquet recording; frames and events are read on first use.

    The file's schema, header and layout are checked at once: a file that is not a recording (or
    not one any more) is a ``RecordingError`` naming what is wrong, as is a value that does not
    fit its column when the frames are read.
    """
    from loopnb.record.recording import Recording

    pa, pq = _pyarrow()
    path = Path(path)
    _refuse_extension_types(path)
    try:
        pf = _open(pq, path)
    except FileNotFoundError as exc:
        raise RecordingError("no such file", path=path) from exc
    except Exception as exc:
        raise RecordingError(f"not a readable Parquet file: {exc}", path=path) from exc
    raw = (pf.schema_arrow.metadata or {}).get(_META_KEY)
    if raw is None:
        raise RecordingError("not a loopnb recording: no 'loopnb' header in its metadata", path=path)
    header = check_header(raw, path)
    _check_meta(header, path)
    _check_schema(pf.schema_arrow, pa, path)
    try:
        layout = _layout(pf, pa)
    except (ValueError, pa.ArrowException) as exc:
        raise RecordingError(str(exc), path=path) from exc
    counts = {"n_turns": _count(pf, layout["turn"]), "n_events": _count(pf, layout["event"])}
    for key, n in counts.items():
        if header.get(key) not in (None, n):
            raise RecordingError(f"the header promises {key}={header[key]} but the file has {n}", path=path)
    meta = {**header, **counts, "path": str(path)}

    def frame(kind: str, columns: list[str], table: Any, prefix: str) -> Any:
        try:
            return _read(pf, layout[kind], columns, table, prefix)
        except (ValueError, TypeError, OverflowError, pa.ArrowException) as exc:
            raise RecordingError(f"the {kind}s cannot be read: {exc}", path=path) from exc

    def turns() -> Any:
        return frame("turn", list(TURN_COLUMNS), TURNS, "")

    def events() -> Any:
        return frame("event", list(EVENT_COLUMNS), EVENTS, _PREFIX)

    def event_objects() -> list[Event]:
        groups, mask = layout["event"]
        if not groups:
            return []
        table = pf.read_row_groups(groups, columns=[_PREFIX + "json"])
        if mask is not None:
            table = table.filter(mask)
        events = _parse_json(table.column(0).cast(pa.large_string()).to_pylist(), path, header["version"])
        check_order(events, path, first_line=None)
        return events

    return Recording(meta=meta, turns=turns, events=events, event_objects=event_objects)


def _parse_json(lines: list[str | None], path: Path, version: int) -> list[Event]:
    """The events of the ``event_json`` column; a bad one is a ``RecordingError`` naming it."""
    from pydantic import ValidationError

    from loopnb.record.jsonl import _parse_lines, parse_events
    from loopnb.record.lines import describe, parse_event

    def one(raw: str | None, index: int) -> Event:
        if raw is None:
            raise RecordingError(f"event {index + 1}: its event_json is missing", path=path)
        try:
            return parse_event(raw)
        except (ValueError, TypeError) as exc:
            what = describe(exc) if isinstance(exc, ValidationError) else str(exc)
            raise RecordingError(f"event {index + 1}: not a valid event: {what}", path=path) from exc

    if None in lines:
        one(None, lines.index(None))
    if version == 1:
        try:
            return parse_events(lines, 1)  # type: ignore[arg-type]
        except (ValueError, TypeError) as exc:
            raise RecordingError(f"a version-1 event is not valid: {exc}", path=path) from exc
    return _parse_lines(lines, one)  # type: ignore[arg-type]
