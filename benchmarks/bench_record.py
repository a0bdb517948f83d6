"""Benchmark the recorder: its cost per turn, the memory it holds, its frames, and its files.

A script that prints figures (not a timed test). As issue 30 asks ("How to measure"): each timed
run's garbage is collected before it starts, the candidates are interleaved round by round, and
every figure is the median [min-max] over the rounds, with the machine's load average printed.

    PYTHONPATH=. python benchmarks/bench_record.py            # the full run (several minutes)
    PYTHONPATH=. python benchmarks/bench_record.py --quick    # small sizes, a smoke run

1. The recorder's own cost a turn, in CPU time: an engine run (a scripted model, one tool call a
   turn, the default loop detector) with a no-op observer (the engine then builds its events),
   with an in-memory ``Recorder``, with a streaming one (a write a turn) and with an observer that
   only keeps the events in a list (what holding them costs, in cyclic-collector passes). The
   recorder's cost is its run's time less the no-op run's, in the same round (budget: 2 µs a turn
   in memory, 35 µs streaming), at 10,000 and 100,000 turns with the collector on; the time spent
   in the collector is shown beside.
2. The memory a recorder holds a turn (``tracemalloc``), the run's engine and result dropped,
   replies made by the model as the run goes (as a real model's are).
3. ``recorder.turns`` and ``recorder.events`` read the first time, at 100,000 turns (target: 0.5 s
   for the turns), against ``pandas.DataFrame.from_records`` of the same rows.
4. Writing and reading JSON Lines and Parquet (wall time: the files are written to disk), and
   loading 1,000,000 turns from Parquet (10,000 in the quick run).
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from loopnb import Engine, FunctionModel, ModelReply, ScriptedModel, ToolCall, ToolError, Usage, load, tool
from loopnb.record import TURNS, Recorder


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return "fn main() {}"


@tool
def read_source(path: str) -> str:
    """Read a file; ``.rz`` files do not exist."""
    if path.endswith(".rz"):
        raise ToolError(f"file {path} not found")
    return "fn main() {}"


def spread(values: list[float], digits: int = 2) -> str:
    """``median [min-max]``."""
    return f"{statistics.median(values):.{digits}f} [{min(values):.{digits}f}-{max(values):.{digits}f}]"


def load_average() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (5 min {five:.2f}) on {os.cpu_count()} cores"


class GcTime:
    """Seconds spent in the cyclic garbage collector's passes, summed (via ``gc.callbacks``)."""

    def __init__(self) -> None:
        self.total = 0.0
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._start = time.process_time()
        else:
            self.total += time.process_time() - self._start


GC_TIME = GcTime()
gc.callbacks.append(GC_TIME)


# -- 1. the recorder's cost a turn ----------------------------------------------------------------


def engine_run_us(n: int, observers: list[Any]) -> tuple[float, float]:
    """CPU µs a turn of one engine run of ``n`` tool turns and the final reply, and the part of it
    spent in the cyclic collector."""
    steps = [ToolCall("read_file", {"path": f"src/{i % 7}.rs"}) for i in range(n)] + ["done"]
    engine = Engine(ScriptedModel(steps), tools=[read_file], observers=observers)
    gc.collect()  # this run pays for its own garbage only
    in_gc = GC_TIME.total
    start = time.process_time()
    engine.run("task")
    took = time.process_time() - start
    for observer in observers:
        if isinstance(observer, Recorder):
            observer.close()
    return took / (n + 1) * 1e6, (GC_TIME.total - in_gc) / (n + 1) * 1e6


