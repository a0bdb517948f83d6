"""Benchmark the OpenTelemetry reader: read time against ``json.loads`` of the same file.

A script that prints figures (every time the median of three); ``bench_otlp`` returns them for
``benchmarks/bench_foreign.py``::

    PYTHONPATH=. python benchmarks/foreign_otlp.py              # 10,000 turns
    PYTHONPATH=. python benchmarks/foreign_otlp.py --turns 2000

Three workloads of ``turns`` turns, no OpenTelemetry package needed:

- ``pydantic-ai runs``: the golden pydantic-ai run (five turns: a soft error, an unknown tool,
  invalid arguments, a success, the answer; every request's input holding the whole history, as
  pydantic-ai records it) copied into ``turns / 5`` traces, as one OTLP/JSON request;
- the same as protobuf's JSON (base64 ids, enum names);
- ``one long run``: a single trace of ``turns`` model requests and tool spans (every third call
  an ``ERROR`` the next request reads), each request's input holding only the newest result (a
  whole history would make the file quadratic in size).
"""

from __future__ import annotations

import argparse
import base64
import copy
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from loopnb.foreign._otlp import read

GOLDEN = Path(__file__).resolve().parents[1] / "tests" / "golden" / "foreign" / "otlp"
T0 = 1_772_355_600_000_000_000


def _side_by_side(path: Path, repeats: int) -> tuple[float, float]:
    """The median seconds of ``json.loads`` of the file and of reading it into the turns frame,
    measured in turn (so that a busy machine slows both alike)."""
    loads: list[float] = []
    reads: list[float] = []
    for _ in range(repeats):
        start = time.perf_counter()
        json.loads(path.read_text(encoding="utf-8"))
        loads.append(time.perf_counter() - start)
        start = time.perf_counter()
        read(path).turns  # noqa: B018 - the frame is built on first use
        reads.append(time.perf_counter() - start)
    return statistics.median(loads), statistics.median(reads)


def copies_of_the_golden_run(turns: int, *, protobuf: bool = False) -> dict[str, Any]:
    """``turns / 5`` copies of the golden's first run (its trace), each with its own trace id."""
    name = "pydantic_ai.pb.json" if protobuf else "pydantic_ai.otlp.json"
    request = json.loads((GOLDEN / name).read_text())
    scoped = request["resourceSpans"][0]["scopeSpans"][0]
    first = scoped["spans"][0]["traceId"]
    run = [s for s in scoped["spans"] if s["traceId"] == first]
    spans = []
    for n in range(max(1, turns // 5)):
        trace_id = f"{n + 1:032x}"
        if protobuf:
            trace_id = base64.b64encode(bytes.fromhex(trace_id)).decode()
        for span in run:
            spans.append({**copy.copy(span), "traceId": trace_id})
    return {
        "resourceSpans": [
            {"resource": request["resourceSpans"][0]["resource"], "scopeSpans": [{**scoped, "spans": spans}]}
        ]
    }


def _kv(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool) or not isinstance(value, int):
        return {"key": key, "value": {"stringValue": str(value)}}
    return {"key": key, "value": {"intValue": str(value)}}


def _span(
    span_id: int, parent: int | None, name: str, at: int, attrs: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    span = {
        "traceId": "0" * 31 + "1",
        "spanId": f"{span_id:016x}",
        "name": name,
        "kind": 1,
        "startTimeUnixNano": str(T0 + at * 1_000_000),
        "endTimeUnixNano": str(T0 + (at + 1) * 1_000_000),
        "attributes": [_kv(k, v) for k, v in attrs.items()],
        "status": {},
        **extra,
    }
    if parent is not None:
        span["parentSpanId"] = f"{parent:016x}"
    return span


def one_long_run(turns: int) -> dict[str, Any]:
    """A single trace: ``turns`` requests, a tool span after each but the last."""
    tools = json.dumps([{"type": "function", "name": "add"}])
    spans = [
        _span(
            1,
            None,
            "invoke_agent bench",
            0,
            {"gen_ai.operation.name": "invoke_agent", "final_result": "done"},
        )
    ]
    read_back = None
    for n in range(1, turns + 1):
        at = n * 3
        inputs = [{"role": "user", "parts": [read_back or {"type": "text", "content": "add them up"}]}]
        final = n == turns
        part = (
            {"type": "text", "content": "done"}
            if final
            else {"type": "tool_call", "id": f"c{n}", "name": "add", "arguments": {"a": n, "b": 1}}
        )
        chat = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "bench-model",
            "gen_ai.usage.input_tokens": 100 + n,
            "gen_ai.usage.output_tokens": 10,
            "gen_ai.tool.definitions": tools,
            "gen_ai.input.messages": json.dumps(inputs),
            "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [part]}]),
        }
        spans.append(_span(2 * n, 1, "chat bench-model", at, chat))
        if final:
            break
        fails = n % 3 == 0
        result = f"b must be positive, got {n}" if fails else str(n + 1)
        tool = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "add",
            "gen_ai.tool.call.id": f"c{n}",
        }
        tool["gen_ai.tool.call.result"] = result
        extra: dict[str, Any] = {}
        if fails:
            extra["status"] = {"code": 2}
            extra["events"] = [
                {
                    "name": "exception",
                    "timeUnixNano": str(T0 + at * 1_000_000),
                    "attributes": [_kv("exception.type", "ValueError"), _kv("exception.message", result)],
                }
            ]
        spans.append(_span(2 * n + 1, 1, "execute_tool add", at + 1, tool, **extra))
        read_back = {"type": "tool_call_response", "id": f"c{n}", "result": result}
    return {"resourceSpans": [{"scopeSpans": [{"scope": {"name": "bench", "version": "1"}, "spans": spans}]}]}


def bench_otlp(turns: int = 10_000, repeats: int = 5) -> list[dict[str, Any]]:
    """One row per workload: its size, ``json.loads`` and ``read`` times, and their ratio."""
    workloads: dict[str, Callable[[], dict[str, Any]]] = {
        "pydantic-ai runs (OTLP/JSON)": lambda: copies_of_the_golden_run(turns),
        "pydantic-ai runs (protobuf JSON)": lambda: copies_of_the_golden_run(turns, protobuf=True),
        "one long run (OTLP/JSON)": lambda: one_long_run(turns),
    }
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, build in workloads.items():
            path = Path(tmp) / "spans.json"
            text = json.dumps(build())
            path.write_text(text, encoding="utf-8")
            n_turns = len(read(path).turns)
            loads, reading = _side_by_side(path, repeats)
            rows.append(
                {
                    "workload": name,
                    "turns": n_turns,
                    "MB": round(len(text) / 1e6, 1),
                    "json.loads s": round(loads, 3),
                    "read s": round(reading, 3),
                    "ratio": round(reading / loads, 1),
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    for row in bench_otlp(args.turns, args.repeats):
        print(
            f"{row['workload']:<34} {row['turns']:>7,} turns {row['MB']:>6} MB"
            f"   json.loads {row['json.loads s']:.3f} s   read + turns frame {row['read s']:.3f} s"
            f"   {row['ratio']}x"
        )


if __name__ == "__main__":
    main()
