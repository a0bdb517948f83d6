"""Benchmark the recorder: per-turn overhead, frame building, JSON Lines and Parquet I/O.

A script that prints figures (not a timed test). Every figure is the median of several repeats.

    PYTHONPATH=. python benchmarks/bench_record.py            # the full run (a few minutes)
    PYTHONPATH=. python benchmarks/bench_record.py --quick    # small sizes, a smoke run

1. Recorder overhead per turn against the engine's own per-turn time, in the same process and
   round: the engine runs a scripted model (one tool call per turn, no timeout, loop detector on)
   with no observer, with a no-op observer (the engine then builds its events), with one that
   only keeps the events in a list, with an in-memory ``Recorder`` and with a streaming one (a
   write per turn). Ratios against the bare and the no-op-observed engine; growth with size.
2. The recorder fed events captured once from real engine runs and replayed (its own hot path,
   no engine in the timing).
3. Building the frames from scratch; writing and reading JSON Lines and Parquet; growth with
   size. 4. Loading 1,000,000 turns from Parquet (10,000 in the quick run).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from loopnb import Engine, ModelReply, ScriptedModel, ToolCall, ToolError, Usage, load, tool
from loopnb.record import Recorder


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return "fn main() {}"


def median_of(fn: Callable[[], float], repeats: int) -> float:
    return statistics.median(fn() for _ in range(repeats))


class GcTime:
    """Seconds spent in the cyclic garbage collector's passes, summed (via ``gc.callbacks``)."""

    def __init__(self) -> None:
        self.total = 0.0
        self._start = 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.total += time.perf_counter() - self._start


GC_TIME = GcTime()
gc.callbacks.append(GC_TIME)


def engine_turn_us(n: int, make_observers: Callable[[], list], *, gc_us: list[float] | None = None) -> float:
    """Wall time per turn of one engine run of ``n`` tool turns plus the final reply; with
    ``gc_us``, the part of it spent in cyclic-GC passes is appended there (us per turn)."""
    steps = [ToolCall("read_file", {"path": f"src/{i % 7}.rs"}) for i in range(n)] + ["done"]
    engine = Engine(ScriptedModel(steps), tools=[read_file], observers=make_observers())
    gc.collect()
    in_gc = GC_TIME.total
    start = time.perf_counter()
    engine.run("task")
    took = time.perf_counter() - start
    if gc_us is not None:
        gc_us.append((GC_TIME.total - in_gc) / (n + 1) * 1e6)
    return took / (n + 1) * 1e6


def _growth(label: str, figures: dict[int, float], *, against: dict[int, float] | None = None) -> str:
    """``label: x1.00 -> x1.23 at 10k -> ...``: each figure over the smallest size's, and that
    growth over ``against``'s (the engine's own) when given."""
    sizes = sorted(figures)
    first = sizes[0]
    parts = []
    for n in sizes[1:]:
        g = figures[n] / figures[first]
        text = f"x{g:.2f} at {n:,}"
        if against is not None:
            base = against[n] / against[first]
            text += f" (÷ engine's x{base:.2f} = {g / base:.2f})"
        parts.append(text)
    return f"  {label:<14} from {first:,}: " + ", ".join(parts)


