"""Benchmark the LangGraph reader on a large ``SqliteSaver`` database.

A script that prints figures (every time the median of three, measured in turn);
``bench_langgraph`` returns them for ``benchmarks/bench_foreign.py``::

    PYTHONPATH=. python benchmarks/foreign_langgraph.py              # 10,000 turns
    PYTHONPATH=. python benchmarks/foreign_langgraph.py --turns 2000

The workload is the golden's ``recovered`` thread (five turns: a tool error, an unknown tool,
invalid arguments, a success, the answer; eleven checkpoints, each holding every message so far,
as ``SqliteSaver`` keeps them) copied into ``turns / 5`` threads. A database is not JSON, so the
reader is set against the least any reader must do (select every row, ``msgpack``-decode each
thread's latest checkpoint) and, when LangGraph is installed, against LangGraph's own
``SqliteSaver.get_tuple`` for every thread (which decodes the same checkpoint and its writes).
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack

from loopnb.foreign._langgraph import read

GOLDEN = Path(__file__).resolve().parents[1] / "tests" / "golden" / "foreign" / "langgraph" / "threads.sqlite"


def copies(path: Path, turns: int) -> int:
    """Fill ``path`` with ``turns / 5`` copies of the golden's ``recovered`` thread."""
    shutil.copyfile(GOLDEN, path)
    conn = sqlite3.connect(path)
    conn.execute("DELETE FROM checkpoints WHERE thread_id != 'recovered'")
    conn.execute("DELETE FROM writes WHERE thread_id != 'recovered'")
    checkpoints = conn.execute("SELECT * FROM checkpoints").fetchall()
    writes = conn.execute("SELECT * FROM writes").fetchall()
    n = max(1, turns // 5)
    for k in range(1, n):
        conn.executemany(
            "INSERT INTO checkpoints VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(f"t{k}", *row[1:]) for row in checkpoints],
        )
        conn.executemany(
            "INSERT INTO writes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", [(f"t{k}", *row[1:]) for row in writes]
        )
    conn.commit()
    conn.close()
    return n


def least(path: Path) -> None:
    """Select every row; decode each thread's latest checkpoint (the least a reader does)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    latest: dict[str, bytes] = {}
    for thread, blob in conn.execute(
        "SELECT thread_id, checkpoint FROM checkpoints ORDER BY thread_id, checkpoint_id"
    ):
        latest[thread] = blob
    conn.execute("SELECT * FROM writes").fetchall()
    for blob in latest.values():
        msgpack.unpackb(
            blob,
            ext_hook=lambda code, data: msgpack.unpackb(data, strict_map_key=False),
            strict_map_key=False,
        )
    conn.close()


def langgraph_own(path: Path) -> Callable[[], None] | None:
    try:
        from langgraph.checkpoint.sqlite import SqliteSaver
    except ImportError:
        return None

    def run() -> None:
        conn = sqlite3.connect(path, check_same_thread=False)
        saver = SqliteSaver(conn)
        for (thread,) in conn.execute("SELECT DISTINCT thread_id FROM checkpoints").fetchall():
            saver.get_tuple({"configurable": {"thread_id": thread}})
        conn.close()

    return run


def _time(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def bench_langgraph(turns: int = 10_000, repeats: int = 3) -> dict[str, Any]:
    """The database's size and threads, the median seconds of each way of reading it, and each
    round's read against ``get_tuple`` (``ratios``; none without LangGraph)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "threads.sqlite"
        threads = copies(path, turns)
        n_turns = len(read(path).turns)
        own = langgraph_own(path)
        times: dict[str, list[float]] = {"read": [], "least": [], "langgraph": []}
        for _ in range(repeats):
            times["least"].append(_time(lambda: least(path)))
            times["read"].append(_time(lambda: read(path).turns))
            if own is not None:
                times["langgraph"].append(_time(own))
        medians = {k: statistics.median(v) for k, v in times.items() if v}
        ratios = [r / o for r, o in zip(times["read"], times["langgraph"], strict=False)]
        return {
            "threads": threads,
            "turns": n_turns,
            "MB": round(path.stat().st_size / 1e6, 1),
            **medians,
            "ratios": ratios,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=10_000)
    args = parser.parse_args()
    r = bench_langgraph(args.turns)
    print(f"{r['threads']:,} threads, {r['turns']:,} turns, {r['MB']} MB")
    print(f"  read + turns frame                      {r['read']:.3f} s")
    print(
        f"  select + msgpack of latest checkpoints  {r['least']:.3f} s   read: {r['read'] / r['least']:.1f}x"
    )
    if "langgraph" in r:
        ratio = r["read"] / r["langgraph"]
        print(f"  SqliteSaver.get_tuple per thread        {r['langgraph']:.3f} s   read: {ratio:.1f}x")


if __name__ == "__main__":
    main()
