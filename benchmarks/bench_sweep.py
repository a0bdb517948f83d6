"""Benchmark ``loopnb.sweep`` on Dask distributed: throughput with 2 workers against 1, the
scheduler's overhead per run, and an estimate of a 1,000,000-run sweep on 32 workers.

A script that prints figures (not a timed test); every figure is a median over repeats, and the
1-worker and 2-worker sweeps alternate so that both meet the same load on a shared machine.

    PYTHONPATH=. python benchmarks/bench_sweep.py            # 10,000 runs per sweep (a few minutes)
    PYTHONPATH=. python benchmarks/bench_sweep.py --quick    # 3,000 runs, a smoke run

The runs are the built-in scenarios but ``hanging_tool`` (whose hung call waits 0.2 s of real time
for its timeout, 100 times a scenario run), each over the same seeds. Clusters are
``LocalCluster(processes=True, threads_per_worker=1)`` on 127.0.0.1, started and warmed up before
any timing (the workers have imported loopnb, pandas and pyarrow).

1. In this process, no Dask: each batch run and written by the very function a worker calls,
   for the per-run cost (running, recording and writing) and the per-batch cost of a write.
2. Dask's own cost per task: 2,000 tasks that do nothing, submitted and gathered.
3. The sweep on 1 worker and on 2 workers: wall time, runs per second, the speed-up, and the
   overhead per run: the wall time the workers were not running or writing a batch, per run.
   Beside it, the machine's own ceiling for this work: the same batches on a plain
   ``multiprocessing`` pool of 1 and of 2 processes (no Dask, no scheduler).
4. The estimate for 1,000,000 runs on 32 workers, from the figures of 1 to 3.
"""

from __future__ import annotations

import argparse
import logging
import math
import multiprocessing
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import distributed
import psutil

import loopnb
from loopnb import scenarios
from loopnb._sweep._batch import run_batch
from loopnb._sweep._plan import MAX_BATCH, plan

NAMES = [n for n in scenarios.names() if n != "hanging_tool"]


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} cores"


def cluster(n: int) -> tuple[Any, Any]:
    c = distributed.LocalCluster(
        n_workers=n,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
        silence_logs=logging.ERROR,
    )
    return c, distributed.Client(c, set_as_default=False)


def in_process(seeds: int, batch: int, root: Path) -> dict[str, float]:
    """Every batch of the sweep run and written here, one after the other."""
    p = plan(NAMES, seeds=seeds, configs=None, batch=batch)
    run_batch(plan(NAMES, seeds=1, configs=None, batch=1).batches(str(root / "warm"))[0])
    shutil.rmtree(root / "warm")  # the first write imports what writing needs: not timed
    figures = [run_batch(b) for b in p.batches(str(root))]
    runs = sum(f["runs"] for f in figures)
    return {
        "runs": runs,
        "batches": len(figures),
        "run": sum(f["run_seconds"] for f in figures) / runs,
        "write": sum(f["write_seconds"] for f in figures) / runs,
        "write_per_batch": sum(f["write_seconds"] for f in figures) / len(figures),
        "turns": sum(f["turns"] for f in figures),
        "bytes": sum(p.stat().st_size for p in root.rglob("*.parquet")),
    }


def noop(x: int) -> int:
    return x


def task_cost(client: Any, n: int) -> float:
    """Seconds per task of ``n`` tasks that do nothing, submitted at once and gathered."""
    start = time.perf_counter()
    futures = client.map(noop, range(n), pure=False)
    client.gather(futures)
    return (time.perf_counter() - start) / n


def pool_run(pool: Any, pids: list[int], seeds: int, batch: int, root: Path) -> dict[str, float]:
    """The same batches on a plain process pool: the speed-up the machine allows this work."""
    out = root / f"p{len(pids)}-{time.perf_counter_ns()}"
    batches = plan(NAMES, seeds=seeds, configs=None, batch=batch).batches(str(out))
    cpu = cpu_seconds(pids)
    start = time.perf_counter()
    figures = pool.map(run_batch, batches, chunksize=1)
    wall = time.perf_counter() - start
    cores = (cpu_seconds(pids) - cpu) / wall
    shutil.rmtree(out)
    runs = sum(f["runs"] for f in figures)
    run = sum(f["run_seconds"] for f in figures) / runs
    return {"wall": wall, "runs": runs, "rate": runs / wall, "run": run, "cores": cores}


