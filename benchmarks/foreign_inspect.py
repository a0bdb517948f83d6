"""Benchmark the Inspect AI reader: ``loopnb.load`` of a long log against ``json.loads`` of its JSON.

A script that prints figures (not a timed test); every time is the median of ``--repeats`` runs,
the reader and ``json.loads`` measured side by side in the same process and round.

    PYTHONPATH=. python benchmarks/foreign_inspect.py              # 10,000 turns
    PYTHONPATH=. python benchmarks/foreign_inspect.py --turns 2000

The workload is one sample of ``turns`` turns, made from the golden ``recover`` sample's own
events (``tests/golden/foreign/inspect/notes.json``): each turn a ``ModelEvent`` (four tools
offered) calling ``read_file``, its approval, tool span and ``ToolEvent``; every 10th answered by
a ``ToolError``, every 25th by invalid arguments, every 50th calls an unknown tool; then a final
answer. Inspect itself validates the log and writes it, as ``.json`` and as ``.eval`` (zstandard
members). The baseline is ``json.loads`` of the ``.json`` file: the uncompressed JSON of the log.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import loopnb

GOLDEN = Path(__file__).resolve().parents[1] / "tests" / "golden" / "foreign" / "inspect" / "notes.json"


def _events(template: list[dict[str, Any]], turns: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``turns`` turns of events cloned from ``template``'s, and the messages they leave."""
    model = next(e for e in template if e["event"] == "model")
    tool = next(e for e in template if e["event"] == "tool" and not e.get("error"))
    approval = next(e for e in template if e["event"] == "approval")
    span = next(e for e in template if e["event"] == "span_begin" and e.get("type") == "tool")
    end = next(e for e in template if e["event"] == "span_end" and e.get("id") == span["id"])
    head = template[: template.index(model)]
    start = datetime(2026, 3, 1, tzinfo=UTC)
    stamp = lambda ms: (start + timedelta(milliseconds=ms)).isoformat()  # noqa: E731
    events, messages = (
        copy.deepcopy(head),
        [{"role": "user", "content": "Read every file.", "source": "input"}],
    )
    for i in range(turns):
        call_id = f"call_{i}"
        name, args = (
            ("serch", {"q": f"file {i}"}) if i % 50 == 49 else ("read_file", {"path": f"src/f{i}.py"})
        )
        if i % 25 == 24:
            args = {"pth": i}
        m = copy.deepcopy(model)
        message = m["output"]["choices"][0]["message"]
        message.update(
            id=f"m{i}",
            content=f"Reading file {i}.",
            tool_calls=[{"id": call_id, "function": name, "arguments": args, "type": "function"}],
        )
        m.update(
            uuid=f"e{i}",
            timestamp=stamp(10 * i),
            completed=stamp(10 * i + 2),
            input_refs=[[0, len(messages)]],
        )
        m.pop("call", None)
        m["output"]["usage"] = {"input_tokens": 100 + i, "output_tokens": 12, "total_tokens": 112 + i}
        t = copy.deepcopy(tool)
        t.update(
            id=call_id,
            function=name,
            arguments=args,
            timestamp=stamp(10 * i + 3),
            completed=stamp(10 * i + 5),
        )
        t.update(uuid=f"t{i}", result=f"contents of src/f{i}.py: {'x' * 80}", error=None, message_id=f"r{i}")
        if i % 50 == 49:
            t.update(result="", error={"type": "parsing", "message": f"Tool {name} not found"})
        elif i % 25 == 24:
            t.update(
                result="",
                error={
                    "type": "parsing",
                    "message": "Found 1 validation errors parsing tool input arguments:\n"
                    "- 'path' is a required property",
                },
            )
        elif i % 10 == 9:
            t.update(
                result="",
                error={
                    "type": "unknown",
                    "message": f"file src/f{i}.py not found; did you mean src/g{i}.py?",
                },
            )
        a = copy.deepcopy(approval) | {"uuid": f"a{i}", "timestamp": stamp(10 * i + 2)}
        a["call"] = message["tool_calls"][0]
        s = copy.deepcopy(span) | {
            "uuid": f"sb{i}",
            "id": f"span{i}",
            "name": name,
            "timestamp": stamp(10 * i + 3),
        }
        x = copy.deepcopy(end) | {"uuid": f"se{i}", "id": f"span{i}", "timestamp": stamp(10 * i + 6)}
        events += [m] + ([a] if name != "serch" else []) + [s, t, x]
        messages.append(message)
        reply = {
            "id": f"r{i}",
            "role": "tool",
            "tool_call_id": call_id,
            "function": name,
            "content": t["result"],
        }
        messages.append(reply | ({"error": t["error"]} if t["error"] else {}))
    final = copy.deepcopy(model)
    final["output"]["choices"][0]["message"].update(content="All files read.", tool_calls=None)
    final.update(
        uuid="final",
        timestamp=stamp(10 * turns),
        completed=stamp(10 * turns + 1),
        input_refs=[[0, len(messages)]],
    )
    final.pop("call", None)
    return [*events, final], messages


