"""The LangGraph reader on damaged and hostile databases (issue 24): each ends in a
``RecordingError`` or a ``RecordingWarning`` naming the place, never a crash, a hang or a raw
exception.

The databases are built here with ``sqlite3`` and ``msgpack``, most from a copy of the golden.
Those that crashed the interpreter (nested ext types) or never returned (a view over an endless
query) are loaded in a child process, so that a regression fails the test instead of pytest.
"""

from __future__ import annotations

import math
import shutil
import sqlite3
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack
import pytest

import loopnb
from loopnb.fileformats._load import format_of
from loopnb.foreign._langgraph_file import unpack
from loopnb.record import RecordingError, RecordingWarning

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "foreign" / "langgraph" / "threads.sqlite"
TS = "2027-01-01T00:00:00+00:00"
CID = "1f000000-0000-6000-8000-000000000001"
MAX_DEPTH = 100  # how deep loopnb reads nested ext types, lists and maps
TOO_DEEP = f"lists, maps or ext types nested deeper than {MAX_DEPTH} levels"
LATEST = "(SELECT max(checkpoint_id) FROM checkpoints WHERE thread_id = 'legacy')"
ENDLESS = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT {columns} FROM n"
CHILD = """
import sys, threading, warnings
import loopnb

def main():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            print("turns", len(loopnb.load(sys.argv[1]).turns))
        except loopnb.RecordingError as exc:
            print("error", exc)
    for w in caught:
        print("warning", w.category.__name__, w.message)

threading.stack_size(int(sys.argv[2]))
thread = threading.Thread(target=main)
thread.start()
thread.join()
"""


def sql(path: Path, *statements: str, args: tuple[Any, ...] = ()) -> None:
    conn = sqlite3.connect(path)
    for statement in statements:
        conn.execute(statement, args)
    conn.commit()
    conn.close()


def copy_of_golden(path: Path) -> Path:
    shutil.copyfile(GOLDEN, path)
    return path


def fresh(path: Path) -> Path:
    """An empty database with the golden's two tables."""
    golden = sqlite3.connect(GOLDEN)
    schema = [row[0] for row in golden.execute("SELECT sql FROM sqlite_master WHERE type = 'table'")]
    golden.close()
    sql(path, *schema)
    return path


def message(kind: str, **fields: Any) -> msgpack.ExtType:
    """A LangChain message as LangGraph's serde writes one (ext type 5: pydantic v2)."""
    cls = {"human": "HumanMessage", "ai": "AIMessage"}[kind]
    payload = [f"langchain_core.messages.{kind}", cls, {"type": kind, **fields}, "model_validate_json"]
    return msgpack.ExtType(5, msgpack.packb(payload))


def body(messages: Any) -> bytes:
    """A checkpoint as LangGraph's serde writes one, with ``messages`` in its ``messages`` channel."""
    return msgpack.packb({"v": 4, "ts": TS, "channel_values": {"messages": messages}})


def add_thread(path: Path, thread: str, blob: Any, kind: str = "msgpack") -> None:
    sql(
        path,
        "INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, type, checkpoint, metadata)"
        " VALUES (?, '', ?, ?, ?, '{}')",
        args=(thread, CID, kind, blob),
    )


def nested_ext(depth: int) -> msgpack.ExtType:
    """``depth`` ext types, each the payload of the one outside it."""
    data = msgpack.packb(None)
    for _ in range(depth - 1):
        data = msgpack.packb(msgpack.ExtType(0, data))
    return msgpack.ExtType(0, data)


# 1,000 nested one-item arrays: msgpack reads them, Python's repr cannot
DEEP_LISTS = b"\x91" * 1000 + b"\xc0"
DEEP_JSON = b"[" * 100_000 + b"]" * 100_000
DEEP_CHECKPOINT = body([]).replace(msgpack.packb([]), DEEP_LISTS)  # messages: DEEP_LISTS, too deep to pack


