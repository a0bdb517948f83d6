"""A LangGraph SQLite checkpointer database, read without LangGraph and without unpickling.

``SqliteSaver`` keeps two tables: ``checkpoints`` (one row a superstep: the checkpoint, a typed
blob, and its metadata as JSON) and ``writes`` (what each task wrote, kept after the step; a task
that raised leaves an ``__error__`` write). Blobs are ``msgpack`` as LangGraph's serde
(``langgraph/checkpoint/serde/jsonplus.py``) encodes them, its objects as ext types holding
``(module, name, payload, ...)``: this module keeps the payload and never imports the module it
names, so nothing in the file is constructed or run (``_langgraph_file`` opens the file so that
no SQL in it runs either).

What a damaged or hostile file gets, by what is damaged:

- **The database** (not SQLite; no stored ``checkpoints`` table, a view or a virtual table in its
  place being none, or one without the columns every layout has; no checkpoint in the root
  namespace; a generated column; a query past its budget): ``RecordingError`` naming the file.
- **A checkpoint** that cannot be read (``checkpoint`` not a BLOB, a blob that does not decode,
  ``pickle``, lists, maps or ext types nested deeper than ``MAX_DEPTH``) and **a write** that
  cannot be read (the same faults in ``value``, or an ``idx`` that is not an integer) go to
  ``Unread.skip``, naming the thread, the checkpoint (the write's channel and task) and the column:
  skipped with a ``RecordingWarning`` (``errors="raise"``: a ``RecordingError``). A state write
  (the messages a step added) is read only as deep as the reader needs it (see ``Write``), so
  damage where it never looks does not count. A thread whose
  latest checkpoint is skipped is read from the latest one that can be (``_langgraph`` says the
  run's end is unknown).
- **What makes a load poorer without breaking it**: no stored ``writes`` table, or one without a
  column every layout has (the errors and interrupts that ended runs, message times, and messages
  kept only as writes are lost), or checkpoints whose ``ts`` is not an ISO time (their turns lose
  their times): a ``RecordingWarning`` naming the database and what is missing or odd; the load
  goes on. A column only newer layouts have (``task_path``) is read as its default.
"""

from __future__ import annotations

import math
import sqlite3
import warnings
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from loopnb.foreign._formats import Unread
from loopnb.foreign._langgraph_file import (
    Budget,
    Ext,
    Obj,
    array_length,
    budget_for,
    column_held,
    connect,
    messages_held,
    msgpack_module,
    opened,
    query,
    resolve,
    select,
    shown,
    stored,
    typed,
    unpackb_deferred,
)
from loopnb.record import RecordingError, RecordingWarning


@dataclass(slots=True, frozen=True)
class Blob:
    """A write's value as stored, not decoded yet; ``where`` names the write."""

    kind: Any
    data: Any
    where: str


SKIPPED = Blob(None, None, "")
"""What a write that could not be decoded holds (it went to ``Unread``)."""


@dataclass(slots=True)
class Write:
    """One row of ``writes``. LangGraph's own channels (``__error__``, ``__interrupt__``,
    ``branch:...``: small) are decoded as the database is read; a state channel's value (the
    messages a step added) stays a ``Blob`` until ``decoded`` or ``shallow`` asks for it: the
    latest checkpoint holds the state, and ``dated`` dates its messages from the checkpoints'
    counts, so most are never decoded (``dated`` reads their first bytes and looks for ids)."""

    checkpoint_id: str
    task_id: str
    task_path: str
    idx: int
    channel: str
    value: Any


def is_state(channel: str) -> bool:
    """Whether a write's channel is the graph's state (not one of LangGraph's own)."""
    return not channel.startswith(("__", "branch:"))


def decoded(write: Write, unread: Unread) -> Any:
    """A write's value, decoded on first need; one that cannot be read goes to ``unread`` (the
    write is skipped) and is ``SKIPPED`` from then on."""
    value = write.value
    if type(value) is not Blob or value is SKIPPED:
        return value
    try:
        write.value = typed(value.kind, value.data, value.where, unread.path or Path(), column="value")
    except RecordingError as exc:
        unread.skip(value.where, exc, left=_WRITE_SKIPPED)
        write.value = SKIPPED
    return write.value


