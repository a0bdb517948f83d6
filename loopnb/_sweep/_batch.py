"""One batch of a sweep, as a worker runs it: the runs of one config over some seeds, one file.

A ``Batch`` is plain data (it pickles to any worker). ``run_batch`` runs each seed's engine with
one ``Recorder`` observing them all, builds the turns frame with the recorder's own builder, adds
the ``seed`` column and writes the batch as a Parquet recording with the recorder's writer:
``OUT/config=NAME/part-000003.parquet``, under a temporary name renamed into place, so a reader
(or a resumed sweep) sees a batch whole or not at all. Each file is a loopnb recording in its own
right (``loopnb.load`` reads it, events included); its header says which sweep batch it is.

A run whose engine cannot be built or that raises (anything but the ``LoopError`` of a hard
ending, which is a result) fails its batch, and so the sweep, with a note naming the config and
the seed; a full disk fails it with a ``RecordingError`` naming the results' folder. Either way the
batches written before stay, and ``resume=True`` finishes the sweep once the cause is fixed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loopnb._sweep._config import SweepConfig, build
from loopnb.engine import LoopError
from loopnb.record import RecordingError

PART = "part-{:06d}.parquet"
MERGED = "part-{:06d}-{:06d}.parquet"
"""A compacted file: the batches from the first to the last number, one file (``_compact``)."""
_FULL = (errno.ENOSPC, errno.EDQUOT)
"""The errors of a write to a disk (or a quota) with no room left."""


def partition(out: str | Path, config: str) -> Path:
    """The folder of a config's batches (hive style)."""
    return Path(out) / f"config={config}"


def part_path(out: str | Path, config: str, index: int) -> Path:
    """Where batch ``index`` of ``config`` is written."""
    return partition(out, config) / PART.format(index)


def run_id(config: str, seed: int) -> str:
    """The run id of one run of a sweep: its config and its seed, so that a rerun is the same run."""
    return f"{config}-{seed}"


@dataclass(frozen=True)
class Batch:
    """The runs of one config over some seeds, and where they go."""

    out: str
    sweep: str
    config: SweepConfig
    task: str | None
    index: int
    seeds: tuple[int, ...]

    @property
    def path(self) -> Path:
        return part_path(self.out, self.config.name, self.index)

    @property
    def key(self) -> str:
        return f"loopnb-sweep-{self.sweep}-{self.config.name}-{self.index}"


def run_batch(batch: Batch) -> dict[str, Any]:
    """Run and write ``batch``; returns its figures (runs, turns, seconds spent running and writing)."""
    from loopnb.record import Recorder

    started = time.perf_counter()
    recorder = Recorder()
    for seed in batch.seeds:
        try:
            engine, task = build(batch.config, seed, batch.task, [recorder])
            with contextlib.suppress(LoopError):  # a hard ending is a result, recorded like any other
                engine.run(task, run_id=run_id(batch.config.name, seed))
        except Exception as exc:  # the config's own code failed, not the loop: the sweep stops
            exc.add_note(
                f"in run {run_id(batch.config.name, seed)} of the sweep (config {batch.config.name}, "
                f"seed {seed}); the batches written before are kept: fix the config, then the same "
                "sweep with resume=True finishes"
            )
            raise
    ran = time.perf_counter()
    try:
        turns = write_batch(batch, recorder)
    except RecordingError as exc:
        if not isinstance(exc.__cause__, OSError) or exc.__cause__.errno not in _FULL:
            raise
        raise RecordingError(
            f"the disk is full ({os.strerror(exc.__cause__.errno)}) writing batch "
            f"{batch.index} of config {batch.config.name}; the batches written before are kept: "
            "free some space, then the same sweep with resume=True finishes",
            path=batch.out,
        ) from exc
    return {
        "config": batch.config.name,
        "batch": batch.index,
        "runs": len(batch.seeds),
        "turns": turns,
        "run_seconds": ran - started,
        "write_seconds": time.perf_counter() - ran,
        "pid": os.getpid(),
    }


def write_batch(batch: Batch, recorder: Any) -> int:
    """Write what ``recorder`` holds as ``batch``'s file; returns the number of turns."""
    import pandas as pd

    from loopnb.record._arrow import pyarrow
    from loopnb.record._frames import turn_table
    from loopnb.record._jsonl import make_header
    from loopnb.record._parquet import write_frames

    pa, _ = pyarrow()
    objects, lines = recorder.exported_events()
    turns = turn_table(objects)
    seed_of = {run_id(batch.config.name, s): s for s in batch.seeds}
    turns["seed"] = pd.array(turns["run_id"].map(seed_of).to_numpy(), dtype="Int64")
    meta = make_header(
        redacted=recorder.redact is not None,
        run_ids=list(dict.fromkeys(e.run_id for e in objects)),
        sweep={
            "name": batch.sweep,
            "config": batch.config.name,
            "batch": batch.index,
            "seeds": list(batch.seeds),
        },
    )
    write_frames(batch.path, meta, [turns], [lines], extra=extra_fields(pa))
    return len(turns)


def extra_fields(pa: Any) -> list[Any]:
    """The Arrow fields a batch file has after the turns' own: the run's ``seed``."""
    return [pa.field("seed", pa.int64())]


def written(out: str | Path, configs: Sequence[str]) -> set[tuple[str, int]]:
    """The ``(config, index)`` of every batch already written under ``out`` (in a batch's own
    file, or in a compacted one)."""
    done: set[tuple[str, int]] = set()
    for config in configs:
        for first, last, _ in batch_files(partition(out, config), every=True):
            done.update((config, i) for i in range(first, last + 1))
    return done


def batches_of(path: Path) -> tuple[int, int] | None:
    """The first and last batch a file's name says it holds (``part-000003.parquet``: 3 and 3;
    ``part-000000-000009.parquet``: 0 to 9), or ``None`` for a name that is neither."""
    stem = path.name.removeprefix("part-").removesuffix(".parquet")
    first, _, last = stem.partition("-")
    if not first.isdigit() or not (last.isdigit() or not last) or path.name == stem:
        return None
    span = (int(first), int(last or first))
    return span if span[0] <= span[1] else None


def batch_files(folder: Path, *, every: bool = False) -> list[tuple[int, int, Path]]:
    """A config's folder's files as ``(first batch, last batch, path)``, in batch order. A file
    whose batches all are in a wider file is left out (a compaction stopped before it removed the
    files it had merged: the merged one is whole, and read instead), unless ``every``."""
    if not folder.is_dir():
        return []
    found = sorted(
        (span[0], -span[1], p) for p in folder.glob("part-*.parquet") if (span := batches_of(p)) is not None
    )
    out: list[tuple[int, int, Path]] = []
    reach = -1  # the last batch a file kept so far holds
    for first, minus_last, path in found:
        if every or -minus_last > reach:
            out.append((first, -minus_last, path))
            reach = max(reach, -minus_last)
    return out


def sweep_files(root: Path) -> list[Path]:
    """Every batch file of the sweep in ``root`` (each ``config=NAME`` folder), as ``batch_files``
    keeps them; a ``part-*.parquet`` whose name gives no batch number is kept too."""
    out: list[Path] = []
    for folder in sorted(root.glob("config=*")):
        kept = {p for _, _, p in batch_files(folder)}
        out.extend(p for p in sorted(folder.glob("part-*.parquet")) if p in kept or batches_of(p) is None)
    return out
