"""Benchmark ``loopnb.query`` over a sweep's Parquet dataset of 10,000,000 recorded turns, as the
sweep writes it and compacted (``Sweep.compact``), against the same DuckDB query over the same rows
written as one plain Parquet table.

A script that prints figures (not a timed test). Every file is read once before timing (all warm
in the page cache); then each round times every candidate once, in turn (interleaved, so a load
that comes and goes touches them alike), each after a ``gc.collect()``. It prints the median and
[min-max] over the rounds (at least 7), and the machine's load average before and after.

    PYTHONPATH=. python benchmarks/bench_query.py            # 10,000,000 turns (a few minutes)
    PYTHONPATH=. python benchmarks/bench_query.py --quick    # 1,000,000 turns, a smoke run

How the data is made: a real sweep, ``loopnb.sweep`` of 5 built-in scenarios x 2,000 seeds in
batches of 2,000 runs (the largest batch loopnb chooses, the one it chooses for a sweep this
big), gives 5 batch files, one per config, each a loopnb recording (turns table and events).
Those files are then copied byte for byte under new batch numbers, config by config, until the
dataset holds at least 10,000,000 turns: the layout a sweep of some 3,000,000 runs over 5 configs
writes (``config=NAME/part-*.parquet``, some 1,000 files). The copies repeat run ids, which a
``group by channel, producer`` does not see. The compacted sweep is a copy of that folder after
``Sweep(copy).compact()`` (what ``loopnb.sweep`` does itself when a sweep of that many files
completes). The plain table is the same rows (``config`` as a column) written with
``pyarrow.dataset.write_dataset`` as one file of 1,048,576-row groups.

The query: ``select channel, producer, count(*) n from turns group by channel, producer``, by
``loopnb.query(sql, folder)`` (finding the files, the views, DuckDB, the pandas frame), against
a fresh DuckDB connection running it over ``read_parquet(...)`` into a pandas frame.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

import loopnb

SCENARIOS = ["mistyped_path", "vague_error", "stubborn_loop", "flaky_tool_breaker", "fallback_chain"]
SQL = "select channel, producer, count(*) n from turns group by channel, producer"


def timed(fn: Callable[[], object]) -> float:
    """Seconds ``fn`` takes, the garbage of what ran before collected first."""
    gc.collect()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def spread(values: list[float]) -> str:
    """``median [min-max]`` of ``values`` (seconds)."""
    return f"{statistics.median(values):.3f} s [{min(values):.3f}-{max(values):.3f}]"


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} cores"


def make_sweep(root: Path, seeds: int) -> loopnb.Sweep:
    return loopnb.sweep(SCENARIOS, seeds=seeds, out=root, batch=seeds, workers=2, progress=False)


def replicate(root: Path, target: int) -> tuple[int, int]:
    """Copy each config's batch file under new batch numbers until ``target`` turns; returns the
    turns and files the dataset then holds."""
    originals = sorted(root.glob("config=*/part-000000.parquet"))
    per_set = sum(pq.ParquetFile(p).metadata.num_rows for p in originals)
    sets = -(-target // per_set)
    for p in originals:
        for k in range(1, sets):
            shutil.copyfile(p, p.with_name(f"part-{k:06d}.parquet"))
    return per_set * sets, len(originals) * sets


def plain_table(root: Path, where: Path) -> Path:
    """The dataset's rows as one plain Parquet file."""
    hive = ds.partitioning(pa.schema([("config", pa.string())]), flavor="hive")
    data = ds.dataset(root, format="parquet", partitioning=hive)
    ds.write_dataset(
        data,
        where,
        format="parquet",
        basename_template="plain-{i}.parquet",
        max_rows_per_file=2**31 - 1,
        min_rows_per_group=1 << 20,
        max_rows_per_group=1 << 20,
    )
    (path,) = where.glob("plain-*.parquet")
    return path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    logging.getLogger("distributed").setLevel(logging.ERROR)
    target = 1_000_000 if args.quick else 10_000_000
    seeds = 400 if args.quick else 2000
    tmp = Path(tempfile.mkdtemp(prefix="bench-query-"))
    try:
        run(tmp, target, seeds, max(args.rounds, 7))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def compacted(root: Path, where: Path) -> Path | None:
    """A copy of the sweep's folder, compacted (``None`` where ``Sweep`` cannot compact)."""
    if not hasattr(loopnb.Sweep, "compact"):
        return None
    shutil.copytree(root, where)
    start = time.perf_counter()
    loopnb.Sweep(where).compact()
    files = sorted(where.glob("config=*/part-*.parquet"))
    groups = sum(pq.ParquetFile(p).metadata.num_row_groups for p in files)
    print(
        f"  compacted: {len(files)} files, {groups} row groups "
        f"({sum(p.stat().st_size for p in files) / 2**20:,.0f} MiB) in {time.perf_counter() - start:.1f} s"
    )
    return where


