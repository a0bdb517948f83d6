"""Benchmark fault injection: what an injected tool costs when its fault does not fire, and a sweep.

A script that prints figures (not a timed test).

    PYTHONPATH=. python benchmarks/bench_faults.py            # the budget and the 2x2 x 200-seed sweep
    PYTHONPATH=. python benchmarks/bench_faults.py --quick    # fewer rounds, 20 seeds: a smoke run

1. Per call, in CPU time (``time.process_time``), an injected tool whose fault does not fire against
   the bare tool, in the same process: rounds interleave the variants (so that machine noise hits
   them alike), ``gc.collect()`` before each; each figure is the median over the rounds, with
   [min-max]. Through the engine (a scripted run of one call a turn, the defaults a user gets: no
   timeout, loop detector on): the tool injected with ``error(...).when(path="never")`` (no call
   matches) and with ``error(...).first(1)`` (past its first call: each call counts, none fires);
   and a plain function against its injected wrapper, called directly. The budget: at most 2 us
   a call more than the bare tool, per round, paired.
2. The ToolMaze 2x2 (explicit ``error`` / implicit ``wrong``, transient ``.first(2)`` / permanent)
   over 200 seeds of ``mistyped_path`` on a LocalCluster of 2 worker processes: the wall time of
   ``loopnb.sweep`` (starting the cluster included), of ``by_config()``, and the table.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import loopnb
from loopnb import Engine, ScriptedModel, SweepConfig, ToolCall, faults, inject, tool

BUDGET_US = 2.0


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return "fn main() {}"


def plain_read(path: str) -> str:
    return "fn main() {}"


def engine_us(tools: list, n: int) -> float:
    """CPU time per turn of one scripted run of ``n`` tool turns (and the final reply)."""
    steps = [ToolCall("read_file", {"path": "src/main.rs"}) for _ in range(n)] + ["done"]
    engine = Engine(ScriptedModel(steps), tools=tools)
    gc.collect()
    start = time.process_time()
    engine.run("task")
    return (time.process_time() - start) / (n + 1) * 1e6


def calls_us(fn: Callable[..., str], n: int) -> float:
    """CPU time per direct call of ``fn(path=...)``."""
    gc.collect()
    start = time.process_time()
    for _ in range(n):
        fn(path="src/main.rs")
    return (time.process_time() - start) / n * 1e6


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):7.3f} [{min(values):.3f}-{max(values):.3f}]"


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def bench_overhead(rounds: int, turns: int, calls: int) -> bool:
    print(f"\n## 1. An injected tool whose fault does not fire, per call (CPU us; {load()})")
    print(f"({rounds} interleaved rounds; the engine: {turns:,} turns a run; direct: {calls:,} calls)")
    variants: dict[str, Callable[[], float]] = {
        "engine, bare tool": lambda: engine_us([read_file], turns),
        'engine, .when(path="never")': lambda: engine_us(
            inject([read_file], {"read_file": faults.error("x").when(path="never")}), turns
        ),
        "engine, .first(1) spent": lambda: engine_us(
            inject([read_file], {"read_file": faults.error("x").first(1)}), turns
        ),
        "function, bare": lambda: calls_us(plain_read, calls),
        'function, .when(path="never")': lambda: calls_us(
            inject(plain_read, faults.error("x").when(path="never")), calls
        ),
    }
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for measure in variants.values():  # a warm-up round, not counted
        measure()
    for _ in range(rounds):
        for name, measure in variants.items():
            samples[name].append(measure())
    for name, values in samples.items():
        print(f"  {name:<32} {spread(values)} us")
    within = True
    print(f"the cost of the injection (paired per round, median [min-max]; budget <= {BUDGET_US:g} us):")
    pairs = [
        ('engine, .when(path="never")', "engine, bare tool"),
        ("engine, .first(1) spent", "engine, bare tool"),
        ('function, .when(path="never")', "function, bare"),
    ]
    for injected, bare in pairs:
        extra = [a - b for a, b in zip(samples[injected], samples[bare], strict=True)]
        ok = statistics.median(extra) <= BUDGET_US
        within &= ok
        print(f"  {injected:<32} +{spread(extra)} us  {'within budget' if ok else 'OVER BUDGET'}")
    return within


def bench_sweep(seeds: int, workers: int) -> None:
    print(f"\n## 2. The 2x2 over {seeds} seeds of mistyped_path on {workers} workers ({load()})")
    grid = {
        "explicit-transient": faults.error("disk busy").first(2),
        "explicit-permanent": faults.error("disk busy"),
        "implicit-transient": faults.wrong("").first(2),
        "implicit-permanent": faults.wrong(""),
    }
    configs = [SweepConfig(n, scenario="mistyped_path", faults={"read_file": f}) for n, f in grid.items()]
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        result = loopnb.sweep(
            configs=configs, seeds=seeds, out=Path(tmp) / "2x2", workers=workers, progress=False
        )
        took = time.perf_counter() - start
        start = time.perf_counter()
        table = result.by_config()
        tabled = time.perf_counter() - start
        runs = len(configs) * seeds
        rate = runs / took
        print(f"loopnb.sweep: {took:.1f} s wall, {runs:,} runs ({rate:,.0f} runs/s)", end="")
        print(", the cluster's start included")
        print(f"Sweep.by_config(): {tabled:.2f} s")
        shown = [
            "config",
            "runs",
            "ended_ok",
            "ended_hard",
            "tool_errors",
            "tool_recovery_rate",
            "false_successes",
        ]
        print(table[shown].to_string(index=False))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds and seeds: a smoke run")
    parser.add_argument("--no-sweep", action="store_true", help="only the per-call figures")
    args = parser.parse_args()
    rounds = 7 if args.quick else 11
    within = bench_overhead(
        rounds, turns=1_000 if args.quick else 4_000, calls=20_000 if args.quick else 200_000
    )
    if not args.no_sweep:
        bench_sweep(20 if args.quick else 200, workers=2)
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())
