"""A LangGraph database's state writes (the messages each step added) are read only as deep as the
reader needs them: not at all where the checkpoints' message counts date every message
(``test_langgraph_dating``), their messages' ids where they do not (a message removed or replaced),
and whole only where the latest checkpoint holds no state (``DeltaChannel``). What the reader never
needs cannot spoil a load; what it needs and cannot read is skipped with a warning naming the write."""

from __future__ import annotations

import shutil
import sqlite3
import warnings
from pathlib import Path
from typing import Any

import msgpack
import pytest

import loopnb
from loopnb.record import RecordingWarning

GOLDEN = Path(__file__).parents[1] / "golden" / "foreign" / "langgraph" / "threads.sqlite"
DEEP = b"\x91" * 1000 + b"\xc0"  # 1,000 nested one-item arrays: far past what the reader walks


def copy(tmp_path: Path) -> Path:
    path = tmp_path / "threads.sqlite"
    shutil.copyfile(GOLDEN, path)
    return path


def first_messages_write(path: Path, thread: str) -> tuple[str, str, int, bytes]:
    conn = sqlite3.connect(path)
    row = conn.execute(
        "SELECT checkpoint_id, task_id, idx, value FROM writes WHERE thread_id = ? AND channel = 'messages' "
        "ORDER BY checkpoint_id LIMIT 1",
        (thread,),
    ).fetchone()
    conn.close()
    return row


def replace_value(path: Path, thread: str, where: tuple[str, str, int], value: Any) -> None:
    conn = sqlite3.connect(path)
    conn.execute(
        "UPDATE writes SET value = ? WHERE thread_id = ? AND checkpoint_id = ? AND task_id = ? AND idx = ? "
        "AND channel = 'messages'",
        (value, thread, *where),
    )
    conn.commit()
    conn.close()


def frame(rec: loopnb.Recording) -> list[tuple[Any, ...]]:
    return list(rec.turns[["run_id", "turn", "channel", "producer", "started_at"]].itertuples(index=False))


def with_deep_field(blob: bytes) -> bytes:
    """The write's messages, the first one with a field nested 1,000 deep beside its id."""
    items = msgpack.unpackb(blob, raw=False, strict_map_key=False)
    ext = items[0]
    module, name, kwargs, *rest = msgpack.unpackb(ext.data, raw=False, strict_map_key=False)
    kwargs["additional_kwargs"] = "@@deep@@"
    inner = msgpack.packb([module, name, kwargs, *rest]).replace(msgpack.packb("@@deep@@"), DEEP)
    return bytes(msgpack.packb([msgpack.ExtType(ext.code, inner), *items[1:]]))


def test_a_deep_field_the_reader_never_reads_does_not_spoil_the_load(tmp_path):
    expected = frame(loopnb.load(GOLDEN))
    path = copy(tmp_path)
    checkpoint_id, task_id, idx, blob = first_messages_write(path, "recovered")
    replace_value(path, "recovered", (checkpoint_id, task_id, idx), with_deep_field(blob))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RecordingWarning)
        rec = loopnb.load(path)
    assert frame(rec) == expected  # the same turns, each message still dated by its write
    assert rec.meta["unread"] == []


def test_a_state_write_that_does_not_decode_is_skipped_with_a_warning_naming_it(tmp_path):
    expected = frame(loopnb.load(GOLDEN))
    path = copy(tmp_path)
    checkpoint_id, task_id, idx, _ = first_messages_write(path, "recovered")
    replace_value(path, "recovered", (checkpoint_id, task_id, idx), b"\xc1 not msgpack")
    with pytest.warns(RecordingWarning) as caught:
        rec = loopnb.load(path)
    (warning,) = caught
    text = str(warning.message)
    assert text.startswith(f"{path}: thread recovered, checkpoint {checkpoint_id}, write 'messages' of task ")
    assert "a msgpack blob that does not decode" in text and text.endswith("; the write is skipped")
    got = frame(rec)
    assert [row[:4] for row in got] == [row[:4] for row in expected]  # the checkpoint still holds them
    assert rec.meta["unread"][0]["where"].endswith(f"write 'messages' of task {task_id}")