def bench_cost(sizes: list[int], rounds: int, tmp: Path) -> None:
    print(f"\n## 1. The recorder's cost a turn (CPU µs; median [min-max] of {rounds} interleaved rounds)")
    counter = iter(range(10**9))
    candidates: dict[str, Callable[[], list[Any]]] = {
        "no-op": lambda: [lambda event: None],
        "memory": lambda: [Recorder()],
        "stream": lambda: [Recorder(tmp / f"engine-{next(counter)}.jsonl")],
        "retain": lambda: [[].append],
    }
    for n in sizes:
        runs: dict[str, list[float]] = {k: [] for k in candidates}
        in_gc: dict[str, list[float]] = {k: [] for k in candidates}
        for _ in range(rounds):  # interleaved, so that the machine's load hits every candidate alike
            for name, make in candidates.items():
                us, gc_us = engine_run_us(n, make())
                runs[name].append(us)
                in_gc[name].append(gc_us)
        print(f"{n:,} turns, {load_average()}")
        print(f"  {'':10} {'run, µs a turn':>24} {'added to no-op':>24} {'in the collector':>24}")
        for name in candidates:
            added = [a - b for a, b in zip(runs[name], runs["no-op"], strict=True)]
            shown = spread(added) if name != "no-op" else "-"
            print(f"  {name:10} {spread(runs[name]):>24} {shown:>24} {spread(in_gc[name]):>24}")


# -- 2. the memory a recorder holds -------------------------------------------------------------


def held_bytes_a_turn(n: int, make: Callable[[], Any]) -> float:
    """The bytes still allocated after a run of ``n`` turns, its engine and result dropped, but for
    the observer ``make()`` returns, a turn (``tracemalloc``)."""
    count = iter(range(n + 1))

    def answer(messages: object, tools: object) -> ModelReply:
        i = next(count)
        if i == n:
            return ModelReply(text="It prints nothing.")
        path = f"src/{i}.{'rs' if i % 2 else 'rz'}"
        return ModelReply(tool_calls=(ToolCall("read_source", {"path": path}),), usage=Usage(120, 14))

    engine = Engine(FunctionModel(answer), tools=[read_source])
    gc.collect()
    tracemalloc.start()
    observer = make()
    engine.subscribe(observer)
    engine.run("What does src/main.rs do?")
    if isinstance(observer, Recorder):
        observer.close()
    del engine
    gc.collect()
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return held / n


def bench_memory(n: int, tmp: Path) -> None:
    print(f"\n## 2. Memory held a turn, {n:,} turns (tracemalloc; every other call fails)")
    counter = iter(range(10**9))
    candidates: dict[str, Callable[[], Any]] = {
        "no-op": lambda: lambda event: None,
        "memory": Recorder,
        "stream": lambda: Recorder(tmp / f"memory-{next(counter)}.jsonl"),
        "retain": lambda: [].append,
    }
    for name, make in candidates.items():
        print(f"  {name:10} {held_bytes_a_turn(n, make):>8,.0f} bytes a turn")


# -- 3. the frames --------------------------------------------------------------------------------


