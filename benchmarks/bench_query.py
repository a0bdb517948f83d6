"""Benchmark ``loopnb.query`` over a sweep's Parquet dataset of 10,000,000 recorded turns, against
the same DuckDB query over the same rows written as one plain Parquet table.

A script that prints figures (not a timed test); each time is the median of several repeats,
the two sides alternating, every file read once before timing (both warm in the page cache).

    PYTHONPATH=. python benchmarks/bench_query.py            # 10,000,000 turns (a few minutes)
    PYTHONPATH=. python benchmarks/bench_query.py --quick    # 1,000,000 turns, a smoke run

How the data is made: a real sweep, ``loopnb.sweep`` of 5 built-in scenarios x 2,000 seeds in
batches of 2,000 runs (the largest batch loopnb chooses, the one it chooses for a sweep this
big), gives 5 batch files, one per config, each a loopnb recording (turns table and events).
Those files are then copied byte for byte under new batch numbers, config by config, until the
dataset holds at least 10,000,000 turns: the layout a sweep of some 3,000,000 runs over 5 configs
has (``config=NAME/part-*.parquet``, some 1,500 files). The copies repeat run ids, which a
``group by channel, producer`` does not see. The plain table is the same rows (``config`` as a
column) written with ``pyarrow.dataset.write_dataset`` as one file of 1,048,576-row groups.

The query: ``select channel, producer, count(*) n from turns group by channel, producer``, by
``loopnb.query(sql, folder)`` (finding the files, the views, DuckDB, the pandas frame), against
a fresh DuckDB connection running it over ``read_parquet('plain.parquet')`` into a pandas frame.
"""

from __future__ import annotations

import argparse
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
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


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
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    logging.getLogger("distributed").setLevel(logging.ERROR)
    target = 1_000_000 if args.quick else 10_000_000
    seeds = 400 if args.quick else 2000
    tmp = Path(tempfile.mkdtemp(prefix="bench-query-"))
    try:
        run(tmp, target, seeds, args.repeats)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(tmp: Path, target: int, seeds: int, repeats: int) -> None:
    one, five, _ = os.getloadavg()
    print(f"loopnb query benchmark: {target:,} turns; load average {one:.2f} (1 min), {five:.2f} (5 min)")
    root = tmp / "sweep"
    took = timed(lambda: make_sweep(root, seeds))
    base = loopnb.Sweep(root)
    n_base = len(base.turns)
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
    plain_sql = SQL.replace("from turns", f"from read_parquet('{plain}')")
    hive_sql = SQL.replace(
        "from turns",
        f"from read_parquet('{root}/config=*/part-*.parquet', hive_partitioning = true, "
        "hive_types = {'config': VARCHAR})",
    )

    def duck(sql: str) -> object:
        con = duckdb.connect()
        try:
            return con.sql(sql).df()
        finally:
            con.close()

    sides = {
        "loopnb.query over the sweep": lambda: loopnb.query(SQL, root),
        "DuckDB over the sweep's files (no loopnb)": lambda: duck(hive_sql),
        "DuckDB over the plain table": lambda: duck(plain_sql),
    }
    results = {name: fn() for name, fn in sides.items()}  # warm, and the answers to compare
    frames = [r.sort_values(["channel", "producer"]).reset_index(drop=True) for r in results.values()]
    assert all(f.equals(frames[0]) for f in frames), "the three answers differ"
    assert int(frames[0].n.sum()) == turns
    times: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(repeats):
        for name, fn in sides.items():
            times[name].append(timed(fn))
    med = {name: statistics.median(t) for name, t in times.items()}
    print(f"\n  {SQL}\n  over {turns:,} turns, median of {repeats} (each warm):")
    for name, t in med.items():
        print(f"    {name:<42} {t:.3f} s  (min {min(times[name]):.3f}, max {max(times[name]):.3f})")
    ours, plain_t = med["loopnb.query over the sweep"], med["DuckDB over the plain table"]
    print(f"  loopnb.query / plain table: {ours / plain_t:.2f}x (target <= 2x); {ours:.2f} s (target <= 5 s)")
    print(f"  {len(frames[0])} groups; load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
