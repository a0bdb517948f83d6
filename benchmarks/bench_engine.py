"""Engine speed: µs per turn against a hand-written floor loop, at 1,000 and 5,000 turns.

    python benchmarks/bench_engine.py [--repeats 9]

The floor is the workload's own loop as DESIGN.md defines it: a scripted model (a generator)
yielding ``(name, args)`` per turn, dict dispatch, try/except, appending a result record (a dict).
A stricter floor without the model or the record (a prebuilt list, a tuple appended) is printed
beside it. The engine runs with the defaults a user gets (no timeout, loop detector on, no
observers). Targets (DESIGN.md): at most 20x the floor per turn, and linear growth: the engine's
growth from 1k to 5k turns divided by the floor's own growth at most 1.3. Medians of several
repeats, the variants interleaved so that machine noise hits each alike; figures also with the
cyclic GC disabled.

A second workload fails: one call in three reads a path that is not there, each a different one
(the loop detector must remember every failing call it has not seen succeed). It runs with the
default loop detector and without one (``loop_detector=None``), collected before each timed run,
and prints the detector's cost as a ratio, median [min-max] (target <= 1.3x), then a 100,000-turn
run of it: how many failing calls the detector still holds at the end (DESIGN.md lets it forget a
call not seen in the last 1,000).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable, Iterator

from loopnb import Engine, LoopDetector, ScriptedModel, ToolCall, ToolError, tool


def _plain_add(a: int, b: int) -> int:
    return a + b


def floor_loop(n: int) -> float:
    """DESIGN.md's floor: a scripted model yielding (name, args), dict dispatch, a record per call."""
    script = [("add", {"a": i, "b": 1}) for i in range(n)]

    def scripted_model() -> Iterator[tuple[str, dict[str, int]]]:
        yield from script

    tools = {"add": _plain_add}
    records: list[dict[str, object]] = []
    start = time.perf_counter()
    for name, args in scripted_model():
        fn = tools.get(name)
        try:
            records.append({"tool": name, "value": fn(**args), "is_error": False})  # type: ignore[misc]
        except Exception as exc:
            records.append({"tool": name, "value": str(exc), "is_error": True})
    return time.perf_counter() - start


def strict_floor_loop(n: int) -> float:
    """Stricter still: no model at all (a prebuilt list) and a tuple per result."""
    script = [("add", {"a": i, "b": 1}) for i in range(n)]
    tools = {"add": _plain_add}
    results: list[tuple[str, object, bool]] = []
    start = time.perf_counter()
    for name, args in script:
        fn = tools.get(name)
        try:
            results.append((name, fn(**args), False))  # type: ignore[misc]
        except Exception as exc:
            results.append((name, str(exc), True))
    return time.perf_counter() - start


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def engine_loop(n: int) -> float:
    steps: list = [ToolCall("add", {"a": i, "b": 1}) for i in range(n)]
    engine = Engine(ScriptedModel([*steps, "done"]), tools=[add])
    start = time.perf_counter()
    result = engine.run("add things up")
    elapsed = time.perf_counter() - start
    assert len(result.tool_results) == n
    return elapsed


SIZES = (1000, 5000)
VARIANTS: dict[str, Callable[[int], float]] = {
    "floor": floor_loop,
    "strict": strict_floor_loop,
    "engine": engine_loop,
}


def measure(repeats: int) -> dict[str, float]:
    """Median µs per turn of every variant at every size, the variants interleaved per repeat."""
    samples: dict[str, list[float]] = {f"{k}_{n}": [] for k in VARIANTS for n in SIZES}
    for _ in range(repeats):
        for n in SIZES:
            for name, fn in VARIANTS.items():
                samples[f"{name}_{n}"].append(fn(n) / n * 1e6)
    return {key: statistics.median(values) for key, values in samples.items()}


def report(label: str, r: dict[str, float]) -> None:
    print(f"\n{label}")
    print(
        f"{'turns':>7} {'floor':>8} {'strict':>8} {'engine':>8} {'ratio':>7} {'strict ratio':>13}   (µs/turn)"
    )
    for n in SIZES:
        f, s, e = r[f"floor_{n}"], r[f"strict_{n}"], r[f"engine_{n}"]
        print(f"{n:>7} {f:>8.2f} {s:>8.2f} {e:>8.2f} {e / f:>6.1f}x {e / s:>12.1f}x")
    floor_growth = r["floor_5000"] / r["floor_1000"]
    engine_growth = r["engine_5000"] / r["engine_1000"]
    print(
        f"growth 1k->5k: floor {floor_growth:.2f}x, engine {engine_growth:.2f}x, "
        f"engine/floor {engine_growth / floor_growth:.2f} (target <= 1.3)"
    )
    print(f"ratio at 1k: {r['engine_1000'] / r['floor_1000']:.1f}x (target <= 20x)")


@tool
def read(path: str) -> str:
    """Read a file."""
    if path.startswith("missing/"):
        raise ToolError(f"{path} not found")
    return "contents"


def failing_steps(n: int) -> list[object]:
    """One call in three reads a missing path, each a different one; the others succeed."""
    return [ToolCall("read", {"path": f"missing/{i}" if i % 3 == 0 else "src/main.rs"}) for i in range(n)]


class _Kept(LoopDetector):
    """A loop detector that keeps its last run's watch, to count what it holds."""

    watch: object = None

    def new_run(self):  # type: ignore[no-untyped-def]
        self.watch = super().new_run()
        return self.watch


def failing_run(n: int, detector: LoopDetector | None) -> float:
    engine = Engine(ScriptedModel([*failing_steps(n), "done"]), tools=[read], loop_detector=detector)
    gc.collect()
    start = time.process_time()
    result = engine.run("read them")
    elapsed = time.process_time() - start
    assert len(result.tool_results) == n
    return elapsed


def failures(repeats: int, n: int = 5000) -> None:
    with_detector: list[float] = []
    without: list[float] = []
    for _ in range(repeats):
        with_detector.append(failing_run(n, LoopDetector()))
        without.append(failing_run(n, None))
    ratios = sorted(a / b for a, b in zip(with_detector, without, strict=True))
    print(f"\nA run that fails one call in three ({n:,} turns, CPU time, median of {repeats})")
    print(f"  without the loop detector {statistics.median(without) / n * 1e6:6.2f} µs/turn")
    print(f"  with the loop detector    {statistics.median(with_detector) / n * 1e6:6.2f} µs/turn")
    print(
        f"  the detector's cost: {statistics.median(ratios):.2f}x [{ratios[0]:.2f}-{ratios[-1]:.2f}] "
        "(target <= 1.3x)"
    )
    kept = _Kept()
    long = 100_000
    seconds = failing_run(long, kept)
    held = len(getattr(kept.watch, "streaks", ()))
    print(
        f"  {long:,} turns: {seconds / long * 1e6:.2f} µs/turn, {long // 3 + 1:,} different failing calls, "
        f"{held:,} still held by the detector at the end"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    engine_loop(200)  # warm up imports and pydantic's validators
    report(f"GC on (median of {args.repeats})", measure(args.repeats))
    gc.disable()
    try:
        report(f"GC off (median of {args.repeats})", measure(args.repeats))
    finally:
        gc.enable()
    failures(args.repeats)


if __name__ == "__main__":
    main()