def captured_events(turns: int, *, runs: int = 1) -> list[Any]:
    """The events of ``runs`` real engine runs, ``turns`` turns in all: per run, alternately a
    failing call (soft) and a successful one (120 tokens in, 14 out a reply), then the final
    reply. Captured by an observer that keeps them in a list, to be replayed into recorders."""
    events: list[Any] = []
    per_run = max(1, turns // runs)
    usage = Usage(input_tokens=120, output_tokens=14)
    for r in range(runs):
        steps: list[Any] = [
            ModelReply(
                tool_calls=(ToolCall("read_source", {"path": f"src/{i}.{'rs' if i % 2 else 'rz'}"}),),
                usage=usage,
            )
            for i in range(per_run - 1)
        ]
        engine = Engine(ScriptedModel([*steps, "It prints nothing."]), tools=[read_source])
        engine.subscribe(events.append)
        engine.run("What does src/main.rs do?", run_id=f"run-{r:05d}")
    return events


def _fed(events: list[Any]) -> Recorder:
    rec = Recorder()
    for event in events:
        rec(event)
    return rec


def first_read(events: list[Any], frame: str) -> float:
    """CPU seconds of ``recorder.<frame>`` read the first time, by a recorder that has observed
    ``events`` and built nothing."""
    rec = _fed(events)
    gc.collect()
    start = time.process_time()
    getattr(rec, frame)
    return time.process_time() - start


def from_records(rows: list[tuple[Any, ...]]) -> float:
    gc.collect()
    start = time.process_time()
    pd.DataFrame.from_records(rows, columns=list(TURNS.names))
    return time.process_time() - start


def bench_frames(n: int, rounds: int) -> list[Any]:
    events = captured_events(n, runs=max(1, n // 1000))
    rows = [tuple(row.values()) for row in _fed(events).turn_rows()]
    print(
        f"\n## 3. The frames of {n:,} turns ({len(events):,} events) read the first time "
        f"(CPU s; median [min-max] of {rounds} interleaved rounds)"
    )
    timed: dict[str, list[float]] = {"turns": [], "from_records": [], "events": []}
    for _ in range(rounds):
        timed["turns"].append(first_read(events, "turns"))
        timed["from_records"].append(from_records(rows))
        timed["events"].append(first_read(events, "events"))
    ratios = [a / b for a, b in zip(timed["turns"], timed["from_records"], strict=True)]
    print(f"  {load_average()}")
    print(f"  recorder.turns                      {spread(timed['turns'], 3)} s (target 0.5 s)")
    print(f"  DataFrame.from_records, same rows   {spread(timed['from_records'], 3)} s")
    print(f"  recorder.turns / from_records       {spread(ratios)}x")
    print(f"  recorder.events                     {spread(timed['events'], 3)} s")
    return events


# -- 4. files ---------------------------------------------------------------------------------------


def timed_wall(fn: Callable[[], object]) -> float:
    gc.collect()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def bench_files(events: list[Any], rounds: int, tmp: Path, factor: int) -> None:
    from loopnb.record._lines import dump_event
    from loopnb.record._parquet import write_frames

    rec = _fed(events)
    n = len(rec.turns)
    jsonl, pq = tmp / "r.jsonl", tmp / "r.parquet"
    steps: dict[str, Callable[[], object]] = {
        "save jsonl": lambda: rec.save(jsonl),
        "load jsonl .turns": lambda: load(jsonl).turns,
        "save parquet": lambda: rec.save(pq),
        "load parquet .turns": lambda: load(pq).turns,
        "load parquet .events": lambda: load(pq).events,
    }
    timed: dict[str, list[float]] = {k: [] for k in steps}
    for _ in range(rounds):
        for name, step in steps.items():
            timed[name].append(timed_wall(step))
    print(f"\n## 4. Files of {n:,} turns (wall s; median [min-max] of {rounds} rounds; {load_average()})")
    for name, values in timed.items():
        print(f"  {name:22} {spread(values, 3)} s")
    sizes = f"JSON Lines {jsonl.stat().st_size / 1e6:.1f} MB, Parquet {pq.stat().st_size / 1e6:.1f} MB"
    print(f"  sizes: {sizes}")

    loaded = load(pq)
    turns, lines = loaded.turns, [dump_event(e) for e in loaded.event_objects]
    meta = {k: v for k, v in loaded.meta.items() if k not in ("path", "n_turns", "n_events")}

    def renamed(df: pd.DataFrame, k: int) -> pd.DataFrame:
        df = df.copy()
        df["run_id"] = df["run_id"] + f"-{k}"
        return df

    big = tmp / "million.parquet"
    write_frames(big, meta, (renamed(turns, k) for k in range(factor)), (lines for _ in range(factor)))
    seconds = [timed_wall(lambda: load(big).turns) for _ in range(rounds)]
    assert len(load(big).turns) == n * factor
    size = f"{big.stat().st_size / 1e6:.0f} MB"
    print(f"  load(path).turns of {n * factor:,} turns ({size}): {spread(seconds, 3)} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, fewer rounds")
    parser.add_argument("--rounds", type=int, default=None, help="rounds of each figure (default 7; 3 quick)")
    args = parser.parse_args()
    quick = args.quick
    rounds = args.rounds or (3 if quick else 7)
    print(f"python {sys.version.split()[0]}; {load_average()}; {rounds} rounds")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        bench_cost([1_000, 5_000] if quick else [10_000, 100_000], rounds, tmp)
        bench_memory(2_000 if quick else 20_000, tmp)
        events = bench_frames(5_000 if quick else 100_000, rounds)
        bench_files(events, 3 if quick else 5, tmp, factor=2 if quick else 10)


if __name__ == "__main__":
    main()
