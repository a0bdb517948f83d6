"""Reading Parquet recordings of the first layout: turns and events mixed in one table.

Files loopnb wrote before the turns-only layout (``parquet``) hold two tables told apart by the
``record`` column: the turns (``record == "turn"``, the columns of ``TURNS``), then the events
(``record == "event"``, the columns of ``EVENTS`` prefixed ``event_``, plus ``event_json``, each
event's exact JSON). They still load; nothing writes them any more.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopnb.engine._events import Event
from loopnb.record._arrow import arrow_fields, check_columns, parse_json, present, to_frame
from loopnb.record._errors import RecordingError
from loopnb.record._frames import event_frame, turn_frame
from loopnb.record._schema import EVENT_COLUMNS, EVENTS, TURN_COLUMNS, TURNS, Table

if TYPE_CHECKING:
    from loopnb.record._recording import Recording


_PREFIX = "event_"


def _fields(pa: Any) -> list[Any]:
    categories = pa.dictionary(pa.int8(), pa.string())
    return [
        pa.field("record", categories),
        *arrow_fields(TURNS, pa, categories=categories),
        *arrow_fields(EVENTS, pa, prefix=_PREFIX, categories=categories),
        pa.field(_PREFIX + "json", pa.large_string()),
    ]


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


def _rows(pf: Any, rows: Rows, columns: list[str]) -> Any:
    groups, mask = rows
    table = pf.read_row_groups(groups, columns=columns)
    return table if mask is None else table.filter(mask)


def _read(pf: Any, rows: Rows, columns: list[str], spec: Table, prefix: str) -> Any:
    if not rows[0]:
        return (turn_frame if spec is TURNS else event_frame)([])
    names = present(pf.schema_arrow, [prefix + c for c in columns])
    return to_frame(_rows(pf, rows, names), spec, prefix)


def read_mixed(pf: Any, pa: Any, path: Path, header: dict[str, Any]) -> Recording:
    """The recording in the open Parquet file ``pf`` of the first layout, whose checked header is
    ``header``; frames and events are read on first use."""
    from loopnb.record._recording import Recording

    check_columns(pf.schema_arrow, _fields(pa), pa, path)
    try:
        layout = _layout(pf, pa)
    except (ValueError, pa.ArrowException) as exc:
        raise RecordingError(str(exc), path=path) from exc
    counts = {"n_turns": _count(pf, layout["turn"]), "n_events": _count(pf, layout["event"])}
    for key, n in counts.items():
        if header.get(key) not in (None, n):
            raise RecordingError(f"the header promises {key}={header[key]} but the file has {n}", path=path)

    def frame(kind: str, columns: list[str], table: Table, prefix: str) -> Any:
        try:
            return _read(pf, layout[kind], columns, table, prefix)
        except (ValueError, TypeError, OverflowError, pa.ArrowException) as exc:
            raise RecordingError(f"the {kind}s cannot be read: {exc}", path=path) from exc

    def event_objects() -> list[Event]:
        if not layout["event"][0]:
            return []
        column = _rows(pf, layout["event"], [_PREFIX + "json"]).column(0)
        return parse_json(column.cast(pa.large_string()).to_pylist(), path, header["version"])

    return Recording(
        meta={**header, **counts, "path": str(path)},
        turns=lambda: frame("turn", list(TURN_COLUMNS), TURNS, ""),
        events=lambda: frame("event", list(EVENT_COLUMNS), EVENTS, _PREFIX),
        event_objects=event_objects,
    )