def log_files(turns: int, folder: Path) -> tuple[Path, Path]:
    """A ``turns``-turn log written by Inspect as ``.json`` and ``.eval`` into ``folder``."""
    from inspect_ai.log import EvalLog, write_eval_log

    golden = json.loads(GOLDEN.read_text())
    sample = copy.deepcopy(golden["samples"][0])
    events, messages = _events(sample["events"], turns)
    sample.update(
        events=events, messages=messages, attachments={}, events_data={"messages": messages, "calls": []}
    )
    sample.update(input="Read every file.", error=None, limit=None)
    sample["output"] = events[-1]["output"] | {"completion": "All files read."}
    log = EvalLog.model_validate({**golden, "samples": [sample]})
    paths = folder / "bench.json", folder / "bench.eval"
    for path in paths:
        write_eval_log(log, path, format=path.suffix[1:])  # type: ignore[arg-type]
    return paths


def median_time(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench(turns: int = 10_000, repeats: int = 5) -> dict[str, float]:
    """The figures for a ``turns``-turn log: seconds (medians), and the ratios to ``json.loads``."""
    with tempfile.TemporaryDirectory() as tmp:
        as_json, as_eval = log_files(turns, Path(tmp))
        for path in (as_json, as_eval):
            rec = loopnb.load(path)
            assert rec.meta["source"]["format"] == "inspect" and rec.meta["n_turns"] == turns + 1, path
        baseline = median_time(lambda: json.loads(as_json.read_bytes()), repeats)
        figures: dict[str, float] = {
            "turns": turns,
            "json_bytes": as_json.stat().st_size,
            "eval_bytes": as_eval.stat().st_size,
            "json_loads_s": baseline,
        }
        for name, path in (("json", as_json), ("eval", as_eval)):
            figures[f"load_{name}_s"] = median_time(lambda p=path: loopnb.load(p), repeats)
            figures[f"load_{name}_turns_s"] = median_time(lambda p=path: loopnb.load(p).turns, repeats)
            figures[f"ratio_{name}"] = figures[f"load_{name}_s"] / baseline
            figures[f"ratio_{name}_turns"] = figures[f"load_{name}_turns_s"] / baseline
        return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    f = bench(args.turns, args.repeats)
    print(
        f"Inspect AI log: {f['turns']:,} turns; .json {f['json_bytes']:,} bytes, .eval {f['eval_bytes']:,} "
        f"bytes; medians of {args.repeats}:\n  json.loads of the .json file: {f['json_loads_s']:.3f} s"
    )
    for name, what in (("json", ".json"), ("eval", ".eval, zstd members")):
        print(
            f"  loopnb.load({what}): {f[f'load_{name}_s']:.3f} s  ratio {f[f'ratio_{name}']:.2f}x; "
            f"with .turns {f[f'load_{name}_turns_s']:.3f} s  ratio {f[f'ratio_{name}_turns']:.2f}x"
        )


if __name__ == "__main__":
    main()