def shallow(write: Write, unread: Unread) -> list[Any]:
    """What a state channel's write holds, each item's own ext type opened and nothing inside it
    read (a message's id and type are plain strings in its map): the messages' ids for the price of
    one small decode each. A write that does not decode is decoded whole, which says why."""
    value = write.value
    if type(value) is Blob and value.kind == "msgpack" and type(value.data) is bytes:
        try:
            top = unpackb_deferred(value.data)
            return [opened(item) for item in (top if type(top) is list else [top])]
        except (ValueError, TypeError, msgpack_module().UnpackException):
            pass
    whole = decoded(write, unread)
    if whole is SKIPPED:
        return []
    return whole if isinstance(whole, list) else [whole]


@dataclass(slots=True)
class Checkpoint:
    """One row of ``checkpoints``: its ids and when it was taken; its blob decoded on demand."""

    id: str
    parent_id: str | None
    type: str | None
    blob: bytes | None
    ts: float | None = None
    version: Any = None
    held: int | None = None
    """How many messages its ``messages`` channel holds (``messages_held``), to date them by."""


@dataclass(slots=True)
class Thread:
    """A thread's checkpoints in order and every write recorded against them."""

    thread_id: str
    checkpoints: list[Checkpoint] = field(default_factory=list)
    writes: list[Write] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)
    """The ids of its checkpoints that could not be read."""


def _header(kind: Any, blob: Any, where: str, path: Path) -> tuple[Any, Any, int | None]:
    """A checkpoint's ``ts`` and ``v`` as stored, and how many messages it ``held``; a msgpack
    one's read without decoding its channel values."""
    if kind != "msgpack" or not isinstance(blob, bytes):
        body = typed(kind, blob, where, path)
        return (body.get("ts"), body.get("v"), None) if isinstance(body, dict) else (None, None, None)
    known = _as_langgraph_writes_it(blob)
    if known is not None:
        return known
    msgpack = msgpack_module()
    unpacker = msgpack.Unpacker(raw=False, strict_map_key=False, ext_hook=Ext)
    unpacker.feed(blob)
    ts: Any = None
    version: Any = None
    left = 0
    try:
        size = unpacker.read_map_header()
        for n in range(size):
            key = unpacker.unpack()
            if key == "ts":
                ts = unpacker.unpack()
            elif key == "v":
                version = unpacker.unpack()
            else:
                unpacker.skip()
            if ts is not None and version is not None:
                left = size - n - 1
                break
        if type(ts) not in _PLAIN or type(version) not in _PLAIN:  # nothing in them to read further
            ts, version = resolve([ts, version], where, path)
    except (ValueError, TypeError, msgpack.UnpackException) as exc:
        raise RecordingError(f"{where}: a checkpoint that does not decode ({exc})", path=path) from exc
    return ts, version, messages_held(unpacker, blob, left)


_PLAIN = frozenset({str, int, float, type(None)})


def _as_langgraph_writes_it(blob: bytes) -> tuple[str, int, int] | None:
    """What ``_header`` reads, read straight off the bytes of a checkpoint in the layout LangGraph
    writes: ``{"v": 4, "ts": "...", "id": "...", "channel_values": {"messages": [...], ...}, ...}``
    (a small ``v``, ``ts`` and ``id`` strings, ``messages`` first among fewer than 16 channels,
    holding fewer than 65,536); ``None`` for any other, which ``_header`` reads with msgpack."""
    try:
        head = blob[7]
        if not 0x84 <= blob[0] <= 0x8F or blob[1:3] != b"\xa1v" or blob[3] > 0x7F or blob[4:7] != b"\xa2ts":
            return None
        if head != 0xD9 and not 0xA0 <= head <= 0xBF:
            return None
        start, end = (9, 9 + blob[8]) if head == 0xD9 else (8, 8 + (head & 0x1F))
        if blob[end : end + 4] != b"\xa2id\xd9":
            return None
        at = end + 5 + blob[end + 4]
        if blob[at : at + 15] != b"\xaechannel_values" or blob[at + 16 : at + 25] != b"\xa8messages":
            return None
        count = blob[at + 25]
        if not 0x81 <= blob[at + 15] <= 0x8F or not (0x90 <= count <= 0x9F or count == 0xDC):
            return None
        held = count & 0x0F if count != 0xDC else blob[at + 26] << 8 | blob[at + 27]
        return blob[start:end].decode(), blob[3], held
    except (IndexError, UnicodeDecodeError):  # cut short, or a ts msgpack cannot read: it says why
        return None