def duck(sql: str) -> object:
    con = duckdb.connect()
    try:
        return con.sql(sql).df()
    finally:
        con.close()


def hive(folder: Path) -> str:
    """The query over a sweep's files read by DuckDB itself, as ``loopnb.query`` reads them."""
    return SQL.replace(
        "from turns",
        f"from read_parquet('{folder}/config=*/part-*.parquet', hive_partitioning = true, "
        "hive_types = {'config': VARCHAR})",
    )


def run(tmp: Path, target: int, seeds: int, rounds: int) -> None:
    print(f"loopnb query benchmark: {target:,} turns; {load()}")
    root = tmp / "sweep"
    took = timed(lambda: make_sweep(root, seeds))
    n_base = len(loopnb.Sweep(root).turns)
    print(f"  a real sweep: {len(SCENARIOS)} configs x {seeds} seeds, {n_base:,} turns in {took:.1f} s")
    start = time.perf_counter()
    turns, files = replicate(root, target)
    copied = time.perf_counter() - start
    size = sum(p.stat().st_size for p in root.rglob("*.parquet"))
    print(f"  copied to {turns:,} turns in {files:,} files ({size / 2**20:,.0f} MiB) in {copied:.1f} s")
    start = time.perf_counter()
    plain = plain_table(root, tmp / "plain")
    meta = pq.ParquetFile(plain).metadata
    print(
        f"  the plain table: {meta.num_rows:,} rows in {meta.num_row_groups} row groups "
        f"({plain.stat().st_size / 2**20:,.0f} MiB) in {time.perf_counter() - start:.1f} s"
    )
    small = compacted(root, tmp / "compacted")
    plain_sql = SQL.replace("from turns", f"from read_parquet('{plain}')")
    sides: dict[str, Callable[[], object]] = {
        "loopnb.query, the sweep as written": lambda: loopnb.query(SQL, root),
        "DuckDB over those files (no loopnb)": lambda: duck(hive(root)),
    }
    if small is not None:
        sides["loopnb.query, the sweep compacted"] = lambda: loopnb.query(SQL, small)
        sides["DuckDB over the compacted files"] = lambda: duck(hive(small))
    sides["DuckDB over the plain table"] = lambda: duck(plain_sql)
    results = {name: fn() for name, fn in sides.items()}  # warm, and the answers to compare
    frames = [r.sort_values(["channel", "producer"]).reset_index(drop=True) for r in results.values()]
    assert all(f.equals(frames[0]) for f in frames), "the answers differ"
    assert int(frames[0].n.sum()) == turns
    times: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(rounds):
        for name, fn in sides.items():
            times[name].append(timed(fn))
    print(f"\n  {SQL}\n  over {turns:,} turns, median [min-max] of {rounds} interleaved rounds (each warm):")
    for name, t in times.items():
        print(f"    {name:<38} {spread(t)}")
    plain_t = times["DuckDB over the plain table"]
    for name in ("loopnb.query, the sweep as written", "loopnb.query, the sweep compacted"):
        if name in times:
            ratios = sorted(a / b for a, b in zip(times[name], plain_t, strict=True))
            print(
                f"  {name} / the plain table: {statistics.median(ratios):.2f}x "
                f"[{ratios[0]:.2f}-{ratios[-1]:.2f}] (same-round ratios; target <= 1.5x)"
            )
    print(f"  {len(frames[0])} groups; {load()} at the end")


if __name__ == "__main__":
    main()
