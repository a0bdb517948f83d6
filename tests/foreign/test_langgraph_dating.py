"""Each LangGraph message is dated by the checkpoint of the step that added it: read from how many
messages each checkpoint's ``messages`` channel held (msgpack headers, nothing decoded), and from
the writes wherever that could differ (a message removed or replaced, a fork, an untimed or
damaged checkpoint). Both ways give the same turns; damage in what the headers read falls back to
the writes, never raises."""

from __future__ import annotations

import shutil
import sqlite3
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack
import pandas as pd
import pytest

import loopnb
from loopnb.foreign import _langgraph, _langgraph_db
from loopnb.foreign._formats import Unread
from loopnb.foreign._langgraph_db import Thread, _header, dated, threads
from loopnb.record import RecordingError, RecordingWarning
from tests.foreign.frameworks import need

GOLDEN = Path(__file__).parents[1] / "golden" / "foreign" / "langgraph" / "threads.sqlite"
KINDS = {
    "human": "HumanMessage",
    "ai": "AIMessage",
    "tool": "ToolMessage",
    "remove": ("modifier", "RemoveMessage"),
}


def by_writes(monkeypatch: pytest.MonkeyPatch, path: Path) -> loopnb.Recording:
    """``path`` loaded with every message dated by its first write (the headers never used)."""
    with monkeypatch.context() as m:
        m.setattr(_langgraph, "dated", lambda thread, ids: None)
        return loopnb.load(path)


def same_reading(a: loopnb.Recording, b: loopnb.Recording) -> None:
    pd.testing.assert_frame_equal(a.turns, b.turns)
    pd.testing.assert_frame_equal(a.events, b.events)


def latest_ids(path: Path, thread: Thread) -> list[str | None]:
    found = _langgraph._latest(thread, Unread("raise", path))
    assert found is not None
    channel, msgs = _langgraph._messages(found[1])
    assert channel == "messages"
    return [m.id for m in msgs]


def thread_of(path: Path, thread_id: str) -> Thread:
    found, _ = threads(path, Unread("warn", path))
    return next(t for t in found if t.thread_id == thread_id)


# -- the same turns either way ---------------------------------------------------------------------


def test_the_goldens_threads_are_dated_from_the_headers_as_their_writes_date_them(monkeypatch):
    found, _ = threads(GOLDEN)
    for thread in found:
        assert dated(thread, latest_ids(GOLDEN, thread)) is not None, thread.thread_id
    same_reading(loopnb.load(GOLDEN), by_writes(monkeypatch, GOLDEN))


def message(kind: str, id: str | None, content: str = "", **fields: Any) -> msgpack.ExtType:
    """A LangChain message as LangGraph's serde writes one (ext type 5: pydantic v2)."""
    module, cls = KINDS[kind] if isinstance(KINDS[kind], tuple) else (kind, KINDS[kind])
    value = {"content": content, "type": kind, "id": id, **fields}
    return msgpack.ExtType(
        5, msgpack.packb([f"langchain_core.messages.{module}", cls, value, "model_validate"])
    )


def ai(id: str | None, text: str = "", call: str | None = None) -> msgpack.ExtType:
    calls = [{"name": "grep", "args": {"q": "x"}, "id": call, "type": "tool_call"}] if call else []
    return message("ai", id, text, tool_calls=calls, response_metadata={"model_name": "m"})


def at(n: int) -> pd.Timestamp:
    """When the thread's checkpoint ``n`` was taken."""
    return pd.Timestamp(f"2027-01-01T00:00:{n:02d}+00:00")