def dated(thread: Thread, ids: list[str | None]) -> dict[str, float] | None:
    """When each message of the latest checkpoint's ``messages`` channel (``ids``, in order) first
    appeared, from how many the channel ``held`` at each checkpoint: the messages a step added are
    dated by the checkpoint the step made, as their first write dates them, without decoding one.
    ``None`` (read the writes) unless the thread shows that it is the same: one line of
    checkpoints, each timed, the list only growing, each step's writes holding as many values as it
    grew by (so none was removed or replaced) and the ``"id"`` entry of each message it added (so
    none came without its id), and the ids distinct."""
    if thread.unread or None in ids or len(set(ids)) != len(ids):
        return None
    steps: dict[str, list[bytes]] = {}
    for write in thread.writes:
        if write.channel == "messages":
            value = write.value
            if type(value) is not Blob or value.kind != "msgpack" or type(value.data) is not bytes:
                return None
            steps.setdefault(write.checkpoint_id, []).append(value.data)
    pack = msgpack_module().packb
    seen: dict[str, float] = {}
    last = 0
    parent: str | None = None
    for cp in thread.checkpoints:
        held = cp.held
        if held is None or held < last or cp.parent_id != parent or not cp.ts or (parent is None and held):
            return None
        if parent is not None:
            blobs = steps.get(parent, ())
            if sum(map(array_length, blobs)) != held - last or held > len(ids):
                return None
            for key in ids[last:held]:
                needle = b"\xa2id" + pack(key)  # the map entry "id": key, as serde writes it
                for blob in blobs:
                    if needle in blob:
                        break
                else:
                    return None
                seen[key] = cp.ts  # type: ignore[index]  # no id is None (checked above)
        last, parent = held, cp.id
    return seen if last == len(ids) else None


def _when(ts: Any) -> float | None:
    """A checkpoint's ``ts`` (ISO 8601 text, or a datetime as serde keeps one) as a POSIX time."""
    if isinstance(ts, Obj):
        ts = ts.value
    if not isinstance(ts, str):
        return None
    try:
        when = datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except (ValueError, OverflowError, OSError):  # not a time, or one the platform cannot place
        return None
    return when if math.isfinite(when) else None


def checkpoint(cp: Checkpoint, where: str, path: Path) -> dict[str, Any]:
    """A checkpoint's content (``v``, ``ts``, ``channel_values``, ...)."""
    value = typed(cp.type, cp.blob, where, path)
    if not isinstance(value, dict):
        raise RecordingError(
            f"{where}: a checkpoint should be a map, found {type(value).__name__}", path=path
        )
    return value


def _thread(found: dict[str, Thread], thread_id: Any) -> Thread:
    """The thread of that id in ``found``, added if new."""
    key = str(thread_id)
    thread = found.get(key)
    if thread is None:
        thread = found[key] = Thread(key)
    return thread


def _warn(path: Path, text: str) -> None:
    warnings.warn(f"{path}: {text}", RecordingWarning, stacklevel=5)


