"""Benchmark ``loopnb.compare`` on long runs: time and peak memory at 10^4, 10^5 and 10^6 turns a side.

A script that prints figures (not a timed test).

    PYTHONPATH=. python benchmarks/bench_compare.py                  # 10^4 and 10^5 (7 rounds), 10^6 (3)
    PYTHONPATH=. python benchmarks/bench_compare.py --sizes 10000 100000 --rounds 7
    PYTHONPATH=. python benchmarks/bench_compare.py --baseline /path/to/an/older/checkout

The runs: two real engine runs (a ``ScriptedModel`` on a ``FakeClock``, no loop detector) of
``n`` turns each, one ``read_file`` call a turn, every tenth call failing softly (a soft turn).
Run b makes one more turn halfway (a retry: the aligned rows get a gap there, the first
divergence) and asks for another path three quarters in (a differing row). Each is a
``Recording`` of its events (``Recording.from_events``) whose frames were read before timing
(as after any look at ``rec.turns``): what is timed is ``compare`` itself, not building the
frames, which is the recorder's work. Generating a run is the engine's speed (about 20 s for
10^6 turns) plus its frames (about 12 s), so each size's inputs are made once per process.

Each measurement runs in a fresh subprocess per size and round (so one measurement's garbage
and heap never reach the next): it builds the two runs, collects garbage, resets the process's
peak resident size (``/proc/self/clear_refs``, Linux) and reads ``resource.getrusage``'s
``ru_maxrss`` after each step: the figure is the peak over the resident size before the step
(what the step itself needed), and the resident size with the inputs loaded is printed too.
Measured, in order: ``compare(rec_a, rec_b)`` (with events: calls compared with their
arguments), ``Comparison.to_html`` (its time includes importing the notebook layer, about 0.3 s,
as a script's first page does), the notebook picture (``_repr_html_``), ``loopnb compare``'s
lines, and ``compare`` of the two bare turns frames. ``compare``'s peak is the clean one (the
first step of a fresh process); a later step may reuse memory an earlier one freed, so its peak
is a lower bound. Medians [min-max] over the rounds (fewer
at 10^6, where a round takes minutes: the count is printed), and the machine's load average.
With ``--baseline``, each round runs the same subprocess on that checkout's ``loopnb`` too,
interleaved with this one's (a before/after in one run); sizes the baseline cannot do in
reasonable memory are skipped with ``--baseline-sizes``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
REPO = HERE.parents[1]
STEPS = ("compare", "to_html", "picture", "text", "compare turns frames")


def runs(n: int) -> tuple[Any, Any]:
    """Recordings of the two runs (see the module's docstring), their frames read."""
    from loopnb import Engine, FakeClock, ScriptedModel, ToolCall, ToolError, tool
    from loopnb.record._recording import Recording

    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        if path.endswith("9.rs"):
            raise ToolError(f"file {path} not found")
        return "fn main() {}"

    def one(run_id: str, steps: list[Any]) -> Any:
        events: list[Any] = []
        engine = Engine(ScriptedModel(steps), [read_file], clock=FakeClock(), loop_detector=None)
        engine.subscribe(events.append)
        engine.run("What is in src?", run_id=run_id)
        rec = Recording.from_events(events, meta={})
        rec.turns  # noqa: B018 - read once, as a notebook does before comparing
        rec.events  # noqa: B018
        return rec

    calls = [ToolCall("read_file", {"path": f"src/{i % 10}.rs"}) for i in range(n - 1)]
    other = list(calls)
    other.insert(n // 2, ToolCall("read_file", {"path": "src/9.rs"}))
    other[3 * n // 4] = ToolCall("read_file", {"path": "src/other.rs"})
    return one("a", [*calls, "done"]), one("b", [*other[: n - 1], "done"])


def _peak_reset() -> int:
    """Reset the peak resident size to the current one; returns the current one (KiB)."""
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return _rss()


def _rss() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def _measure(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """Seconds and peak MiB over the resident size before, of ``fn()``; and what it returned."""
    before = _peak_reset()
    start = time.perf_counter()
    out = fn()
    took = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return took, max(peak - before, 0) / 1024, out


def one_round(n: int) -> dict[str, Any]:
    """One round at ``n`` turns a side, in this process (the subprocess's work)."""
    import loopnb

    start = time.perf_counter()
    a, b = runs(n)
    made = time.perf_counter() - start
    figures: dict[str, Any] = {"made_s": made, "rss_inputs_mib": _rss() / 1024}
    took, peak, c = _measure(lambda: loopnb.compare(a, b))
    figures["compare"] = (took, peak)
    figures["rows"] = len(c.turns)
    figures["divergence"] = c.first_divergence
    _shown(c, figures)
    c = None  # its memory back before the bare frames are compared
    ta, tb = a.turns, b.turns
    took, peak, _ = _measure(lambda: loopnb.compare(ta, tb))
    figures["compare turns frames"] = (took, peak)
    return figures


def _shown(c: Any, figures: dict[str, Any]) -> None:
    """Time and measure what shows ``c``: its page, its picture, the command's text."""
    from loopnb.cli._compare_text import compare_lines

    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "c.html"
        took, peak, _ = _measure(lambda: c.to_html(page))
        figures["to_html"] = (took, peak)
        figures["page_kib"] = page.stat().st_size / 1024
    took, peak, html = _measure(c._repr_html_)
    figures["picture"] = (took, peak)
    figures["picture_kib"] = len(html.encode()) / 1024
    took, peak, lines = _measure(lambda: compare_lines(c, width=100))
    figures["text"] = (took, peak)
    figures["text_lines"] = len(lines)


def in_subprocess(n: int, source: Path) -> dict[str, Any]:
    """``one_round(n)`` in a fresh interpreter importing the ``loopnb`` of ``source``."""
    env = {**os.environ, "PYTHONPATH": str(source)}
    code = (
        f"import sys, json; sys.path.insert(0, {str(HERE.parent)!r}); import bench_compare as b; "
        f"print(json.dumps(b.one_round({n})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=source, env=env, capture_output=True, text=True, check=False
    )
    if out.returncode:
        raise RuntimeError(f"the round at {n:,} turns failed:\n{out.stderr[-3000:]}")
    figures: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return figures


def spread(values: list[float], unit: str, digits: int = 2) -> str:
    low, mid, high = (f"{v:,.{digits}f}" for v in (min(values), statistics.median(values), max(values)))
    return f"{mid} {unit} [{low}-{high}]"


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} cores"


def report(label: str, n: int, rounds: list[dict[str, Any]]) -> None:
    first = rounds[0]
    print(
        f"\n{label}: {n:,} turns a side, {len(rounds)} round{'s' if len(rounds) > 1 else ''} "
        f"({first['rows']:,} aligned rows, first divergence at turn {first['divergence']}; inputs made "
        f"in {statistics.median(r['made_s'] for r in rounds):.1f} s, {first['rss_inputs_mib']:,.0f} MiB "
        "resident)"
    )
    for step in STEPS:
        times = [r[step][0] for r in rounds]
        peaks = [r[step][1] for r in rounds]
        per_turn = statistics.median(times) / n * 1e6
        print(
            f"  {step:<22} {spread(times, 's', 3):<30} {per_turn:8.2f} µs a turn   "
            f"peak +{spread(peaks, 'MiB', 0)}"
        )
    print(
        f"  page {first['page_kib']:,.0f} KiB, picture {first['picture_kib']:,.0f} KiB, "
        f"text {first['text_lines']} lines"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--big-rounds", type=int, default=3, help="rounds at 10^6 turns and more")
    parser.add_argument("--baseline", type=Path, default=None, help="an older checkout to measure too")
    parser.add_argument("--baseline-sizes", type=int, nargs="*", default=[10_000, 100_000])
    args = parser.parse_args()
    print(f"loopnb compare benchmark; {load()}")
    sources = {"this checkout": REPO}
    if args.baseline is not None:
        sources["baseline " + str(args.baseline)] = args.baseline.resolve()
    for n in args.sizes:
        rounds = args.rounds if n < 1_000_000 else args.big_rounds
        got: dict[str, list[dict[str, Any]]] = {label: [] for label in sources}
        for _ in range(rounds):
            for label, source in sources.items():  # interleaved, round by round
                if label != "this checkout" and n not in args.baseline_sizes:
                    continue
                got[label].append(in_subprocess(n, source))
        for label, results in got.items():
            if results:
                report(label, n, results)
        print(f"  ({load()})")


if __name__ == "__main__":
    main()
