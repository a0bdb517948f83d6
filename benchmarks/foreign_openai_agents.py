"""Benchmark the openai-agents reader: read time against ``json.loads`` of the same file.

A script that prints figures (every time the median of three); ``bench_openai_agents`` returns
them for ``benchmarks/bench_foreign.py``::

    PYTHONPATH=. python benchmarks/foreign_openai_agents.py              # 10,000 turns
    PYTHONPATH=. python benchmarks/foreign_openai_agents.py --turns 2000

The workload is one trace of ``turns`` turns as ``JsonlProcessor`` writes it, built from the
shapes the SDK exports (no SDK needed): a ``turn`` span, a model span and a function span a turn,
every third call failing softly with the SDK's fixed text, then a final reply. Two model shapes:
``responses`` (a ``response`` span: id and usage, what the default model writes) and ``chat``
(a ``generation`` span with the reply; its input holds only the turn's new messages, where the
SDK's holds the whole history, which would make a 10,000-turn file quadratic in size).
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from loopnb.foreign._openai_agents import read

FIXED = "An error occurred while running the tool. Please try again."
T0 = datetime(2026, 1, 1, tzinfo=UTC)
USAGE = {"input_tokens": 120, "output_tokens": 12, "cached_input_tokens": 0, "cache_write_input_tokens": 0}


def _span(
    ids: Iterator[int], parent: str, kind: dict[str, Any], at: int, error: Any = None
) -> dict[str, Any]:
    return {
        "object": "trace.span",
        "id": f"span_{next(ids):024x}",
        "trace_id": "trace_bench",
        "parent_id": parent,
        "started_at": (T0 + timedelta(milliseconds=at)).isoformat(),
        "ended_at": (T0 + timedelta(milliseconds=at + 5)).isoformat(),
        "span_data": kind,
        "error": error,
    }


def _model(shape: str, n: int, call: tuple[str, str] | None, read_back: str | None) -> dict[str, Any]:
    if shape == "responses":
        return {"type": "response", "response_id": f"resp_{n}", "usage": {**USAGE, "requests": 1}}
    message: dict[str, Any] = {"role": "assistant", "content": "done", "tool_calls": None}
    if call is not None:
        function = {"name": call[0], "arguments": call[1]}
        message.update(
            content=None, tool_calls=[{"id": f"call_{n}", "type": "function", "function": function}]
        )
    history = [{"role": "tool", "tool_call_id": f"call_{n - 1}", "content": read_back}] if read_back else []
    return {"type": "generation", "input": history, "output": [message], "model": "gpt-bench", "usage": USAGE}


def trace_lines(turns: int, shape: str) -> list[str]:
    """The JSON Lines of one ``turns``-turn trace, in the order a processor sees spans end."""
    ids = itertools.count(1)
    task = _span(ids, None, {"type": "custom", "name": "task", "data": {"sdk_span_type": "task"}}, 0)  # type: ignore[arg-type]
    agent = _span(ids, task["id"], {"type": "agent", "name": "bench", "tools": ["add"], "handoffs": []}, 0)
    lines: list[str] = []
    previous: str | None = None
    for n in range(1, turns + 1):
        at = n * 10
        final = n == turns
        data = {"sdk_span_type": "turn", "turn": n, "agent_name": "bench", "usage": USAGE}
        turn = _span(ids, agent["id"], {"type": "custom", "name": "turn", "data": data}, at)
        call = None if final else ("add", json.dumps({"a": n, "b": 1}))
        lines.append(json.dumps(_span(ids, turn["id"], _model(shape, n, call, previous), at)))
        if call is not None:
            fails = n % 3 == 0
            output = FIXED if fails else str(n + 1)
            error = (
                {"message": "Error running tool (non-fatal)", "data": {"tool_name": "add"}} if fails else None
            )
            function = {
                "type": "function",
                "name": "add",
                "input": call[1],
                "output": output,
                "mcp_data": None,
            }
            lines.append(json.dumps(_span(ids, turn["id"], function, at + 6, error)))
            previous = output
        lines.append(json.dumps(turn))
    lines += [json.dumps(agent), json.dumps(task)]
    trace = {
        "object": "trace",
        "id": "trace_bench",
        "workflow_name": "bench",
        "group_id": None,
        "metadata": None,
    }
    return [*lines, json.dumps(trace)]


def median_time(fn: Callable[[], object], repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench_openai_agents(turns: int = 10_000) -> dict[str, dict[str, float]]:
    """For each shape: the file's size, ``json.loads`` of its lines, ``read`` (to a Recording)
    and ``read`` plus the turns frame, in seconds, and the ratios to ``json.loads``."""
    figures: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for shape in ("responses", "chat"):
            path = Path(tmp) / f"{shape}.jsonl"
            path.write_text("\n".join(trace_lines(turns, shape)) + "\n", encoding="utf-8")
            rec = read(path)
            assert len(rec.turns) == turns and (rec.turns["channel"] == "soft").sum() == (turns - 1) // 3
            baseline = median_time(lambda p=path: [json.loads(x) for x in p.read_bytes().splitlines()])
            reading = median_time(lambda p=path: read(p))
            frame = median_time(lambda p=path: read(p).turns)
            figures[shape] = {
                "bytes": path.stat().st_size,
                "json_loads_s": baseline,
                "read_s": reading,
                "read_and_turns_s": frame,
                "read_ratio": reading / baseline,
                "read_and_turns_ratio": frame / baseline,
            }
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=10_000)
    turns = parser.parse_args().turns
    for shape, f in bench_openai_agents(turns).items():
        print(
            f"openai-agents {shape:9} {turns} turns, {f['bytes'] / 1e6:.1f} MB: "
            f"json.loads {f['json_loads_s']:.3f} s, "
            f"read {f['read_s']:.3f} s ({f['read_ratio']:.1f}x), "
            f"read + turns frame {f['read_and_turns_s']:.3f} s ({f['read_and_turns_ratio']:.1f}x)"
        )


if __name__ == "__main__":
    main()
