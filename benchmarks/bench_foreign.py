"""Benchmark every foreign reader: read time against the least a reader of the same file must do.

A script that prints one table (not a timed test). It runs the figures of the per-format scripts
(``foreign_pydantic_ai.py``, ``foreign_inspect.py``, ``foreign_openai_agents.py``,
``foreign_otlp.py``, ``foreign_langgraph.py``; each still runs on its own, with more detail), each
read measured side by side with its baseline in the same process and round:

    PYTHONPATH=. python benchmarks/bench_foreign.py                      # 10,000 turns each
    PYTHONPATH=. python benchmarks/bench_foreign.py --turns 2000 --formats pydantic-ai otlp

The baseline is ``json.loads`` of the same file (of its lines, for JSON Lines; of the ``.json``
form of an Inspect log, for its ``.eval``), and for a LangGraph database, which is not JSON, a
``SELECT`` of every row with ``msgpack`` decoding of each thread's latest checkpoint (and
LangGraph's own ``SqliteSaver.get_tuple``, when it is installed). ``read`` is the reader alone
(``loopnb.load(path)``, or the format's ``read(path)`` that it calls: a ``Recording``);
``+ turns`` builds the turns frame too. Each time is a median of ``--repeats`` rounds (the
openai-agents script takes three); the pydantic-ai script times CPU seconds of this process, the
others wall time, so on a busy machine theirs move more. Target (issue 17): reading a
10,000-turn pydantic-ai history at most 3x ``json.loads`` of the same file.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable
from typing import Any

import foreign_inspect
import foreign_langgraph
import foreign_openai_agents
import foreign_otlp
import foreign_pydantic_ai

TARGET = 3.0
"""Issue 17: a 10,000-turn pydantic-ai history read in at most this many times ``json.loads``."""

COLUMNS = ("format", "workload", "turns", "read", "read s", "baseline", "baseline s", "ratio")

Row = dict[str, Any]


def _row(fmt: str, workload: str, turns: int, read: str, read_s: float, base: str, base_s: float) -> Row:
    return {
        "format": fmt,
        "workload": workload,
        "turns": turns,
        "read": read,
        "read s": read_s,
        "baseline": base,
        "baseline s": base_s,
        "ratio": read_s / base_s,
    }


def pydantic_ai(turns: int, repeats: int) -> list[Row]:
    """A history as ``all_messages_json()`` writes it, with the garbage collector on and off."""
    f = foreign_pydantic_ai.bench(turns, repeats)
    rows = []
    for label, workload in (("gc", "history"), ("nogc", "history, gc off")):
        g = f[label]
        for read, seconds in (("read", g["load_s"]), ("read + turns", g["load_turns_s"])):
            rows.append(_row("pydantic-ai", workload, turns, read, seconds, "json.loads", g["json_loads_s"]))
    return rows


def inspect(turns: int, repeats: int) -> list[Row]:
    """One sample's log, as ``.json`` and as ``.eval``; the baseline is ``json.loads`` of the ``.json``."""
    f = foreign_inspect.bench(turns, repeats)
    rows = []
    for name in ("json", "eval"):
        for read, key in (("read", f"load_{name}_s"), ("read + turns", f"load_{name}_turns_s")):
            rows.append(_row("inspect", f".{name} log", turns, read, f[key], "json.loads", f["json_loads_s"]))
    return rows


def openai_agents(turns: int, repeats: int) -> list[Row]:
    """One trace as ``JsonlProcessor`` writes it, with a Responses and a Chat Completions model."""
    del repeats  # the script's own: three
    rows = []
    for shape, f in foreign_openai_agents.bench_openai_agents(turns).items():
        for read, key in (("read", "read_s"), ("read + turns", "read_and_turns_s")):
            rows.append(
                _row(
                    "openai-agents",
                    f"{shape} trace",
                    turns,
                    read,
                    f[key],
                    "json.loads per line",
                    f["json_loads_s"],
                )
            )
    return rows


def otlp(turns: int, repeats: int) -> list[Row]:
    """pydantic-ai's spans in both OTLP JSON encodings, and one long trace."""
    return [
        _row("otlp", r["workload"], r["turns"], "read + turns", r["read s"], "json.loads", r["json.loads s"])
        for r in foreign_otlp.bench_otlp(turns, repeats)
    ]


def langgraph(turns: int, repeats: int) -> list[Row]:
    """A ``SqliteSaver`` database of many threads."""
    r = foreign_langgraph.bench_langgraph(turns, repeats)
    workload = f"{r['threads']:,} threads"
    rows = [
        _row("langgraph", workload, r["turns"], "read + turns", r["read"], "select + msgpack", r["least"])
    ]
    if r["ratios"]:
        ratios = r["ratios"]
        spread = f"{statistics.median(ratios):.2f}x [{min(ratios):.2f}-{max(ratios):.2f}]"
        print(f"langgraph: read + turns against SqliteSaver.get_tuple, round by round: {spread}")
    if "langgraph" in r:
        rows.append(
            _row(
                "langgraph",
                workload,
                r["turns"],
                "read + turns",
                r["read"],
                "SqliteSaver.get_tuple",
                r["langgraph"],
            )
        )
    return rows


BENCHES: dict[str, Callable[[int, int], list[Row]]] = {
    "pydantic-ai": pydantic_ai,
    "inspect": inspect,
    "openai-agents": openai_agents,
    "otlp": otlp,
    "langgraph": langgraph,
}
"""Each format's figures, in the order the table shows them."""


def table(rows: list[Row]) -> list[str]:
    """``rows`` as a text table: names left, numbers right."""
    cells = [
        [
            str(r["format"]),
            str(r["workload"]),
            f"{r['turns']:,}",
            str(r["read"]),
            f"{r['read s']:.3f}",
            str(r["baseline"]),
            f"{r['baseline s']:.3f}",
            f"{r['ratio']:.2f}x",
        ]
        for r in rows
    ]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(COLUMNS)]
    left = {"format", "workload", "read", "baseline"}

    def line(values: list[str] | tuple[str, ...]) -> str:
        return "  ".join(
            v.ljust(w) if h in left else v.rjust(w) for v, w, h in zip(values, widths, COLUMNS, strict=True)
        ).rstrip()

    return [line(COLUMNS), line(["-" * w for w in widths]), *(line(c) for c in cells)]


def verdict(rows: list[Row]) -> str | None:
    """Whether the pydantic-ai reader met the target, with the garbage collector on (as a user
    runs it): ``None`` when it was not measured."""
    found = [
        r for r in rows if r["format"] == "pydantic-ai" and r["workload"] == "history" and r["read"] == "read"
    ]
    if not found:
        return None
    ratio = found[0]["ratio"]
    met = "met" if ratio <= TARGET else "NOT met"
    return (
        f"target (issue 17): a {found[0]['turns']:,}-turn pydantic-ai history read in at most {TARGET:.0f}x "
        f"json.loads of the same file: {ratio:.2f}x, {met}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--formats", nargs="+", choices=list(BENCHES), default=list(BENCHES))
    args = parser.parse_args()
    rows: list[Row] = []
    for name in args.formats:
        rows += BENCHES[name](args.turns, args.repeats)
    print(f"foreign readers, {args.turns:,} turns a workload; seconds are medians of the rounds")
    for text in table(rows):
        print(text)
    said = verdict(rows)
    if said:
        print(said)


if __name__ == "__main__":
    main()