def load_in_child(path: Path, timeout: float = 120, stack: int = 0) -> list[str]:
    """What ``loopnb.load(path)`` said in a child process, on a thread with ``stack`` bytes of
    stack (0: the platform's default): ``turns N`` or ``error ...``, then each warning; a crash or
    a hang fails the test."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(path), str(stack)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"load() did not return within {timeout:g} s")
    assert done.returncode == 0, f"the child died ({done.returncode}): {done.stderr[-2000:]}"
    return done.stdout.splitlines()


def turns(rec: loopnb.Recording, run_id: str) -> list[tuple[Any, ...]]:
    t = rec.turns[rec.turns["run_id"] == run_id]
    return list(t[["channel", "source_status"]].itertuples(index=False, name=None))


# -- 4: nested ext types --------------------------------------------------------------------------


def deep_checkpoint(path: Path) -> None:
    fresh(path)
    add_thread(path, "deep", body(nested_ext(1000)))


def deep_ts(path: Path) -> None:
    fresh(path)
    add_thread(path, "deep", msgpack.packb({"ts": nested_ext(1000), "v": 4, "channel_values": {}}))


@pytest.mark.parametrize("build", [deep_checkpoint, deep_ts])
def test_nested_ext_types_in_a_checkpoint_are_an_error_not_a_crash(tmp_path, build):
    path = tmp_path / "deep.sqlite"
    build(path)
    assert path.stat().st_size < 32_000  # a small file that crashed the interpreter
    said = load_in_child(path)
    assert said == [
        f"error {path}: thread deep, checkpoint {CID}: {TOO_DEEP}, not read (LangGraph's own nest a "
        "dozen at most)"
    ]


def test_nested_ext_types_within_the_bound_read_on_a_small_stack(tmp_path):
    """msgpack holds its parse stack on the C stack (tens of KB a call): ext types read by nesting
    its calls crashed a 512 KB thread (macOS's default) at a few dozen levels."""
    path = fresh(tmp_path / "deep.sqlite")
    add_thread(path, "deep", body(nested_ext(MAX_DEPTH - 3)))  # within the bound, with the map above
    assert load_in_child(path, stack=512 * 1024) == [
        "turns 0",
        f"warning RecordingWarning {path}: thread deep, checkpoint {CID}: no messages, neither in the "
        "checkpoint's channels nor in the writes: a run with no turns",
    ]


def test_nested_ext_types_in_a_write_skip_that_write(tmp_path):
    path = copy_of_golden(tmp_path / "threads.sqlite")
    sql(
        path,
        "UPDATE writes SET value = ? WHERE thread_id = 'crashed' AND channel = '__error__'",
        args=(msgpack.packb(nested_ext(1000)),),
    )
    said = load_in_child(path)
    assert said[0] == "turns 15"
    assert len(said) == 2 and said[1].startswith(f"warning RecordingWarning {path}: thread crashed, ")
    assert said[1].endswith(
        f"write '__error__' of task {task_of(path, 'crashed')}: {TOO_DEEP}, not read (LangGraph's own "
        "nest a dozen at most); the write is skipped"
    )


def task_of(path: Path, thread: str) -> str:
    conn = sqlite3.connect(path)
    (task,) = conn.execute(
        "SELECT task_id FROM writes WHERE thread_id = ? AND channel = '__error__'", (thread,)
    ).fetchone()
    conn.close()
    return str(task)


def test_ext_types_nest_up_to_the_bound():
    assert unpack(msgpack.packb(nested_ext(MAX_DEPTH)), "here", Path("x")) is not None
    with pytest.raises(RecordingError, match=f"here: {TOO_DEEP}"):
        unpack(msgpack.packb(nested_ext(MAX_DEPTH + 1)), "here", Path("x"))


# -- 6: views, virtual tables, generated columns, the query budget ------------------------------------


WRITES = "thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type, value"
CHECKPOINTS = "thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata"


def writes_view(path: Path) -> None:
    copy_of_golden(path)
    columns = "'recovered', '', 'c' || i, 't', '', i, 'messages', 'null', NULL"
    sql(path, "DROP TABLE writes", f"CREATE VIEW writes ({WRITES}) AS " + ENDLESS.format(columns=columns))


def checkpoints_view(path: Path) -> None:
    copy_of_golden(path)
    columns = "'t', '', 'c' || i, NULL, 'null', NULL, '{}'"
    sql(
        path,
        "DROP TABLE checkpoints",
        f"CREATE VIEW checkpoints ({CHECKPOINTS}) AS " + ENDLESS.format(columns=columns),
    )


def test_a_writes_view_over_an_endless_query_is_not_read(tmp_path):
    path = tmp_path / "threads.sqlite"
    writes_view(path)
    assert load_in_child(path) == [
        "turns 15",
        f"warning RecordingWarning {path}: writes is a view, not a stored table: not read, so the errors "
        "and interrupts that ended runs, when each message came, and messages kept only as writes are "
        "missing",
    ]


def test_a_checkpoints_view_is_not_a_checkpoints_table(tmp_path):
    path = tmp_path / "threads.sqlite"
    checkpoints_view(path)
    assert load_in_child(path) == [
        f"error {path}: no checkpoints table (checkpoints is a view; loopnb reads stored tables only): "
        "not a LangGraph SqliteSaver database"
    ]


def test_a_query_past_its_budget_is_stopped_with_an_error(monkeypatch):
    from loopnb.foreign import _langgraph_file

    monkeypatch.setattr(_langgraph_file, "TICK", 1)
    monkeypatch.setattr(_langgraph_file, "BASE_TICKS", 50)
    monkeypatch.setattr(_langgraph_file, "TICKS_PER_KB", 0)
    with pytest.raises(RecordingError) as caught:
        loopnb.load(GOLDEN)
    assert str(caught.value) == (
        f"{GOLDEN}: a query ran past 50 SQLite steps and was stopped: more work than a database of "
        "this size holds (a hostile schema?)"
    )


def test_the_connection_runs_nothing_from_the_file():
    from loopnb.foreign import _langgraph_file

    budget = _langgraph_file.budget_for(GOLDEN)
    conn, kinds = _langgraph_file.connect(GOLDEN, budget)
    try:
        assert kinds["checkpoints"] == kinds["writes"] == "table"
        if sqlite3.sqlite_version_info >= (3, 31):  # older SQLite has no such setting
            assert conn.execute("PRAGMA trusted_schema").fetchone() == (0,)
        assert conn.execute("PRAGMA query_only").fetchone() == (1,)
        with pytest.raises(sqlite3.OperationalError):
            conn.execute("SELECT load_extension('libanything')")
        with pytest.raises(sqlite3.OperationalError):
            conn.execute("CREATE TABLE written (x)")
    finally:
        conn.close()


def virtual_checkpoints(path: Path) -> None:
    copy_of_golden(path)
    # fts5 ships with the SQLite of every Python here; a build without it fails this case loudly
    sql(path, "DROP TABLE checkpoints", f"CREATE VIRTUAL TABLE checkpoints USING fts5({CHECKPOINTS})")


def generated_checkpoint(path: Path) -> None:
    copy_of_golden(path)
    sql(
        path,
        "ALTER TABLE checkpoints RENAME TO kept",
        "CREATE TABLE checkpoints (thread_id TEXT, checkpoint_ns TEXT, checkpoint_id TEXT,"
        " parent_checkpoint_id TEXT, type TEXT, raw BLOB, checkpoint BLOB AS (raw || x''), metadata BLOB)",
        "INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, raw,"
        f" metadata) SELECT {CHECKPOINTS} FROM kept",
        "DROP TABLE kept",
    )


def test_a_virtual_table_or_a_generated_column_is_refused(tmp_path):
    virtual_checkpoints(tmp_path / "virtual.sqlite")
    with pytest.raises(
        RecordingError, match=r"no checkpoints table \(checkpoints is a virtual table; loopnb"
    ):
        loopnb.load(tmp_path / "virtual.sqlite")
    generated_checkpoint(tmp_path / "generated.sqlite")
    with pytest.raises(RecordingError) as caught:
        loopnb.load(tmp_path / "generated.sqlite")
    assert caught.value.reason == (
        "column checkpoint of table checkpoints is computed each time it is read (a generated column); "
        "loopnb reads stored values only"
    )


# -- 8: values of the wrong kind, and nesting past Python's recursion ---------------------------------


def loose_writes(path: Path) -> None:
    """The golden's ``writes`` without its constraints, so ``idx`` may be NULL."""
    copy_of_golden(path)
    sql(
        path,
        "CREATE TABLE loose AS SELECT * FROM writes",
        "DROP TABLE writes",
        "ALTER TABLE loose RENAME TO writes",
    )


@pytest.mark.parametrize(
    ("change", "args", "said"),
    [
        ("idx = 'first'", (), "column idx holds TEXT 'first', expected an INTEGER"),
        ("idx = NULL", (), "column idx holds NULL, expected an INTEGER"),
        ("value = 'KeyError'", (), "column value holds TEXT 'KeyError', expected a BLOB of msgpack"),
        ("value = 7", (), "column value holds INTEGER 7, expected a BLOB of msgpack"),
        ("value = ?", (DEEP_LISTS,), TOO_DEEP),
        ("type = 'json', value = ?", (DEEP_JSON,), TOO_DEEP),
    ],
)
def test_a_write_that_cannot_be_read_is_skipped_with_a_warning(tmp_path, change, args, said):
    path = tmp_path / "threads.sqlite"
    loose_writes(path)
    sql(path, f"UPDATE writes SET {change} WHERE thread_id = 'crashed' AND channel = '__error__'", args=args)
    with pytest.warns(RecordingWarning) as caught:
        rec = loopnb.load(path)
    (warning,) = caught
    text = str(warning.message)
    assert text.startswith(f"{path}: thread crashed, checkpoint ")
    assert f", write '__error__' of task {task_of(path, 'crashed')}: {said}" in text
    assert text.endswith("; the write is skipped")
    assert turns(rec, "crashed") == [("hard", "langgraph:unanswered")]  # nothing else says why it stopped
    assert len(rec.turns) == 15


@pytest.mark.parametrize(
    ("change", "args", "said"),
    [
        (
            "checkpoint = 'a checkpoint'",
            (),
            "column checkpoint holds TEXT 'a checkpoint', expected a BLOB of msgpack",
        ),
        ("checkpoint = 42", (), "column checkpoint holds INTEGER 42, expected a BLOB of msgpack"),
        ("checkpoint = ?", (DEEP_CHECKPOINT,), TOO_DEEP),
        (
            "type = 'json', checkpoint = ?",
            (DEEP_JSON,),
            TOO_DEEP,
        ),
    ],
)
def test_a_checkpoint_that_cannot_be_read_is_an_error_naming_it(tmp_path, change, args, said):
    path = copy_of_golden(tmp_path / "threads.sqlite")
    sql(
        path,
        f"UPDATE checkpoints SET {change} WHERE thread_id = 'legacy' AND checkpoint_id = {LATEST}",
        args=args,
    )
    conn = sqlite3.connect(path)
    (latest,) = conn.execute(LATEST.strip("()")).fetchone()
    conn.close()
    with pytest.raises(RecordingError) as caught:
        loopnb.load(path, errors="raise")
    assert str(caught.value).startswith(f"{path}: thread legacy, checkpoint {latest}: {said}")


def test_odd_values_in_messages_load_with_a_word_or_as_nothing(tmp_path):
    path = copy_of_golden(tmp_path / "threads.sqlite")
    human = message("human", content="hi", id="h1")
    msgs = [
        human,
        message("ai", content="", id="a1", tool_calls=7, usage_metadata={"input_tokens": "many"}),
        message("ai", content="", id="a2", usage_metadata={"input_tokens": math.inf}),
        message("ai", content="done", id="a3", usage_metadata={"input_tokens": 2**64 - 1}),
    ]
    nameless = {"type": "constructor", "id": [], "kwargs": {}}  # no class named: not a message
    values = {"messages": msgs, "other": [nameless]}
    add_thread(path, "odd", msgpack.packb({"v": [4], "ts": TS, "channel_values": values}))
    with pytest.warns(RecordingWarning) as caught:
        rec = loopnb.load(path)
    texts = [str(w.message) for w in caught]
    assert texts == [
        f"{path}: thread odd, message {m}: usage_metadata should hold counts of tokens, found input_tokens "
        f"{n} and output_tokens None; its usage is not counted"
        for m, n in [("a1", "'many'"), ("a2", "inf"), ("a3", 2**64 - 1)]
    ]
    odd = rec.turns[rec.turns["run_id"] == "odd"]
    assert list(odd["channel"]) == ["ok"] * 3 and odd["input_tokens"].isna().all()
    assert rec.meta["source"]["version"] == "checkpoint v4"  # a list is no version


# -- 15: what is missing or odd is said --------------------------------------------------------------


def no_writes(path: Path) -> None:
    copy_of_golden(path)
    sql(path, "DROP TABLE writes")


def test_a_database_without_writes_loads_with_a_warning(tmp_path):
    path = tmp_path / "threads.sqlite"
    no_writes(path)
    with pytest.warns(RecordingWarning) as caught:
        rec = loopnb.load(path)
    assert [str(w.message) for w in caught] == [
        f"{path}: no writes table: not read, so the errors and interrupts that ended runs, when each "
        "message came, and messages kept only as writes are missing"
    ]
    assert len(rec.turns) == 15 and turns(rec, "crashed") == [("hard", "langgraph:unanswered")]


def odd_times(path: Path) -> None:
    copy_of_golden(path)
    conn = sqlite3.connect(path)
    rows = conn.execute(
        "SELECT checkpoint_id, checkpoint FROM checkpoints WHERE thread_id = 'legacy' ORDER BY checkpoint_id"
    ).fetchall()
    for n, (cid, blob) in enumerate(rows):
        value = msgpack.unpackb(blob, ext_hook=msgpack.ExtType, raw=False, strict_map_key=False)
        value["ts"] = 12345 if n == 0 else "yesterday"
        conn.execute(
            "UPDATE checkpoints SET checkpoint = ? WHERE checkpoint_id = ?", (msgpack.packb(value), cid)
        )
    conn.commit()
    conn.close()


def test_checkpoints_without_a_readable_time_load_with_a_warning(tmp_path):
    path = tmp_path / "threads.sqlite"
    odd_times(path)
    conn = sqlite3.connect(path)
    (first,) = conn.execute(
        "SELECT min(checkpoint_id) FROM checkpoints WHERE thread_id = 'legacy'"
    ).fetchone()
    conn.close()
    with pytest.warns(RecordingWarning) as caught:
        rec = loopnb.load(path)
    assert [str(w.message) for w in caught] == [
        f"{path}: 7 checkpoint(s) without a readable time: thread legacy, checkpoint {first} has ts 12345 "
        "(and 6 more), where ts should be an ISO 8601 time; the turns they made have no time of their own"
    ]
    assert len(rec.turns) == 15


def test_no_checkpoints_table_or_no_checkpoint_is_an_error(tmp_path):
    only_writes = tmp_path / "writes.sqlite"
    fresh(only_writes)
    sql(only_writes, "DROP TABLE checkpoints")
    with pytest.raises(RecordingError, match=r"no checkpoints table \(found writes\): not a LangGraph"):
        loopnb.load(only_writes, format="langgraph")
    with pytest.raises(RecordingError, match="not a recording loopnb knows"):
        loopnb.load(only_writes)
    empty = fresh(tmp_path / "empty.sqlite")
    with pytest.raises(RecordingError) as caught:
        loopnb.load(empty)
    assert str(caught.value) == f"{empty}: no checkpoint in the root namespace: nothing to read"


def test_a_thread_without_messages_loads_with_a_warning(tmp_path):
    path = copy_of_golden(tmp_path / "threads.sqlite")
    add_thread(path, "silent", msgpack.packb({"v": 4, "ts": TS, "channel_values": {"count": 3}}))
    with pytest.warns(RecordingWarning) as caught:
        rec = loopnb.load(path)
    assert [str(w.message) for w in caught] == [
        f"{path}: thread silent, checkpoint {CID}: no messages, neither in the checkpoint's channels nor in "
        "the writes: a run with no turns"
    ]
    assert "silent" in rec.meta["run_ids"] and len(rec.turns) == 15


# -- sniffing ---------------------------------------------------------------------------------------


BUILDERS: list[Callable[[Path], Any]] = [
    deep_checkpoint,
    deep_ts,
    writes_view,
    checkpoints_view,
    generated_checkpoint,
    loose_writes,
    no_writes,
    odd_times,
]


@pytest.mark.parametrize("build", BUILDERS, ids=lambda b: b.__name__)
def test_the_hostile_databases_go_to_the_langgraph_reader(tmp_path, build):
    path = tmp_path / "db.sqlite"
    build(path)
    assert format_of(path).name == "langgraph"


def test_a_wal_database_a_graph_holds_open_goes_to_the_reader(tmp_path):
    """``SqliteSaver`` turns WAL on; while its connection is open, the tables may live only in
    the ``-wal`` file."""
    path = tmp_path / "live.sqlite"
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(f"ATTACH '{GOLDEN}' AS golden")
        for (statement,) in conn.execute(
            "SELECT sql FROM golden.sqlite_master WHERE type = 'table'"
        ).fetchall():
            conn.execute(statement)
        conn.execute("INSERT INTO checkpoints SELECT * FROM golden.checkpoints")
        conn.execute("INSERT INTO writes SELECT * FROM golden.writes")
        conn.commit()
        conn.execute("DETACH golden")
        assert b"checkpoints" not in path.read_bytes()  # not yet checkpointed into the main file
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            rec = loopnb.load(path)
        assert len(rec.turns) == 15
    finally:
        conn.close()
