"""The Parquet recording format: one file whose rows are the turns (needs pyarrow, extra ``parquet``).

The table is the turns frame: exactly the columns of ``TURNS``, one row per turn, in plain Arrow
types (categories as strings), so that a folder of recordings reads as one table::

    duckdb.sql("SELECT channel, count(*) FROM 'runs/*.parquet' GROUP BY 1")
    pyarrow.dataset.dataset("runs/").to_table()
    polars.read_parquet("runs/*.parquet")

The events are kept beside the table, out of every query's way: their exact, redacted JSON lines
(as in a JSON Lines recording), compressed, between the row groups and the footer (``trailer``).
The JSON Lines header, with ``run_ids``, ``n_turns``, ``n_events`` and where the events are
(``event_parts``, ``event_crc32``) added, is the file's key-value metadata under ``loopnb``.
Files of the first layout (turns and events in one table, told apart by a ``record`` column)
still load, through ``parquet_mixed``.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopnb.engine._events import Event
from loopnb.record._arrow import (
    arrow_fields,
    check_columns,
    check_meta,
    parse_json,
    present,
    pyarrow,
    to_frame,
)
from loopnb.record._errors import RecordingError
from loopnb.record._files import replacing
from loopnb.record._frames import event_table, turn_table
from loopnb.record._jsonl import check_header
from loopnb.record._schema import TURN_COLUMNS, TURNS
from loopnb.record._trailer import check_parts, compressed_parts, crc32, insert_before_footer, read_lines

if TYPE_CHECKING:
    import pandas as pd

    from loopnb.record._recording import Recording

META_KEY = b"loopnb"
ROW_GROUP = 256 * 1024
"""Rows per row group of the turns table."""


def write_parquet(path: str | Path, header: dict[str, Any], events: list[Event], lines: list[str]) -> None:
    """Write ``events`` (already redacted, with their JSON ``lines``) as a Parquet recording."""
    meta = {**header, "run_ids": list(dict.fromkeys(e.run_id for e in events))}
    write_frames(path, meta, [turn_table(events)], [lines])


def write_frames(
    path: str | Path,
    meta: dict[str, Any],
    turns: Iterable[pd.DataFrame],
    lines: Iterable[Sequence[str]],
    *,
    extra: Sequence[Any] = (),
) -> None:
    """Write turns frames (conforming to ``TURNS``), chunk by chunk, and the events' JSON lines,
    as a Parquet recording with header ``meta`` (its counts are filled in). ``extra``: Arrow fields
    of more columns the frames hold, written after the turns' own (a sweep's ``seed``)."""
    pa, _ = pyarrow()
    schema = pa.schema([*arrow_fields(TURNS, pa), *extra])
    tables = (
        pa.Table.from_arrays(
            [pa.array(chunk[f.name], type=f.type, from_pandas=True) for f in schema], schema=schema
        )
        for chunk in turns
    )
    write_tables(path, meta, schema, tables, list(compressed_parts(lines, pa)))


def write_tables(
    path: str | Path,
    meta: dict[str, Any],
    schema: Any,
    tables: Iterable[Any],
    parts: Sequence[tuple[bytes, int, int]],
) -> None:
    """Write Arrow ``tables`` of ``schema`` (the turns, chunk by chunk, each in row groups of
    ``ROW_GROUP`` rows) and the events' compressed ``parts`` (``(part, bytes before, lines)``, as
    ``compressed_parts`` makes them) as a Parquet recording with header ``meta`` (its counts
    filled in), whole or not at all."""
    _, pq = pyarrow()
    with replacing(Path(path)) as tmp:
        with pq.ParquetWriter(tmp, schema, store_schema=False) as writer:
            n_turns = 0
            for table in tables:
                if table.num_rows:
                    writer.write_table(table, row_group_size=ROW_GROUP)
                    n_turns += table.num_rows
            header = {
                **meta,
                "n_turns": n_turns,
                "n_events": sum(n for _, _, n in parts),
                "event_parts": [[len(z), raw, n] for z, raw, n in parts],
                "event_crc32": crc32(z for z, _, _ in parts),
            }
            writer.add_key_value_metadata({META_KEY.decode(): json.dumps(header)})
        insert_before_footer(tmp, [z for z, _, _ in parts])


def _extension_marks() -> tuple[bytes, ...]:
    """The marker of an Arrow extension type as it reads in the footer: raw, and base64-encoded
    (the Arrow schema is stored base64) at each of the three alignments it may fall on."""
    mark = b"ARROW:extension:name"
    forms = [mark]
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + mark)
        forms.append(encoded[(8 * shift + 5) // 6 : (shift + len(mark)) // 3 * 4])
    return tuple(forms)


EXTENSION_MARKS = _extension_marks()


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
    if any(mark in footer for mark in EXTENSION_MARKS):
        raise RecordingError(
            "not a loopnb recording: its schema uses Arrow extension types, which a recording never "
            "does (and reading them would run code registered for them)",
            path=path,
        )


def _open(pq: Any, path: Path, **options: Any) -> Any:
    try:
        return pq.ParquetFile(path, arrow_extensions_enabled=False, **options)
    except TypeError:  # pyarrow before 19 maps no Parquet type to an extension type
        return pq.ParquetFile(path, **options)


def read_parquet(path: str | Path) -> Recording:
    """Open a Parquet recording; frames and events are read on first use.

    The file's schema, header and counts are checked at once: a file that is not a recording (or
    not one any more) is a ``RecordingError`` naming what is wrong, as is a value that does not
    fit its column when the frames are read.
    """
    from loopnb.record._parquet_mixed import read_mixed

    pa, pq = pyarrow()
    path = Path(path)
    _refuse_extension_types(path)
    try:
        pf = _open(pq, path)
    except FileNotFoundError as exc:
        raise RecordingError("no such file", path=path) from exc
    except Exception as exc:
        raise RecordingError(f"not a readable Parquet file: {exc}", path=path) from exc
    kv = pf.metadata.metadata or {}
    raw = kv.get(META_KEY)
    if raw is None:
        raise RecordingError("not a loopnb recording: no 'loopnb' header in its metadata", path=path)
    header = check_header(raw, path)
    check_meta(header, path)
    if pf.schema_arrow.get_field_index("record") >= 0:
        return read_mixed(pf, pa, path, header)
    return _read_turns_file(pf, pa, path, header)


def _read_turns_file(pf: Any, pa: Any, path: Path, header: dict[str, Any]) -> Recording:
    from loopnb.record._recording import Recording

    check_columns(pf.schema_arrow, arrow_fields(TURNS, pa), pa, path)
    parts = check_parts(header, path)
    counts = {"n_turns": pf.metadata.num_rows, "n_events": sum(n for _, _, n in parts)}
    for key, n in counts.items():
        if header.get(key) not in (None, n):
            raise RecordingError(f"the header promises {key}={header[key]} but the file has {n}", path=path)
    meta = {k: v for k, v in header.items() if k not in ("event_parts", "event_crc32")}
    meta.update(counts, path=str(path))

    def turns() -> Any:
        try:
            # Opened again (its footer is small), reading the categories as dictionaries at once.
            coded = _open(pyarrow()[1], path, read_dictionary=list(_CATEGORIES))
            columns = present(coded.schema_arrow, list(TURN_COLUMNS))
            table = coded.read(columns=columns).replace_schema_metadata(None)
            return to_frame(_encoded(table, pa), TURNS)
        except (ValueError, TypeError, OverflowError, OSError, pa.ArrowException) as exc:
            raise RecordingError(f"the turns cannot be read: {exc}", path=path) from exc

    def event_objects() -> list[Event]:
        return parse_json(read_lines(path, parts, header["event_crc32"], pa), path, header["version"])

    def events() -> Any:
        try:
            return event_table(recording.event_objects)
        except (ValueError, TypeError, OverflowError) as exc:
            raise RecordingError(f"the events cannot be read: {exc}", path=path) from exc

    recording = Recording(meta=meta, turns=turns, events=events, event_objects=event_objects)
    return recording


_CATEGORIES = tuple(c.name for c in TURNS.columns if isinstance(c.dtype, tuple))


def _encoded(table: Any, pa: Any) -> Any:
    """``table`` with its category columns dictionary-encoded (they become categoricals at once)."""
    for name in _CATEGORIES:
        i = table.schema.get_field_index(name)
        if not pa.types.is_dictionary(table.schema.field(i).type):
            table = table.settyped_column(i, name, table.column(i).dictionary_encode())
    return table
