"""A LangGraph checkpoint database of an older layout reads (issue 26, item 1).

langgraph-checkpoint-sqlite before 3.1.2 (2.0 is what the ``test`` extra allows beside langgraph
0.3) made its ``writes`` table without a ``task_path`` column; reading one was "no such column:
task_path" for every file. The databases here are made with ``sqlite3`` from the schema 2.0.0's
``SqliteSaver.setup`` writes (``libs/checkpoint-sqlite/langgraph/checkpoint/sqlite/__init__.py``),
their rows either the golden's (its ``task_path`` left out) or written as langgraph 0.3 with
langgraph-checkpoint 2.0 wrote them: version 1 checkpoints (with ``pending_sends``), messages as
msgpack ext type 5 (a pydantic v2 model: module, class, ``model_dump()``, ``"model_validate_json"``).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgpack
import pytest

import loopnb
from loopnb import RecordingError, RecordingWarning
from loopnb.fileformats._load import format_of

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "foreign" / "langgraph" / "threads.sqlite"

SCHEMA_2_0 = """
CREATE TABLE IF NOT EXISTS checkpoints (
    thread_id TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    checkpoint_id TEXT NOT NULL,
    parent_checkpoint_id TEXT,
    type TEXT,
    checkpoint BLOB,
    metadata BLOB,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
);
CREATE TABLE IF NOT EXISTS writes (
    thread_id TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    checkpoint_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    channel TEXT NOT NULL,
    type TEXT,
    value BLOB,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
);
"""
"""What ``SqliteSaver.setup`` creates in langgraph-checkpoint-sqlite 2.0.0 (and up to 3.1.1)."""

COLUMNS = ["run_id", "turn", "channel", "producer", "tools", "error_text", "source_status", "started_at"]


def old_database(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA_2_0)
    conn.commit()
    conn.close()
    return path


def rows(rec: loopnb.Recording) -> list[tuple[Any, ...]]:
    turns = rec.turns[COLUMNS]
    return list(turns.astype(object).where(turns.notna(), None).itertuples(index=False, name=None))


def test_the_goldens_runs_in_the_2_0_layout_read_as_the_golden(tmp_path):
    path = old_database(tmp_path / "old.sqlite")
    conn = sqlite3.connect(path)
    conn.execute("ATTACH DATABASE ? AS golden", (str(GOLDEN),))
    conn.execute("INSERT INTO checkpoints SELECT * FROM golden.checkpoints")
    conn.execute(
        "INSERT INTO writes SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type,"
        " value FROM golden.writes"
    )
    conn.commit()
    conn.close()
    assert format_of(path).name == "langgraph"
    rec = loopnb.load(path, errors="raise")  # no warning either: filterwarnings makes one an error
    assert rows(rec) == rows(loopnb.load(GOLDEN))
    assert rec.meta["unread"] == []


# -- a thread as langgraph 0.3 with langgraph-checkpoint 2.0 wrote it -----------------------------


def _message(module: str, cls: str, **fields: Any) -> msgpack.ExtType:
    """A LangChain message as langgraph-checkpoint 2.0's ``_msgpack_default`` writes it."""
    return msgpack.ExtType(5, msgpack.packb([module, cls, fields, "model_validate_json"], use_bin_type=True))


def human(text: str, id_: str) -> msgpack.ExtType:
    return _message("langchain_core.messages.human", "HumanMessage", content=text, type="human", id=id_)


def ai(text: str, id_: str, calls: Sequence[tuple[str, str, dict[str, Any]]] = ()) -> msgpack.ExtType:
    tool_calls = [{"name": n, "args": a, "id": c, "type": "tool_call"} for c, n, a in calls]
    return _message(
        "langchain_core.messages.ai",
        "AIMessage",
        content=text,
        type="ai",
        id=id_,
        tool_calls=tool_calls,
        invalid_tool_calls=[],
        response_metadata={"model_name": "fake-0.3"},
        usage_metadata={"input_tokens": 30, "output_tokens": 5, "total_tokens": 35},
    )


def tool(text: str, id_: str, call_id: str, status: str = "success") -> msgpack.ExtType:
    return _message(
        "langchain_core.messages.tool",
        "ToolMessage",
        content=text,
        type="tool",
        id=id_,
        name="read_file",
        tool_call_id=call_id,
        status=status,
    )


MISSING = "Error: FileNotFoundError('nots.txt')\n Please fix your mistakes."
CONVERSATION = [
    human("Read notes.txt.", "m1"),
    ai("", "m2", [("c1", "read_file", {"path": "nots.txt"})]),
    tool(MISSING, "m3", "c1", status="error"),
    ai("", "m4", [("c2", "read_file", {"path": "notes.txt"})]),
    tool("buy milk", "m5", "c2"),
    ai("The notes say: buy milk.", "m6"),
]


