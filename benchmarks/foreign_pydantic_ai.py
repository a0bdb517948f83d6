"""Benchmark the pydantic-ai reader: ``loopnb.load`` of a long message history against ``json.loads``.

A script that prints figures (not a timed test); every figure is the median of ``--repeats`` rounds,
each timing ``json.loads`` and the reader side by side in CPU seconds of this process, each call
after a full collection, with the garbage collector on and (as ``timeit`` has it) off.

    PYTHONPATH=. python benchmarks/foreign_pydantic_ai.py                    # 10,000 turns
    PYTHONPATH=. python benchmarks/foreign_pydantic_ai.py --turns 5000 10000 20000

The workload is a history as ``result.all_messages_json()`` writes it, built from pydantic-ai's
own message classes and dumped by its ``ModelMessagesTypeAdapter``: ``turns`` responses each
calling ``read_file``, answered by a success, and every 10th by a ``ModelRetry`` retry, every 25th
by invalid arguments (a validation error list), every 50th by an unknown tool; then a final
answer. Target (issue 17): ``load`` at most 3x ``json.loads`` of the same file.

The reader pauses the cyclic collector while it parses and builds (the history and the events
hold no cycles); ``json.loads`` runs as a user's would, so with the collector on the baseline
pays for the collections it triggers and the reader does not. The collector-off figures compare
the two on equal terms. ``benchmarks/bench_foreign.py`` shows these figures beside the other
formats'.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import loopnb


def history(turns: int) -> bytes:
    """A ``turns``-turn pydantic-ai history's JSON, dumped by pydantic-ai itself."""
    from pydantic_ai.messages import (
        ModelMessagesTypeAdapter,
        ModelRequest,
        ModelResponse,
        RetryInfo,
        SystemPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
    from pydantic_ai.usage import RequestUsage

    start = datetime(2026, 3, 1, tzinfo=UTC)

    def at(i: int) -> datetime:
        return start + timedelta(milliseconds=10 * i)

    run = "bench-run"
    messages: list[Any] = [
        ModelRequest(
            parts=[SystemPromptPart("You read files."), UserPromptPart("Read every file.")],
            timestamp=at(0),
            run_id=run,
        )
    ]
    for i in range(turns):
        call_id = f"call_{i}"
        name, args = (
            ("serch", {"q": f"file {i}"}) if i % 50 == 49 else ("read_file", {"path": f"src/f{i}.py"})
        )
        if i % 25 == 24:
            args = {"pth": i}
        messages.append(
            ModelResponse(
                parts=[ToolCallPart(name, args, tool_call_id=call_id)],
                usage=RequestUsage(input_tokens=100 + i, output_tokens=12),
                model_name="gpt-5-mini",
                timestamp=at(2 * i + 1),
                run_id=run,
            )
        )
        if i % 50 == 49:
            ret = ToolReturnPart(
                name,
                f"Unknown tool name: {name!r}. Available tools: 'read_file'",
                call_id,
                outcome="retried",
                retry=RetryInfo("unknown_tool", attempt=1, max_retries=3),
            )
        elif i % 25 == 24:
            errors = [{"type": "missing", "loc": ["path"], "msg": "Field required", "input": args}]
            ret = ToolReturnPart(
                name,
                errors,
                call_id,
                outcome="retried",
                retry=RetryInfo("validation_error", attempt=1, max_retries=3),
            )
        elif i % 10 == 9:
            ret = ToolReturnPart(
                name,
                f"file src/f{i}.py not found; did you mean src/g{i}.py?",
                call_id,
                outcome="retried",
                retry=RetryInfo("model_retry", attempt=1, max_retries=3),
            )
        else:
            ret = ToolReturnPart(name, f"contents of src/f{i}.py: {'x' * 80}", call_id)
        ret.timestamp = at(2 * i + 2)
        messages.append(ModelRequest(parts=[ret], timestamp=at(2 * i + 2), run_id=run))
    messages.append(
        ModelResponse(
            parts=[TextPart("All files read.")],
            model_name="gpt-5-mini",
            timestamp=at(2 * turns + 1),
            run_id=run,
        )
    )
    return ModelMessagesTypeAdapter.dump_json(messages)


def timed(fn: Callable[[], object], *, collect: bool) -> float:
    """The CPU seconds ``fn()`` took in this process (other processes on a shared machine do not
    count), starting from a full collection; with ``collect=False`` the garbage collector is off
    while it runs (as ``timeit`` has it)."""
    gc.collect()
    if not collect:
        gc.disable()
    try:
        t0 = time.process_time()
        fn()
        return time.process_time() - t0
    finally:
        gc.enable()


def bench(turns: int = 10_000, repeats: int = 7) -> dict[str, Any]:
    """The figures for a ``turns``-turn history, with the garbage collector on and off: median
    CPU seconds of ``repeats`` rounds, each round timing ``json.loads``, ``load`` and
    ``load(...).turns`` one after the other, and the median of the rounds' ratios to ``json.loads``."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "history.json"
        path.write_bytes(history(turns))
        rec = loopnb.load(path)
        assert rec.meta["source"]["format"] == "pydantic-ai" and rec.meta["n_turns"] == turns + 1
        del rec
        figures: dict[str, Any] = {"turns": turns, "bytes": path.stat().st_size}
        med = statistics.median
        for collect, label in ((True, "gc"), (False, "nogc")):
            rounds = []
            for _ in range(repeats):
                base = timed(lambda: json.loads(path.read_bytes()), collect=collect)
                read = timed(lambda: loopnb.load(path), collect=collect)
                framed = timed(lambda: loopnb.load(path).turns, collect=collect)
                rounds.append((base, read, framed))
            figures[label] = {
                "json_loads_s": med(r[0] for r in rounds),
                "load_s": med(r[1] for r in rounds),
                "load_turns_s": med(r[2] for r in rounds),
                "ratio": med(r[1] / r[0] for r in rounds),
                "ratio_with_frame": med(r[2] / r[0] for r in rounds),
                "ratios": [round(r[1] / r[0], 2) for r in rounds],
            }
        return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, nargs="+", default=[10_000])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    for turns in args.turns:
        f = bench(turns, args.repeats)
        print(
            f"pydantic-ai history: {turns:,} turns, {f['bytes']:,} bytes; "
            f"CPU medians of {args.repeats} rounds"
        )
        for label, title in (("gc", "garbage collector on"), ("nogc", "garbage collector off")):
            g = f[label]
            print(
                f"  {title}:\n"
                f"    json.loads of the file:   {g['json_loads_s']:.3f} s\n"
                f"    loopnb.load(path):        {g['load_s']:.3f} s  ratio {g['ratio']:.2f}x"
                " (target <= 3.0x)\n"
                f"    loopnb.load(path).turns:  {g['load_turns_s']:.3f} s  ratio {g['ratio_with_frame']:.2f}x"
                " (the turns frame built too)\n"
                f"    each round's load ratio:  {g['ratios']}"
            )


if __name__ == "__main__":
    main()
