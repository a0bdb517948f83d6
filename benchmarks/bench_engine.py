"""Engine speed: µs per turn against a hand-written floor loop, at 1,000 and 5,000 turns.

    python benchmarks/bench_engine.py [--repeats 7]

The floor is the same workload without loopnb: a scripted model yielding (name, args) per turn,
dict dispatch, try/except, appending a result record. The engine runs with the defaults a user
gets (no timeout, loop detector on, no observers). Targets (issue 2): at most 15x the floor per
turn, and linear growth: the engine's growth from 1k to 5k turns divided by the floor's own
growth at most 1.3. Medians of several repeats; figures also with the cyclic GC disabled.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

from loopnb import Engine, ScriptedModel, ToolCall, tool


def floor_loop(n: int) -> float:
    script = [("add", {"a": i, "b": 1}) for i in range(n)]

    def add(a: int, b: int) -> int:
        return a + b

    tools = {"add": add}
    results: list[tuple[str, object, bool]] = []
    start = time.perf_counter()
    for name, args in script:
        fn = tools.get(name)
        try:
            value = fn(**args)  # type: ignore[misc]
            results.append((name, value, False))
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


def median_us_per_turn(fn, n: int, repeats: int) -> float:
    return statistics.median(fn(n) for _ in range(repeats)) / n * 1e6


def measure(repeats: int) -> dict[str, float]:
    out = {}
    for n in (1000, 5000):
        out[f"floor_{n}"] = median_us_per_turn(floor_loop, n, repeats)
        out[f"engine_{n}"] = median_us_per_turn(engine_loop, n, repeats)
    return out


def report(label: str, r: dict[str, float]) -> None:
    print(f"\n{label}")
    print(f"{'turns':>7} {'floor µs/turn':>14} {'engine µs/turn':>15} {'ratio':>7}")
    for n in (1000, 5000):
        f, e = r[f"floor_{n}"], r[f"engine_{n}"]
        print(f"{n:>7} {f:>14.2f} {e:>15.2f} {e / f:>6.1f}x")
    floor_growth = r["floor_5000"] / r["floor_1000"]
    engine_growth = r["engine_5000"] / r["engine_1000"]
    print(
        f"growth 1k->5k: floor {floor_growth:.2f}x, engine {engine_growth:.2f}x, "
        f"engine/floor {engine_growth / floor_growth:.2f} (target <= 1.3)"
    )
    print(f"ratio at 1k: {r['engine_1000'] / r['floor_1000']:.1f}x (target <= 15x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    engine_loop(200)  # warm up imports and pydantic's validators
    report(f"GC on (median of {args.repeats})", measure(args.repeats))
    gc.disable()
    try:
        report(f"GC off (median of {args.repeats})", measure(args.repeats))
    finally:
        gc.enable()


if __name__ == "__main__":
    main()