def bench_engine(sizes: list[int], repeats: int, tmp: Path) -> dict[int, dict[str, float]]:
    print("\n## 1. Engine per-turn time (us) and the recorder's overhead")
    print("(interleaved runs, medians; ratios against the bare engine and the no-op-observed engine)")
    print(
        "(+retain: an observer that only appends each event to a list; it shows what merely holding\n"
        " the events costs, in cyclic-GC passes over a growing heap, which the recorder must do too)"
    )
    header = (
        f"{'turns':>8} {'engine':>8} {'+no-op':>8} {'+retain':>8} {'+memory':>8} {'+stream':>8} "
        f"{'mem/no-op':>10} {'mem/engine':>11} {'stream/no-op':>13} {'stream/engine':>14} {'mem/retain':>11}"
    )
    print(header)
    counter = iter(range(10**9))

    def streaming() -> list:
        return [Recorder(tmp / f"engine-{next(counter)}.jsonl")]

    variants = {
        "engine": lambda: [],
        "noop": lambda: [lambda event: None],
        "retain": lambda: [[].append],
        "memory": lambda: [Recorder()],
        "stream": streaming,
    }

    in_gc: dict[int, dict[str, float]] = {}

    def row(n: int, r: int, note: str = "") -> dict[str, float]:
        samples: dict[str, list[float]] = {k: [] for k in variants}
        gc_samples: dict[str, list[float]] = {k: [] for k in variants}
        for _ in range(r):  # interleaved, so that machine noise hits every variant alike
            for name, make in variants.items():
                samples[name].append(engine_turn_us(n, make, gc_us=gc_samples[name]))
        m = {k: statistics.median(v) for k, v in samples.items()}
        if not note:
            in_gc[n] = {k: statistics.median(v) for k, v in gc_samples.items()}
        print(
            f"{n:>8} {m['engine']:>8.1f} {m['noop']:>8.1f} {m['retain']:>8.1f} {m['memory']:>8.1f} "
            f"{m['stream']:>8.1f} {m['memory'] / m['noop']:>10.2f} "
            f"{m['memory'] / m['engine']:>11.2f} {m['stream'] / m['noop']:>13.2f} "
            f"{m['stream'] / m['engine']:>14.2f} {m['memory'] / m['retain']:>11.2f}{note}"
        )
        return m

    by_size = {n: row(n, repeats if n <= 10_000 else max(3, repeats // 2)) for n in sizes}
    gc.disable()
    try:
        row(sizes[min(1, len(sizes) - 1)], repeats, "   (gc disabled)")
    finally:
        gc.enable()
    print("of which in cyclic-GC passes (us per turn), and the ratios with that time taken out:")
    names = " ".join(f"{k:>8}" for k in variants)
    print(f"{'turns':>8} {names} {'mem/no-op':>10} {'stream/no-op':>13}")
    for n, g in in_gc.items():
        m = {k: by_size[n][k] - g[k] for k in variants}
        print(
            f"{n:>8} "
            + " ".join(f"{g[k]:>8.2f}" for k in variants)
            + f" {m['memory'] / m['noop']:>10.2f} {m['stream'] / m['noop']:>13.2f}"
        )
    print("growth of the per-turn time with size:")
    engine = {n: m["engine"] for n, m in by_size.items()}
    for name in variants:
        figures = {n: m[name] for n, m in by_size.items()}
        print(_growth(name, figures, against=None if name == "engine" else engine))
    return by_size


@tool
def read_source(path: str) -> str:
    """Read a file; ``.rz`` files do not exist."""
    if path.endswith(".rz"):
        raise ToolError(f"file {path} not found")
    return "fn main() {}"


def captured_events(turns: int, *, runs: int = 1) -> list:
    """The events of ``runs`` real engine runs, ``turns`` turns in all: per run, alternately a
    failing call (soft) and a successful one (120 tokens in, 14 out a reply), then the final
    reply. Captured by an observer that keeps them in a list, to be replayed into recorders."""
    events: list = []
    per_run = max(1, turns // runs)
    usage = Usage(input_tokens=120, output_tokens=14)
    for r in range(runs):
        steps: list = [
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


def _feed(make: Callable[[], Recorder], events: list, n: int) -> float:
    rec = make()
    gc.collect()
    start = time.perf_counter()
    for e in events:
        rec(e)
    took = time.perf_counter() - start
    rec.close()
    return took / n * 1e6


def bench_hot_path(events_by_size: dict[int, list], repeats: int, tmp: Path) -> None:
    print("\n## 2. Recorder hot path on captured engine events, replayed (us per turn)")
    print(f"{'turns':>8} {'events':>8} {'memory':>8} {'stream':>8} {'stream+fsync':>13}")
    counter = iter(range(10**9))

    def streaming() -> Recorder:
        return Recorder(tmp / f"hot-{next(counter)}.jsonl")

    def fsyncing() -> Recorder:
        return Recorder(tmp / f"fsync-{next(counter)}.jsonl", fsync=True)

    mems, streams = {}, {}
    for n, events in events_by_size.items():
        mem_samples, stream_samples = [], []
        for _ in range(repeats):  # interleaved
            mem_samples.append(_feed(Recorder, events, n))
            stream_samples.append(_feed(streaming, events, n))
        mems[n], streams[n] = statistics.median(mem_samples), statistics.median(stream_samples)
        fsync = "-"
        if n <= 10_000:
            fsync = f"{statistics.median(_feed(fsyncing, events, n) for _ in range(3)):.1f}"
        print(f"{n:>8} {len(events):>8} {mems[n]:>8.2f} {streams[n]:>8.2f} {fsync:>13}")
    print("growth of the per-turn time with size:")
    print(_growth("memory", mems))
    print(_growth("stream", streams))


def timed(fn: Callable[[], object]) -> float:
    gc.collect()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _fresh_turns(rec: Recorder) -> float:
    """``rec.turns`` from scratch: the turns' values and the frame (nothing cached)."""
    fresh = Recorder()
    for event in rec.event_objects:  # a recorder that has seen every event and built nothing
        fresh(event)
    start = time.perf_counter()
    fresh.turns  # noqa: B018
    return time.perf_counter() - start


def _fresh_events(rec: Recorder) -> None:
    """``rec.events`` from scratch."""
    rec._frames.clear()
    rec.events  # noqa: B018


def _files_row(n: int, events: list, repeats: int, tmp: Path) -> tuple[Path, dict[str, float]]:
    rec = Recorder()
    for e in events:
        rec(e)
    jsonl, pq = tmp / f"r{n}.jsonl", tmp / f"r{n}.parquet"
    r = max(1, repeats // 2)

    def med(fn: Callable[[], object], k: int) -> float:
        return statistics.median(timed(fn) for _ in range(k))

    t = {
        "turns df": statistics.median(_fresh_turns(rec) for _ in range(repeats)),
        "events df": med(lambda: _fresh_events(rec), r),
        "save jsonl": med(lambda: rec.save(jsonl), r),
        "load jsonl": med(lambda: load(jsonl).turns, r),
        "save pq": med(lambda: rec.save(pq), r),
        "load pq": med(lambda: load(pq).turns, repeats),
        "pq events": med(lambda: load(pq).events, r),
    }
    print(
        f"{n:>8} {t['turns df']:>9.3f} {t['events df']:>10.3f} {t['save jsonl']:>11.3f} "
        f"{t['load jsonl']:>11.3f} {t['save pq']:>8.3f} {t['load pq']:>8.3f} {t['pq events']:>10.3f} "
        f"{jsonl.stat().st_size / 1e6:>9.1f} {pq.stat().st_size / 1e6:>7.1f}"
    )
    return pq, t


def bench_frames_and_files(events_by_size: dict[int, list], repeats: int, tmp: Path) -> Path:
    print("\n## 3. Frames and files (seconds; the frames built from scratch, nothing cached)")
    print(
        f"{'turns':>8} {'turns df':>9} {'events df':>10} {'save jsonl':>11} "
        f"{'load jsonl':>11} {'save pq':>8} {'load pq':>8} {'pq events':>10} "
        f"{'jsonl MB':>9} {'pq MB':>7}"
    )
    biggest = tmp
    rows: dict[int, dict[str, float]] = {}
    for n, events in events_by_size.items():
        biggest, rows[n] = _files_row(n, events, repeats, tmp)
    print("growth of the time per turn with size (x1.00 is linear):")
    for name in next(iter(rows.values())):
        print(_growth(name, {n: t[name] / n for n, t in rows.items()}))
    return biggest


def bench_million(source: Path, repeats: int, tmp: Path, factor: int) -> None:
    """Load ``factor`` times the largest recording's turns from one Parquet file."""
    from loopnb.record._parquet import write_frames

    rec = load(source)
    turns, events = rec.turns, rec.events
    lines = _json_lines(rec)

    def renamed(df, k):
        df = df.copy()
        df["run_id"] = df["run_id"] + f"-{k}"
        return df

    total = len(turns) * factor
    path = tmp / "million.parquet"
    meta = {k: v for k, v in rec.meta.items() if k not in ("path", "n_turns", "n_events")}
    start = time.perf_counter()
    write_frames(
        path,
        meta,
        (renamed(turns, k) for k in range(factor)),
        (lines for _ in range(factor)),
    )
    wrote = time.perf_counter() - start
    t = median_of(lambda: timed(lambda: load(path).turns), repeats)
    df = load(path).turns
    assert len(df) == total
    print(
        f"\n## 4. {total:,} turns in one Parquet file ({path.stat().st_size / 1e6:.0f} MB, "
        f"{len(events) * factor:,} events, written in {wrote:.1f} s)"
    )
    print(f"load(path).turns: median {t:.3f} s over {repeats} repeats ({t / total * 1e9:.0f} ns per turn)")


def _json_lines(rec) -> list[str]:
    from loopnb.record._lines import dump_event

    return [dump_event(e) for e in rec.event_objects]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, fewer repeats")
    args = parser.parse_args()
    quick = args.quick
    engine_sizes = [500, 2_000] if quick else [1_000, 2_000, 10_000, 100_000]
    sizes = [1_000, 5_000] if quick else [1_000, 10_000, 100_000]
    repeats = 3 if quick else 5
    print(f"python {sys.version.split()[0]}; medians of {repeats} repeats unless noted")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        bench_engine(engine_sizes, repeats, tmp)
        start = time.perf_counter()
        events_by_size = {n: captured_events(n, runs=max(1, n // 1000)) for n in sizes}
        print(
            f"\n(captured engine events in {time.perf_counter() - start:.1f} s: "
            f"{sum(len(v) for v in events_by_size.values()):,} events)"
        )
        bench_hot_path(events_by_size, repeats, tmp)
        biggest = bench_frames_and_files(events_by_size, repeats, tmp)
        bench_million(biggest, 3 if quick else 5, tmp, factor=2 if quick else 10)


if __name__ == "__main__":
    main()