def database(path: Path, steps: list[list[msgpack.ExtType]], thread: str = "t") -> Path:
    """A thread whose step n wrote ``steps[n]`` to ``messages`` (``add_messages`` applied to make
    each next checkpoint: a message with a known id replaces it, a ``remove`` deletes it), one
    second apart."""
    conn = sqlite3.connect(path)
    for table in ("checkpoints", "writes"):
        (schema,) = (
            sqlite3.connect(GOLDEN)
            .execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,))
            .fetchone()
        )
        conn.execute(schema.replace(f"TABLE {table}", f"TABLE IF NOT EXISTS {table}"))
    held: dict[str, msgpack.ExtType] = {}
    parent = None
    for n in range(len(steps) + 1):
        cid = f"1f000000-0000-6000-8000-{n:012d}"
        values = {"messages": list(held.values())} if held else {}
        blob = msgpack.packb(
            {"v": 4, "ts": f"2027-01-01T00:00:{n:02d}+00:00", "id": cid, "channel_values": values}
        )
        conn.execute(
            "INSERT INTO checkpoints VALUES (?, '', ?, ?, 'msgpack', ?, '{}')", (thread, cid, parent, blob)
        )
        if n < len(steps):
            conn.execute(
                "INSERT INTO writes VALUES (?, '', ?, ?, '', 0, 'messages', 'msgpack', ?)",
                (thread, cid, f"task{n}", msgpack.packb(steps[n])),
            )
            for m in steps[n]:
                value = msgpack.unpackb(m.data)[2]
                if value["id"] == "__remove_all__":
                    held.clear()
                elif value["type"] == "remove":
                    del held[value["id"]]
                else:
                    held[value["id"]] = m
        parent = cid
    conn.commit()
    conn.close()
    return path


