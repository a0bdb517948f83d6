"""A sweep's small batch files merged into a few large ones (``Sweep.compact``).

A sweep writes one file per batch, so a sweep of millions of runs is a thousand files of some ten
thousand turns each, and a query pays for every file it opens and for row groups too small to
scan well. Compacting merges each config's consecutive batch files into files of up to
``COMPACT_ROWS`` turns, in row groups of ``ROW_GROUP`` (the layout a query reads as fast as one
table). A merged file is a loopnb recording like any batch file: its turns table (with ``seed``),
the events of every batch it holds (their compressed parts copied byte for byte, never decoded)
and a header whose ``sweep`` names its ``batches`` and all their ``seeds``. It is named for the
batches it holds (``part-000000-000009.parquet``), so the hive layout (``config=NAME/part-*``),
``Sweep`` and ``loopnb.query`` read it as before, and a resumed sweep skips those batches.

Each merged file is written whole (a temporary file renamed into place) before the files it
holds are removed: a compaction stopped in between leaves both, the readers read the merged one
(``batch_files``), and the next compaction or resumed sweep removes the rest. ``loopnb.sweep``
compacts a finished sweep of more than ``COMPACT_AFTER`` batch files itself; ``Sweep.compact``
compacts any sweep, holding the folder's lock (``_lock``) so that no sweep writes meanwhile.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from loopnb._sweep._batch import MERGED, batch_files, batches_of, extra_fields, partition

COMPACT_ROWS = 1 << 21
"""The most turns a compacted file holds (whole batches: a batch larger than this stays alone)."""
COMPACT_AFTER = 64
"""A finished sweep of more batch files than this is compacted by ``loopnb.sweep`` itself."""


def compact(root: Path, configs: Sequence[str], rows: int = COMPACT_ROWS) -> int:
    """Merge each config's consecutive batch files under ``root`` into files of up to ``rows``
    turns; returns how many files were merged away. The caller holds the folder's lock."""
    merged = 0
    for config in configs:
        folder = partition(root, config)
        remove_merged(folder)
        for group in _groups(folder, rows):
            _merge(group, folder)
            for path in group:
                path.unlink()
            merged += len(group) - 1
    return merged


def remove_merged(folder: Path) -> None:
    """Remove the files a merged file holds that a stopped compaction left behind."""
    kept = {p for _, _, p in batch_files(folder)}
    for _, _, path in batch_files(folder, every=True):
        if path not in kept:
            path.unlink()


def _groups(folder: Path, rows: int) -> Iterator[list[Path]]:
    """Runs of files holding consecutive batches, of at most ``rows`` turns, two files or more.
    Each file is opened as a recording first: one that is not whole stops the compaction with a
    ``RecordingError`` naming it, before anything is replaced."""
    import pyarrow.parquet as pq

    from loopnb.record import RecordingError
    from loopnb.record._parquet import read_parquet

    group: list[Path] = []
    size = after = 0
    for first, last, path in batch_files(folder):
        n = int(read_parquet(path).meta["n_turns"])
        if "seed" not in pq.ParquetFile(path).schema_arrow.names:  # read_parquet vouched for the schema
            raise RecordingError("not a sweep's batch file: it has no seed column", path=path)
        if group and (first != after or size + n > rows):
            if len(group) > 1:
                yield group
            group, size = [], 0
        group.append(path)
        size += n
        after = last + 1
    if len(group) > 1:
        yield group


def _merge(group: list[Path], folder: Path) -> Path:
    """Write the files of ``group`` as one, named for their batches."""
    from loopnb.record._arrow import arrow_fields, pyarrow
    from loopnb.record._parquet import META_KEY, write_tables
    from loopnb.record._schema import TURNS
    from loopnb.record._trailer import check_parts, read_parts

    pa, pq = pyarrow()
    schema = pa.schema([*arrow_fields(TURNS, pa), *extra_fields(pa)])
    headers = [json.loads(pq.ParquetFile(p).metadata.metadata[META_KEY]) for p in group]
    parts: list[tuple[bytes, int, int]] = []
    for path, header in zip(group, headers, strict=True):
        counts = check_parts(header, path)
        data, at = read_parts(path, counts, header["event_crc32"]), 0
        for z, raw, n in counts:
            parts.append((data[at : at + z], raw, n))
            at += z
    first, last = batches_of(group[0]), batches_of(group[-1])
    assert first is not None and last is not None, "a group is made of batch files"
    path = folder / MERGED.format(first[0], last[1])
    write_tables(path, _header(headers, first[0], last[1]), schema, _regrouped(group, schema, pa, pq), parts)
    return path


def _header(headers: list[dict[str, Any]], first: int, last: int) -> dict[str, Any]:
    """The merged file's header: the first file's, with every file's runs and seeds."""
    counted = ("n_turns", "n_events", "event_parts", "event_crc32")
    first_sweep = headers[0].get("sweep")
    sweep = dict(first_sweep) if isinstance(first_sweep, dict) else {}
    sweep.update(
        batch=first,
        batches=[first, last],
        seeds=list(dict.fromkeys(s for h in headers for s in _seeds(h) if type(s) is int)),
    )
    return {
        **{k: v for k, v in headers[0].items() if k not in counted},
        "redacted": all(h.get("redacted") is True for h in headers),
        "run_ids": list(
            dict.fromkeys(r for h in headers for r in h.get("run_ids", []) if isinstance(r, str))
        ),
        "sweep": sweep,
    }


def _regrouped(group: list[Path], schema: Any, pa: Any, pq: Any) -> Iterator[Any]:
    """The files' turns tables in chunks of whole ``ROW_GROUP``s (the last one the rest), so that
    a thousand small batches become a few full row groups, not a thousand small ones."""
    from loopnb.record._parquet import ROW_GROUP

    held: list[Any] = []
    size = 0
    for path in group:
        table = pq.ParquetFile(path).read(columns=schema.names).cast(schema)
        held.append(table)
        size += table.num_rows
        if size >= ROW_GROUP:
            whole = pa.concat_tables(held)
            cut = size // ROW_GROUP * ROW_GROUP
            yield whole.slice(0, cut)
            held, size = [whole.slice(cut)], size - cut
    if size:
        yield pa.concat_tables(held)


def _seeds(header: dict[str, Any]) -> list[Any]:
    """The seeds a batch file's header names (none when it names none as a list)."""
    sweep = header.get("sweep")
    seeds = sweep.get("seeds") if isinstance(sweep, dict) else None
    return seeds if isinstance(seeds, list) else []
