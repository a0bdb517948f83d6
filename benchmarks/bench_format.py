"""Benchmark the recording format: bytes a turn, loading against json.loads, building the turns frame.

A script that prints figures (not a timed test); every time is the median of three.

    PYTHONPATH=. python benchmarks/bench_format.py            # the issue's workload (20,000 turns)
    PYTHONPATH=. python benchmarks/bench_format.py --turns 2000

The workload: ``turns`` turns of ``add(a=i, b=1)``, every 10th turn ``fail(x=i)`` raising
``ToolError``, streamed by ``Recorder(path)``. Targets: at most 600 bytes a turn; ``load`` (turns
frame included) at most 2.0x ``json.loads`` of the same file's lines; ``recorder.turns`` for
100,000 turns under 0.5 s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from loopnb import Engine, ScriptedModel, ToolCall, ToolError, load, tool
from loopnb.record import Recorder


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def fail(x: int) -> str:
    """Fail, softly."""
    raise ToolError(f"fail {x} failed")


def workload(turns: int) -> ScriptedModel:
    steps: list[object] = [
        ToolCall("fail", {"x": i}) if i % 10 == 9 else ToolCall("add", {"a": i, "b": 1}) for i in range(turns)
    ]
    return ScriptedModel([*steps, "done"])  # type: ignore[list-item]


def run(turns: int, recorder: Recorder) -> None:
    Engine(workload(turns), tools=[add, fail], observers=[recorder], loop_detector=None).run("add them up")


def median_time(fn: Callable[[], object], repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20_000)
    parser.add_argument("--frame-turns", type=int, default=100_000)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "workload.jsonl"
        with Recorder(path) as recorder:
            run(args.turns, recorder)
        size = path.stat().st_size
        per_turn = size / args.turns
        print(f"recording: {args.turns:,} turns, {size:,} bytes: {per_turn:.1f} bytes a turn (target <= 600)")

        lines = path.read_bytes().splitlines()
        baseline = median_time(lambda: [json.loads(line) for line in lines])
        loading = median_time(lambda: load(path).turns)
        print(
            f"json.loads of the lines: {baseline:.3f} s; load(path).turns: {loading:.3f} s; "
            f"ratio {loading / baseline:.2f}x (target <= 2.0x)"
        )

    source = Recorder()
    run(args.frame_turns, source)
    fresh = []
    for _ in range(3):  # a recorder that has seen every event and built nothing yet, for each repeat
        recorder = Recorder()
        for event in source.event_objects:
            recorder(event)
        fresh.append(recorder)
    building = median_time(lambda: fresh.pop().turns)
    print(f"recorder.turns, {args.frame_turns:,} turns, first read: {building:.3f} s (target < 0.5 s)")


if __name__ == "__main__":
    main()
