"""Benchmark what ``loopnb.inject`` costs a tool call whose fault does not fire.

A script that prints figures (not a timed test).

    PYTHONPATH=. python benchmarks/bench_faults.py [--calls 100000] [--rounds 9]
    PYTHONPATH=. python benchmarks/bench_faults.py --sweep     # the ToolMaze 2x2 x 200 seeds on 2 workers

What is timed is the engine's own path for one attempt of a sync tool (``Invocation._attempt``'s
lines for it): a ``FaultMark`` and the tool's ``marked(mark)`` function when the tool
``marks_faults``, else its ``fn``, then the call. Three candidates, interleaved round by round,
garbage collected before each: the bare tool, an injected one whose ``.when`` never matches (the
arguments are compared), and one whose ``.first(1)`` is spent (the schedule is counted). The
figure is CPU time per call (``time.process_time``): medians [min-max] over the rounds, each
injected one also as the extra over the bare tool's median. Budget (issue #28): at most 2 µs.

``--sweep`` times the notebook 11 grid as a sweep: four ``SweepConfig``s of ``mistyped_path`` (an
error and an empty result, each for the first two calls and for every call) over 200 seeds on a
Dask ``LocalCluster`` of 2 workers, started inside the timing (wall time, one run: budget 60 s),
and prints ``by_config()``'s recovery columns.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import statistics
import time
from collections.abc import Callable

from loopnb import faults, inject, tool
from loopnb.engine._tools import FaultMark, Tool


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return path


def per_call(t: Tool, calls: int) -> float:
    """CPU microseconds a call, as the engine calls a sync tool with no timeout."""
    gc.collect()
    start = time.process_time()
    for _ in range(calls):
        mark = FaultMark() if t.marks_faults else None
        fn = t.fn if mark is None else t.marked(mark)
        fn(path="a.txt")
    return (time.process_time() - start) / calls * 1e6


def candidates() -> dict[str, Tool]:
    spent = inject(read_file, faults.error("busy").first(1))
    with contextlib.suppress(Exception):
        spent("a.txt")  # the one call it fails: from now on it never fires
    return {
        "bare tool": read_file,
        "injected, .when() misses": inject(read_file, faults.error("busy").when(path="b.txt")),
        "injected, .first(1) spent": spent,
    }


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} [{min(values):.3f}-{max(values):.3f}]"


def sweep_grid() -> None:
    """The 2x2 x 200-seed sweep on 2 workers, timed whole."""
    import tempfile

    import loopnb

    cells = {
        "explicit-transient": faults.error("disk busy").first(2),
        "explicit-permanent": faults.error("disk busy"),
        "implicit-transient": faults.empty().first(2),
        "implicit-permanent": faults.empty(),
    }
    grid = [
        loopnb.SweepConfig(n, scenario="mistyped_path", faults={"read_file": f}) for n, f in cells.items()
    ]
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        result = loopnb.sweep(configs=grid, seeds=200, out=f"{out}/maze", workers=2, progress=False)
        took = time.perf_counter() - start
        table = result.by_config()
    load = os.getloadavg()[0]
    print(f"load average {load:.2f}; 4 configs x 200 seeds on 2 workers: {took:.1f} s (budget 60 s)")
    columns = ["config", "runs", "soft_errors", "errors_recovered", "tool_recovery_rate", "false_successes"]
    print(table[columns].to_string(index=False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--sweep", action="store_true", help="time the 2x2 x 200-seed sweep instead")
    args = parser.parse_args()
    if args.sweep:
        sweep_grid()
        return
    tools = candidates()
    times: dict[str, list[float]] = {name: [] for name in tools}
    measure: Callable[[Tool], float] = lambda t: per_call(t, args.calls)  # noqa: E731
    for _ in range(args.rounds):
        for name, t in tools.items():
            times[name].append(measure(t))
    bare = statistics.median(times["bare tool"])
    print(
        f"load average {os.getloadavg()[0]:.2f}; {args.calls:,} calls x {args.rounds} rounds, CPU µs a call"
    )
    for name, values in times.items():
        extra = "" if name == "bare tool" else f"   +{statistics.median(values) - bare:.3f} µs (budget 2 µs)"
        print(f"  {name:<28} {spread(values)}{extra}")


if __name__ == "__main__":
    main()