def _checkpoint(cid: str, step: int, messages: list[Any]) -> bytes:
    """A version 1 checkpoint (``pending_sends`` still in it), as ``SqliteSaver.put`` stored it."""
    return msgpack.packb(
        {
            "v": 1,
            "ts": f"2025-03-0{step + 2}T10:00:00+00:00",
            "id": cid,
            "channel_values": {"messages": messages},
            "channel_versions": {"messages": step + 2},
            "versions_seen": {},
            "pending_sends": [],
        },
        use_bin_type=True,
    )


def write_thread(path: Path, thread: str, steps: list[list[Any]], error: str | None = None) -> None:
    """A thread whose checkpoint ``n`` holds the messages of ``steps[n]``; each step's new
    messages written against the checkpoint before it; ``error``: an ``__error__`` write on the last."""
    conn = sqlite3.connect(path)
    parent = None
    for step, messages in enumerate(steps):
        cid = f"1f000000-0000-6000-8000-00000000{step:04d}"
        metadata = json.dumps({"source": "loop", "step": step, "writes": None, "parents": {}}).encode()
        conn.execute(
            "INSERT INTO checkpoints VALUES (?, '', ?, ?, 'msgpack', ?, ?)",
            (thread, cid, parent, _checkpoint(cid, step, messages), metadata),
        )
        if parent is not None:
            new = messages[len(steps[step - 1]) :]
            conn.execute(
                "INSERT INTO writes VALUES (?, '', ?, ?, 0, 'messages', 'msgpack', ?)",
                (thread, parent, f"task-{step}", msgpack.packb(new, use_bin_type=True)),
            )
        parent = cid
    if error is not None:
        conn.execute(
            "INSERT INTO writes VALUES (?, '', ?, 'task-x', -1, '__error__', 'msgpack', ?)",
            (thread, parent, msgpack.packb(error)),
        )
    conn.commit()
    conn.close()


def test_a_thread_langgraph_0_3_wrote_reads_turn_by_turn(tmp_path):
    path = old_database(tmp_path / "old.sqlite")
    write_thread(path, "notes", [CONVERSATION[:1], CONVERSATION[:3], CONVERSATION[:5], CONVERSATION])
    crash = [human("Delete a.", "d1"), ai("", "d2", [("c9", "delete", {"path": "a"})])]
    write_thread(path, "crashed", [crash[:1], crash], error="KeyError('a')")
    rec = loopnb.load(path, errors="raise")
    got = [r[:7] for r in rows(rec)]
    assert got == [  # the threads in order of their first checkpoint, here of their names
        ("crashed", 1, "hard", "source_error", "delete", "KeyError('a')", "langgraph:__error__:tool_call"),
        ("notes", 1, "soft", "tool_error", "read_file", MISSING, None),
        ("notes", 2, "ok", None, "read_file", None, None),
        ("notes", 3, "ok", None, None, None, None),
    ]
    calls = rec.events[rec.events["kind"] == "tool_dispatched"]
    assert calls["source_status"].tolist() == ["langgraph:error", "langgraph:success"]
    finished = rec.events[(rec.events["kind"] == "run_finished") & (rec.events["run_id"] == "notes")].iloc[0]
    assert finished["text"] == "The notes say: buy milk."
    assert rec.meta["source"] == {"format": "langgraph", "version": "checkpoint v1"}


def test_a_writes_table_without_a_column_every_layout_has_loads_without_its_writes(tmp_path):
    path = tmp_path / "odd.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(
        SCHEMA_2_0.replace("    idx INTEGER NOT NULL,\n", "").replace(", task_id, idx)", ", task_id)")
    )
    conn.close()
    conn = sqlite3.connect(path)
    conn.execute(
        "INSERT INTO checkpoints VALUES ('notes', '', 'c1', NULL, 'msgpack', ?, '{}')",
        (_checkpoint("c1", 0, CONVERSATION),),
    )
    conn.commit()
    conn.close()
    with pytest.warns(RecordingWarning) as caught:
        rec = loopnb.load(path)
    assert [str(w.message) for w in caught] == [
        f"{path}: table writes has no column idx: not the layout of LangGraph's SqliteSaver (expected"
        " thread_id, checkpoint_id, task_id, task_path, idx, channel, type, value): not read, so the"
        " errors and interrupts that ended runs, when each message came, and messages kept only as"
        " writes are missing"
    ]
    assert rec.turns["channel"].tolist() == ["soft", "ok", "ok"]


def test_a_checkpoints_table_without_its_blobs_is_no_langgraph_database(tmp_path):
    path = tmp_path / "odd.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA_2_0.replace("    checkpoint BLOB,\n", ""))
    conn.execute("INSERT INTO checkpoints VALUES ('notes', '', 'c1', NULL, 'msgpack', '{}')")
    conn.commit()
    conn.close()
    with pytest.raises(RecordingError) as caught:
        loopnb.load(path)
    assert str(caught.value) == (
        f"{path}: table checkpoints has no column checkpoint: not the layout of LangGraph's SqliteSaver"
        " (expected thread_id, checkpoint_id, parent_checkpoint_id, type, checkpoint)"
    )