STEPS = [
    [message("human", "h1", "find x")],
    [ai("a1", call="c1")],
    [message("tool", "t1", "found", tool_call_id="c1", name="grep", status="success")],
    [ai("a2", call="c2")],
    [message("tool", "t2", "again", tool_call_id="c2", name="grep", status="success")],
]
EDITS = {
    # a2 removed and a3 added in one step: the channel's length stays 5, so its lengths alone
    # would date a3 by the checkpoint before its step
    "removed": [[message("remove", "a2"), ai("a3", "done")]],
    # a1 rewritten in place (same id) beside a new reply: a1 keeps the time of its first write
    "replaced": [[ai("a1", "rewritten", call="c1"), ai("a3", "done")]],
    # every message removed, then a new reply
    "cleared": [
        [message("remove", "__remove_all__"), message("human", "h2", "start over")],
        [ai("a3", "done")],
    ],
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_a_run_with_removed_or_replaced_messages_is_dated_by_its_writes(tmp_path, monkeypatch, edit):
    path = database(tmp_path / "t.sqlite", [*STEPS, *EDITS[edit]])
    thread = thread_of(path, "t")
    assert dated(thread, latest_ids(path, thread)) is None  # the writes say when
    rec = loopnb.load(path)
    same_reading(rec, by_writes(monkeypatch, path))
    last = rec.turns.iloc[-1]
    assert last["started_at"] == at(len(STEPS) + len(EDITS[edit]))  # the checkpoint its step made


def test_a_run_that_only_grows_is_dated_from_the_headers(tmp_path, monkeypatch):
    path = database(tmp_path / "t.sqlite", [*STEPS, [ai("a3", "done")]])
    thread = thread_of(path, "t")
    found = dated(thread, latest_ids(path, thread))
    assert found is not None
    assert found["a3"] == at(len(STEPS) + 1).timestamp()
    same_reading(loopnb.load(path), by_writes(monkeypatch, path))


def test_a_message_written_without_its_id_is_dated_by_the_writes(tmp_path, monkeypatch):
    """``add_messages`` gives a message without an id one as it reaches the state; its write,
    made before, has none, so the writes cannot date it and the headers must not either."""
    path = database(tmp_path / "t.sqlite", [*STEPS, [ai("a3", "done")]])
    conn = sqlite3.connect(path)
    (cid,) = conn.execute("SELECT max(checkpoint_id) FROM writes").fetchone()
    conn.execute(
        "UPDATE writes SET value = ? WHERE checkpoint_id = ?", (msgpack.packb([ai(None, "done")]), cid)
    )
    conn.commit()
    conn.close()
    thread = thread_of(path, "t")
    assert dated(thread, latest_ids(path, thread)) is None
    rec = loopnb.load(path)
    same_reading(rec, by_writes(monkeypatch, path))
    assert rec.turns.iloc[-1]["started_at"] < at(len(STEPS) + 1)  # no time of its own


def langgraph_run(path: Path) -> Path:
    """Two threads of a real graph: ``plain`` only grows; in ``edits`` the model's first reply is
    removed and the user's second message replaced (same id) on later invocations."""
    need("langgraph", "langgraph.graph", "langgraph.checkpoint.sqlite", "langchain_core.messages")
    from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import START, MessagesState, StateGraph

    replies: dict[str, list[list[Any]]] = {
        "plain": [[AIMessage("a", id="p1")], [AIMessage("b", id="p2")]],
        "edits": [
            [AIMessage("a", id="a1")],
            [RemoveMessage(id="a1"), AIMessage("b", id="a2")],
            [AIMessage("c", id="a3")],
        ],
    }

    now: list[str] = []  # the thread being run

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": replies[now[-1]].pop(0)}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_edge(START, "agent")
    conn = sqlite3.connect(path, check_same_thread=False)
    app = graph.compile(checkpointer=SqliteSaver(conn))
    for thread, said in (("plain", ["one", "two"]), ("edits", ["one", "two", "three"])):
        now.append(thread)
        for n, text in enumerate(said):
            human = HumanMessage(text, id=f"h{min(n, 1)}")  # the third replaces the second
            app.invoke({"messages": [human]}, {"configurable": {"thread_id": thread}})
    conn.close()
    return path


def test_a_real_graph_that_removes_and_replaces_messages_reads_the_same_either_way(tmp_path, monkeypatch):
    path = langgraph_run(tmp_path / "graph.sqlite")
    for thread_id, headers in (("plain", True), ("edits", False)):
        thread = thread_of(path, thread_id)
        assert (dated(thread, latest_ids(path, thread)) is not None) is headers
    rec = loopnb.load(path)
    same_reading(rec, by_writes(monkeypatch, path))
    assert list(rec.turns["run_id"]) == ["plain", "plain", "edits", "edits"]


# -- damage where the headers are read ---------------------------------------------------------------


def checkpoint_blobs(path: Path, thread: str) -> list[tuple[str, bytes]]:
    conn = sqlite3.connect(path)
    rows = conn.execute(
        "SELECT checkpoint_id, checkpoint FROM checkpoints WHERE thread_id = ? ORDER BY checkpoint_id",
        (thread,),
    ).fetchall()
    conn.close()
    return rows


def test_a_checkpoint_cut_or_garbled_anywhere_reads_its_header_or_says_why():
    """Every prefix of a checkpoint, and the checkpoint with each byte made one msgpack never
    writes (0xc1): its ``ts``, ``v`` and message count, or a ``RecordingError``, never another
    exception."""
    _, blob = checkpoint_blobs(GOLDEN, "recovered")[3]
    damaged = [blob[:n] for n in range(len(blob))] + [
        blob[:n] + b"\xc1" + blob[n + 1 :] for n in range(len(blob))
    ]
    held = set()
    for data in damaged:
        try:
            _, _, count = _header("msgpack", data, "here", GOLDEN)
        except RecordingError as exc:
            assert str(exc).startswith(f"{GOLDEN}: here: a checkpoint that does not decode")
            continue
        assert count is None or count >= -1
        held.add(count)
    assert {None, 4} <= held  # unread where cut before its messages' count; else the count


def replace_checkpoint(path: Path, cid: str, blob: bytes) -> None:
    conn = sqlite3.connect(path)
    conn.execute("UPDATE checkpoints SET checkpoint = ? WHERE checkpoint_id = ?", (blob, cid))
    conn.commit()
    conn.close()


def cut_at_messages(blob: bytes) -> bytes:
    """The checkpoint cut off before its messages array: its ``ts`` and ``v`` still read."""
    return blob[: blob.index(b"\xa8messages") + 9]


def cut_in_messages(blob: bytes) -> bytes:
    """The checkpoint cut off in its first message, past the count of its messages."""
    return blob[: blob.index(b"\xa8messages") + 12]


def lying_count(blob: bytes) -> bytes:
    """The checkpoint's messages array claims 15 messages (it holds fewer)."""
    at = blob.index(b"\xa8messages") + 9
    assert 0x90 <= blob[at] <= 0x9F
    return blob[:at] + b"\x9f" + blob[at + 1 :]


@pytest.mark.parametrize(
    ("damage", "headers"), [(cut_at_messages, False), (lying_count, False), (cut_in_messages, True)]
)
def test_damage_in_a_checkpoint_the_reader_never_decodes_spoils_nothing(tmp_path, damage, headers):
    """A checkpoint before the latest is read only for its time and its count of messages: where
    that cannot be read, or says what cannot be, the writes date the messages instead."""
    path = tmp_path / "threads.sqlite"
    shutil.copyfile(GOLDEN, path)
    cid, blob = checkpoint_blobs(path, "recovered")[4]
    replace_checkpoint(path, cid, damage(blob))
    thread = thread_of(path, "recovered")
    assert (dated(thread, latest_ids(path, thread)) is not None) is headers
    with warnings.catch_warnings():
        warnings.simplefilter("error", RecordingWarning)
        rec = loopnb.load(path)
    same_reading(rec, loopnb.load(GOLDEN))
    assert rec.meta["unread"] == []


def change_messages_write(path: Path, change: Callable[[bytes], bytes]) -> tuple[str, str]:
    """A copy of the golden at ``path`` with the value of the ``recovered`` thread's third messages
    write (its first tool answer) changed; that write's checkpoint and task."""
    shutil.copyfile(GOLDEN, path)
    conn = sqlite3.connect(path)
    cid, task, value = conn.execute(
        "SELECT checkpoint_id, task_id, value FROM writes WHERE thread_id = 'recovered'"
        " AND channel = 'messages' ORDER BY checkpoint_id LIMIT 1 OFFSET 2"
    ).fetchone()
    conn.execute(
        "UPDATE writes SET value = ? WHERE checkpoint_id = ? AND task_id = ? AND channel = 'messages'",
        (change(value), cid, task),
    )
    conn.commit()
    conn.close()
    return cid, task


@pytest.mark.parametrize("value", [b"", b"\xdd\xff\xff\xff\xff", b"\xdc\x00"])
def test_a_messages_write_whose_header_does_not_read_is_decoded_and_skipped_with_a_warning(tmp_path, value):
    path = tmp_path / "threads.sqlite"
    cid, task = change_messages_write(path, lambda _: value)
    thread = thread_of(path, "recovered")
    assert dated(thread, latest_ids(path, thread)) is None
    with pytest.warns(RecordingWarning) as caught:
        rec = loopnb.load(path)
    (warning,) = caught
    text = str(warning.message)
    assert text.startswith(f"{path}: thread recovered, checkpoint {cid}, write 'messages' of task {task}")
    assert text.endswith("; the write is skipped")
    golden = loopnb.load(GOLDEN).turns
    assert rec.turns[["run_id", "turn", "channel"]].equals(golden[["run_id", "turn", "channel"]])


def test_the_header_read_off_the_bytes_is_msgpacks_reading(tmp_path, monkeypatch):
    """``_header`` reads LangGraph's own layout straight off the bytes: wherever it does, what it
    reads is what msgpack reads, on every checkpoint of the golden and of a thread of 20 messages
    (past what one byte counts), every prefix of two, and those with each of their first 120 bytes
    made each other value."""
    long = database(tmp_path / "long.sqlite", [[message("human", f"h{n}")] for n in range(20)])
    blobs = []
    for path in (GOLDEN, long):
        conn = sqlite3.connect(path)
        blobs += [row[0] for row in conn.execute("SELECT checkpoint FROM checkpoints ORDER BY checkpoint_id")]
        conn.close()
    cases = list(blobs)
    for blob in (blobs[3], blobs[-1]):
        cases += [blob[:n] for n in range(len(blob))]
        cases += [
            blob[:n] + bytes([b]) + blob[n + 1 :] for n in range(120) for b in range(256) if b != blob[n]
        ]
    fast = [_langgraph_db._as_langgraph_writes_it(data) for data in cases]
    monkeypatch.setattr(_langgraph_db, "_as_langgraph_writes_it", lambda data: None)
    read = 0
    for data, quick in zip(cases, fast, strict=True):
        if quick is None:
            continue
        read += 1
        assert quick == _header("msgpack", data, "here", GOLDEN), data
    assert read > len(blobs) // 2  # LangGraph's own checkpoints are read off their bytes
    assert fast[len(blobs) - 1] == ("2027-01-01T00:00:20+00:00", 4, 20)


def test_a_messages_write_cut_short_past_its_ids_spoils_nothing_once_the_counts_date_them(tmp_path):
    """A write the checkpoints' counts make needless is read for its first bytes and ids only:
    damage past them is never read (the module's rule: what the reader never needs cannot spoil a
    load), and the message it added keeps its time."""
    path = tmp_path / "threads.sqlite"
    change_messages_write(path, lambda value: value[:-20])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RecordingWarning)
        rec = loopnb.load(path)
    same_reading(rec, loopnb.load(GOLDEN))
    assert rec.meta["unread"] == []
