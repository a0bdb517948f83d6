"""The LangGraph reader on the committed golden database (no LangGraph needed: msgpack only).

``tests/golden/foreign/make_langgraph.py`` made ``threads.sqlite`` with real ``SqliteSaver``
runs of a scripted graph; ``test_langgraph_live.py`` makes a new one and reads it.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import shutil
import sqlite3
import stat
from pathlib import Path
from typing import Any

import msgpack
import pandas as pd
import pytest

import loopnb
from loopnb.foreign import _langgraph
from loopnb.record import Recording, RecordingError, RecordingWarning
from loopnb.record._disagree import mark_of

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "foreign" / "langgraph" / "threads.sqlite"
COLS = ["turn", "channel", "producer", "error_text", "source_status", "tools", "model", "input_tokens"]
M = "fake-model"
INVALID = (
    "Error invoking tool 'read_file' with kwargs {'pth': 3} with error:\n path: Field required\n"
    " Please fix the error and try again."
)
STOPPED = (
    "the trace does not say why the run stopped: the thread stops before the model answered, and no"
    " pending write says more"
)
UNKNOWN = "Error: {} is not a valid tool, try one of [read_file, delete, publish]."
ASKED = "interrupted, waiting for input: {'question': 'publish notes.txt?'}"
DOWN = "RuntimeError('the model is unavailable (503)')"
TURNS = [
    (
        0,
        1,
        "soft",
        "tool_error",
        "file nots.txt not found; did you mean notes.txt?",
        None,
        "read_file",
        M,
        20,
    ),
    (0, 2, "soft", "not_advertised", UNKNOWN.format("serch"), None, "serch", M, 30),
    (0, 3, "soft", "invalid_arguments", INVALID, None, "read_file", M, 40),
    (0, 4, "ok", None, None, None, "read_file", M, 50),
    (0, 5, "ok", None, None, None, None, M, 60),
    (1, 1, "hard", "source_error", "KeyError('x')", "langgraph:__error__:tool_call", "delete", M, 20),
    (2, 1, "hard", "user_input_required", ASKED, "langgraph:__interrupt__", "publish", M, 20),
    (3, 1, "ok", None, None, None, "read_file", M, 20),
    (3, 2, "hard", "source_error", DOWN, "langgraph:__error__", None, None, None),
    (4, 1, "ok", None, None, None, "read_file", M, 20),
    (4, 2, "ok", None, None, None, "read_file", M, 30),
    (4, 3, "hard", "source_error", STOPPED, "langgraph:unanswered", None, None, None),
    (5, 1, "soft", "not_advertised", UNKNOWN.format("grep"), None, "grep", M, 20),
    (5, 2, "ok", None, None, None, "read_file", M, 30),
    (5, 3, "ok", None, None, None, None, M, 40),
]
DISAGREEMENTS = [
    (1, 1, None, "delete", "langgraph:__error__:tool_call", "hard", "panic_ended_run"),
    (5, 1, "g1", "grep", "langgraph:success", "soft", "soft_shown_as_success"),
]
THREADS = ["recovered", "crashed", "interrupted", "model_failed", "looping", "legacy"]


def plain(value: Any) -> Any:
    if value is None or value is pd.NA or (isinstance(value, float) and value != value):
        return None
    return value.item() if hasattr(value, "item") else value


def turn_rows(rec: Recording) -> list[tuple[Any, ...]]:
    runs = {r: i for i, r in enumerate(rec.meta["run_ids"])}
    return [(runs[r[0]], *map(plain, r[1:])) for r in rec.turns[["run_id", *COLS]].itertuples(index=False)]


def disagreement_rows(rec: Recording) -> list[tuple[Any, ...]]:
    runs = {r: i for i, r in enumerate(rec.meta["run_ids"])}
    rows = loopnb.audit(rec).disagreements().itertuples(index=False)
    return [(runs[r.run_id], *map(plain, r[1:7])) for r in rows]


def calls(rec: Recording) -> pd.DataFrame:
    events = rec.events
    return events[events["kind"] == "tool_dispatched"].reset_index(drop=True)


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    path = tmp_path / "threads.sqlite"
    shutil.copyfile(GOLDEN, path)
    return path


def test_each_thread_reads_turn_by_turn():
    rec = loopnb.load(GOLDEN)
    assert rec.meta["run_ids"] == THREADS
    assert turn_rows(rec) == TURNS
    assert rec.meta["source"] == {"format": "langgraph", "version": "checkpoint v4"}


def test_where_langgraph_disagrees_with_the_table():
    """LangGraph tells a tool error the model read (``status="error"``) from the run's end
    (``__error__``): no soft error shows as hard; a crash and an old-style status do disagree."""
    assert disagreement_rows(loopnb.load(GOLDEN)) == DISAGREEMENTS


def test_the_calls_keep_the_tool_messages_status():
    c = calls(loopnb.load(GOLDEN))
    recovered = c[c["run_id"] == "recovered"]
    assert list(recovered["call_id"]) == ["c1", "c2", "c3", "c4"]
    assert list(recovered["source_status"]) == ["langgraph:error"] * 3 + ["langgraph:success"]
    assert list(recovered["executed"]) == [True, False, False, True]  # unknown, uninvokable: never ran
    assert recovered["text"].iloc[3] == "hi"
    assert all(mark_of(s) is not None for s in c["source_status"])
    assert all(mark_of(s) is not None for s in loopnb.load(GOLDEN).turns["source_status"].dropna())


def test_the_runs_task_system_tools_and_outputs():
    rec = loopnb.load(GOLDEN)
    started = {e.run_id: e for e in rec.event_objects if e.kind == "run_started"}
    finished = {e.run_id: e for e in rec.event_objects if e.kind == "run_finished"}
    assert started["recovered"].task == "read the notes"
    assert started["recovered"].system == "You read files for the user."
    assert started["recovered"].tools == ("read_file", "delete", "publish")  # as ToolNode listed them
    assert started["recovered"].settings == {"thread_id": "recovered", "channel": "messages"}
    assert finished["recovered"].output == "the notes say hi" and finished["legacy"].output == "hi"
    assert [finished[t].outcome for t in THREADS] == ["ok", "hard", "hard", "hard", "hard", "ok"]
    assert finished["crashed"].error == "KeyError" and finished["interrupted"].error == "GraphInterrupt"


def test_times_come_from_the_checkpoints():
    t = loopnb.load(GOLDEN).turns
    for _, turns in t.groupby("run_id"):
        assert turns["started_at"].is_monotonic_increasing
    recovered = t[t["run_id"] == "recovered"]
    assert recovered["started_at"].nunique() == len(recovered)  # each turn its own superstep


def test_the_database_is_only_read(copy):
    before = (copy.read_bytes(), copy.stat().st_mtime_ns)
    os.chmod(copy, stat.S_IRUSR | stat.S_IRGRP)
    try:
        assert turn_rows(loopnb.load(copy)) == TURNS
    finally:
        os.chmod(copy, stat.S_IRUSR | stat.S_IWUSR)
    assert (copy.read_bytes(), copy.stat().st_mtime_ns) == before
    assert (
        not copy.with_name(copy.name + "-journal").exists()
        and not copy.with_name(copy.name + "-wal").exists()
    )


def _sql(path: Path, statement: str, *args: Any) -> None:
    conn = sqlite3.connect(path)
    conn.execute(statement, args)
    conn.commit()
    conn.close()


def test_a_pickled_checkpoint_is_refused_and_never_unpickled(copy, monkeypatch):
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("unpickled")

    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(pickle, "load", refuse)
    _sql(
        copy,
        "UPDATE checkpoints SET type = 'pickle', checkpoint = ? WHERE thread_id = 'crashed'",
        b"\x80\x04N.",
    )
    with pytest.raises(
        RecordingError, match=r"thread crashed, checkpoint .*: a pickle blob; loopnb never unpickles"
    ):
        loopnb.load(copy, errors="raise")


def test_a_pickled_write_is_skipped_with_a_warning(copy):
    _sql(copy, "UPDATE writes SET type = 'pickle' WHERE thread_id = 'crashed' AND channel = '__error__'")
    pickled = r"thread crashed, .*write '__error__'.*a pickle blob.*the write is skipped"
    with pytest.warns(RecordingWarning, match=pickled):
        rec = loopnb.load(copy)
    crashed = rec.turns[rec.turns["run_id"] == "crashed"]
    assert list(crashed["source_status"]) == ["langgraph:unanswered"]  # nothing else says why it stopped


def test_a_damaged_blob_names_the_thread_and_checkpoint(copy):
    _sql(copy, "UPDATE checkpoints SET checkpoint = ? WHERE thread_id = 'legacy'", b"\xc1")
    with pytest.raises(RecordingError, match=r"threads.sqlite: thread legacy, checkpoint .*does not decode"):
        loopnb.load(copy, errors="raise")


def test_an_sqlite_file_without_checkpoints_is_not_langgraph(tmp_path):
    path = tmp_path / "other.sqlite"
    _sql(path, "CREATE TABLE notes (body TEXT)")
    with pytest.raises(
        RecordingError, match=re.escape("no checkpoints table (found notes): not a LangGraph")
    ):
        loopnb.load(path, format="langgraph")
    (tmp_path / "text.db").write_text("not a database at all, just some text " * 200)
    with pytest.raises(RecordingError, match="not a readable SQLite database"):
        loopnb.load(tmp_path / "text.db", format="langgraph")


def test_an_older_json_checkpoint_with_langchain_constructors(copy):
    ai = {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "AIMessage"]}
    human = {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "HumanMessage"]}
    body = {
        "v": 1,
        "ts": "2024-05-01T10:00:00+00:00",
        "channel_values": {
            "messages": [
                {**human, "kwargs": {"content": "hello", "type": "human"}},
                {**ai, "kwargs": {"content": [{"type": "text", "text": "hi there"}], "type": "ai"}},
            ]
        },
    }
    _sql(
        copy,
        "INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, type, checkpoint, metadata)"
        " VALUES ('old', '', '1ef00000-0000-6000-8000-000000000000', 'json', ?, '{}')",
        json.dumps(body).encode(),
    )
    rec = loopnb.load(copy)
    old = rec.turns[rec.turns["run_id"] == "old"]
    assert list(old["channel"]) == ["ok"] and old["reply_text"].iloc[0] == "hi there"
    assert next(e.task for e in rec.event_objects if e.kind == "run_started" and e.run_id == "old") == "hello"


def test_objects_are_kept_as_data_never_constructed():
    from loopnb.foreign._langgraph_file import Obj, unpack

    evil = msgpack.ExtType(0, msgpack.packb(["os", "system", "echo unsafe"]))
    value = unpack(msgpack.packb({"x": evil}), "test", Path("x"))
    assert value == {"x": Obj("os", "system", "echo unsafe")}


def test_load_detects_the_database_and_the_tools_work_on_it(tmp_path):
    rec = loopnb.load(GOLDEN)
    flows = loopnb.flow_counts(rec).set_index(["source", "target"])["count"]
    assert flows["failed", "adapt"] == flows["adapt", "soft"] + flows["adapt", "hard"]
    assert flows["adapt", "soft"] == int((rec.turns["channel"] == "soft").sum())
    assert not loopnb.audit(rec).summary().empty
    view = loopnb.replay(rec, run_id="recovered")
    assert [t.channel for t in view.state.turns] == ["soft", "soft", "soft", "ok", "ok"]
    page = rec.to_html(tmp_path / "report.html") or tmp_path / "report.html"
    html = Path(page).read_text(encoding="utf-8")
    assert "serch is not a valid tool" in html and "KeyError(" in html
    frame = loopnb.load_many([GOLDEN, GOLDEN.parents[1] / "otlp" / "openinference.otlp.jsonl"])
    assert len(frame) == len(TURNS) + 6 and frame["source_status"].dropna().str.contains(":").all()


def test_the_marks_cover_every_status():
    assert set(_langgraph.MARKS.values()) <= {"ok", "error", "retry", "missing", "crash", "ended"}