def cpu_seconds(pids: list[int]) -> float:
    """User and system CPU seconds the processes ``pids`` have used."""
    total = 0.0
    for pid in pids:
        t = psutil.Process(pid).cpu_times()
        total += t.user + t.system
    return total


def one_sweep(client: Any, workers: int, seeds: int, batch: int, root: Path) -> dict[str, float]:
    out = root / f"w{workers}-{time.perf_counter_ns()}"
    pids = list(client.run(os.getpid).values())
    cpu, here = cpu_seconds(pids), cpu_seconds([os.getpid()])
    start = time.perf_counter()
    result = loopnb.sweep(NAMES, seeds=seeds, out=out, cluster=client, batch=batch, progress=False)
    wall = time.perf_counter() - start
    cores = (cpu_seconds(pids) - cpu) / wall
    client_cores = (cpu_seconds([os.getpid()]) - here) / wall  # the client and the scheduler
    f = result.figures
    runs = int(f.runs.sum())
    busy = float(f.run_seconds.sum() + f.write_seconds.sum())
    shutil.rmtree(out)
    return {
        "wall": wall,
        "runs": runs,
        "rate": runs / wall,
        "run": float(f.run_seconds.sum()) / runs,
        "overhead": (wall * workers - busy) / runs,
        "load": os.getloadavg()[0],
        "cores": cores,
        "client": client_cores,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    logging.getLogger("distributed").setLevel(logging.ERROR)  # the clusters' closing words
    seeds = 200 if args.quick else math.ceil(10_000 / len(NAMES))
    batch = 100
    repeats = 1 if args.quick else args.repeats
    print(f"loopnb sweep benchmark: {len(NAMES)} scenarios x {seeds} seeds = {len(NAMES) * seeds} runs")
    print(f"  {load()} at the start; Python {sys.version.split()[0]}, distributed {distributed.__version__}")
    root = Path(tempfile.mkdtemp(prefix="bench-sweep-"))
    try:
        _bench(root, seeds, batch, repeats)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _bench(root: Path, seeds: int, batch: int, repeats: int) -> None:
    local = in_process(seeds, batch, root / "here")
    big = in_process(seeds, seeds, root / "big")  # one batch per config
    # a write costs fixed + per_run x runs: fitted from batches of `batch` runs and of `seeds` runs
    per_run_write = (big["write_per_batch"] - local["write_per_batch"]) / (seeds - batch)
    fixed = max(0.0, local["write_per_batch"] - per_run_write * batch)
    ms = 1e3
    print("\n1. in this process (no Dask), batches of", batch)
    turns = local["turns"] / local["runs"]
    print(f"  a run, recorded in memory: {local['run'] * ms:.3f} ms ({turns:.2f} turns a run)")
    print(f"  writing a batch: {local['write_per_batch'] * ms:.1f} ms ({local['write'] * ms:.3f} ms a run)")
    fit = f"{fixed * ms:.1f} ms a batch + {per_run_write * ms:.3f} ms a run"
    print(f"  writing, fitted over batches of {batch} and {seeds}: {fit}")
    print(f"  on disk: {local['bytes'] / local['runs'] / 1024:.2f} KiB a run (turns and events)")

    c1, client1 = cluster(1)
    c2, client2 = cluster(2)
    context = multiprocessing.get_context("spawn")
    pools = {1: context.Pool(1), 2: context.Pool(2)}
    pool_pids = {n: [c.pid for c in pool._pool] for n, pool in pools.items()}
    try:
        for n, pool in pools.items():
            pool_run(pool, pool_pids[n], 4, 1, root)  # warm
        for client in (client1, client2):  # warm: every worker has imported what a batch needs
            loopnb.sweep(
                NAMES, seeds=4, out=root / f"warm-{id(client)}", cluster=client, batch=1, progress=False
            )
        cost = statistics.median(task_cost(client2, 2000) for _ in range(3))
        print("\n2. Dask's own cost: a task that does nothing, 2,000 at once on 2 workers")
        print(f"  {cost * 1e3:.3f} ms a task: {cost / batch * 1e3:.4f} ms a run at {batch} runs a batch")
        rounds: dict[int, list[dict[str, float]]] = {1: [], 2: []}
        plain: dict[int, list[dict[str, float]]] = {1: [], 2: []}
        for _ in range(repeats):
            for workers, client in ((1, client1), (2, client2)):
                rounds[workers].append(one_sweep(client, workers, seeds, batch, root))
            for processes, pool in pools.items():
                plain[processes].append(pool_run(pool, pool_pids[processes], seeds, batch, root))
    finally:
        client1.close(), client2.close(), c1.close(), c2.close()
        for pool in pools.values():
            pool.close()
    med = {w: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for w, rs in rounds.items()}
    bare = {w: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for w, rs in plain.items()}
    print(f"\n3. the sweep, {int(med[1]['runs'])} runs in batches of {batch} (median of {repeats})")
    for w in (1, 2):
        m = med[w]
        share = m["overhead"] / m["run"]
        print(
            f"  {w} worker{'s' if w > 1 else ' '}: {m['wall']:.2f} s, {m['rate']:,.0f} runs/s; a run "
            f"{m['run'] * ms:.3f} ms on the worker; overhead {m['overhead'] * ms:.3f} ms a run = "
            f"{share:.1%} of a run"
        )
        print(
            f"    CPU: the workers had {m['cores']:.2f} cores, the client and scheduler {m['client']:.2f} "
            f"(load average {m['load']:.2f} after); {m['rate'] / m['cores']:,.0f} runs a worker CPU-second"
        )
    speedup = med[2]["rate"] / med[1]["rate"]
    print(f"  speed-up, 2 workers over 1: {speedup:.2f}x (target >= 1.5x, aim 1.7x)")
    best = max(r["rate"] for r in rounds[2]) / max(r["rate"] for r in rounds[1])
    print(f"  best round against best round: {best:.2f}x")
    per_cpu = (med[2]["rate"] / med[2]["cores"]) / (med[1]["rate"] / med[1]["cores"])
    print(
        f"  per worker CPU-second, 2 workers do {per_cpu:.0%} of what 1 does: with 2 free cores, "
        f"{2 * per_cpu:.2f}x (what the machine's other load took away, put back)"
    )
    print(
        "  each round's speed-up: "
        + ", ".join(
            f"{b['rate'] / a['rate']:.2f}x ({a['cores']:.2f} / {b['cores']:.2f} cores)"
            for a, b in zip(rounds[1], rounds[2], strict=True)
        )
    )
    ceiling = bare[2]["rate"] / bare[1]["rate"]
    print(
        f"  the same batches on a plain process pool (no Dask): 1 process {bare[1]['rate']:,.0f} runs/s "
        f"(a run {bare[1]['run'] * ms:.3f} ms), 2 processes {bare[2]['rate']:,.0f} runs/s "
        f"(a run {bare[2]['run'] * ms:.3f} ms, {bare[2]['cores']:.2f} cores): {ceiling:.2f}x, the ceiling "
        "this machine allowed meanwhile"
    )
    print(f"  Dask's 2-worker throughput is {med[2]['rate'] / bare[2]['rate']:.0%} of the 2-process pool's")
    print(f"  {load()} at the end")

    n, workers = 1_000_000, 32
    b = max(1, min(MAX_BATCH, math.ceil(n / (8 * workers))))
    batches = math.ceil(n / b)
    per_run = med[1]["run"] + per_run_write
    per_batch = fixed + cost
    work = n * per_run + batches * per_batch
    tail = b * per_run + per_batch
    estimate = work / workers + tail
    print(f"\n4. estimate: {n:,} runs on {workers} workers (one core each, as fast as these)")
    rule = f"{n:,} / (8 x {workers}), at most {MAX_BATCH}"
    print(f"  batches of {b} (loopnb's choice: {rule}): {batches} tasks, {batches} files")
    runs_part = (
        f"{n:,} runs x {per_run * ms:.3f} ms (run {med[1]['run'] * ms:.3f} + write {per_run_write * ms:.3f})"
    )
    batch_part = (
        f"{batches} batches x {per_batch * ms:.1f} ms (write {fixed * ms:.1f} + task {cost * ms:.2f})"
    )
    print(f"  = ({runs_part}\n     + {batch_part}) / {workers} + the last batch {tail:.1f} s")
    size = n * local["bytes"] / local["runs"] / 2**30
    rate = n / estimate
    print(f"  = {estimate:.0f} s ({estimate / 60:.1f} min), about {rate:,.0f} runs/s, {size:.1f} GiB written")
    print("  plus starting the cluster; assuming storage that keeps up and workers as fast as these")
    print(f"  the scheduler spends about {batches * cost:.1f} s on its {batches} tasks: not the bottleneck")


if __name__ == "__main__":
    main()