def threads(path: Path, unread: Unread | None = None) -> tuple[list[Thread], set[Any]]:
    """Every thread of the root namespace (subgraphs' checkpoints are their parents' business),
    in order of first checkpoint, and the checkpoint format versions found; a checkpoint or a
    write that cannot be read goes to ``unread`` (by default, raised)."""
    unread = unread or Unread(path=path)
    budget = budget_for(path)
    conn, kinds = connect(path, budget)
    found: dict[str, Thread] = {}
    versions: set[Any] = set()
    odd: list[str] = []
    try:
        columns = stored(conn, budget, "checkpoints", path)
        sql = select("checkpoints", columns, path) + " ORDER BY thread_id, checkpoint_id"
        for thread_id, cid, parent, kind, blob in query(conn, budget, sql):
            where = f"thread {thread_id}, checkpoint {cid}"
            try:
                ts, version, held = _header(kind, blob, where, path)
            except RecordingError as exc:
                unread.skip(where, exc)
                _thread(found, thread_id).unread.append(str(cid))
                continue
            if isinstance(version, bool) or not isinstance(version, (int, float, str)):
                version = None
            cp = Checkpoint(str(cid), parent, kind, blob, _when(ts), version, held)
            if cp.ts is None:
                odd.append(f"{where} has {'no ts' if ts is None else 'ts ' + shown(ts)}")
            versions.add(version)
            _thread(found, thread_id).checkpoints.append(cp)
        if not any(t.checkpoints for t in found.values()) and unread.items:
            raise unread.nothing_read("checkpoints")
        if not found:
            raise RecordingError("no checkpoint in the root namespace: nothing to read", path=path)
        if kinds.get("writes") == "table":
            _writes(conn, budget, found, stored(conn, budget, "writes", path), unread)
        else:
            what = (
                f"writes is a {kinds['writes']}, not a stored table"
                if "writes" in kinds
                else "no writes table"
            )
            _warn(path, f"{what}: {_POORER}")
    except sqlite3.Error as exc:
        if budget.spent:
            raise budget.error(path) from exc
        raise RecordingError(f"cannot read the checkpoints ({exc})", path=path) from exc
    finally:
        conn.close()
    if odd:
        more = f" (and {len(odd) - 1} more)" if len(odd) > 1 else ""
        _warn(
            path,
            f"{len(odd)} checkpoint(s) without a readable time: {odd[0]}{more}, where ts should be an "
            "ISO 8601 time; the turns they made have no time of their own",
        )
    ordered = sorted(
        (t for t in found.values() if t.checkpoints),
        key=lambda t: (t.checkpoints[0].ts or 0.0, t.checkpoints[0].id),
    )
    return ordered, versions


_WRITE_SKIPPED = "the write is skipped"
_POORER = (
    "not read, so the errors and interrupts that ended runs, when each message came, and messages "
    "kept only as writes are missing"
)


def _writes(
    conn: sqlite3.Connection, budget: Budget, found: dict[str, Thread], columns: set[str], unread: Unread
) -> None:
    """Each thread's writes; one that cannot be read goes to ``unread``."""
    path = unread.path or Path()
    try:
        sql = select("writes", columns, path)
    except RecordingError as exc:  # another table of that name
        _warn(path, f"{exc.reason}: {_POORER}")
        return
    sql += " ORDER BY thread_id, checkpoint_id, task_path, task_id, idx"
    for thread_id, cid, task, task_path, idx, channel, kind, value in query(conn, budget, sql):
        thread = found.get(str(thread_id))
        if thread is None:
            continue
        where = f"thread {thread_id}, checkpoint {cid}, write {channel!r} of task {task}"
        if kind == "pickle":
            unread.skip(where, "a pickle blob (loopnb never unpickles a file)", left=_WRITE_SKIPPED)
            continue
        try:
            if isinstance(idx, bool) or not isinstance(idx, int):
                raise RecordingError(
                    f"{where}: column idx holds {column_held(idx)}, expected an INTEGER", path=path
                )
            channel = str(channel)
            held = (
                Blob(kind, value, where)
                if is_state(channel)
                else typed(kind, value, where, path, column="value")
            )
        except RecordingError as exc:
            unread.skip(where, exc, left=_WRITE_SKIPPED)
            continue
        thread.writes.append(Write(str(cid), str(task), str(task_path or ""), idx, channel, held))
