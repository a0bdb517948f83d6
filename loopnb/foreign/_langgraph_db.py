"""A LangGraph SQLite checkpointer database, read without LangGraph and without unpickling.

``SqliteSaver`` keeps two tables: ``checkpoints`` (one row a superstep: the checkpoint, a typed
blob, and its metadata as JSON) and ``writes`` (what each task wrote, kept after the step; a task
that raised leaves an ``__error__`` write). Blobs are ``msgpack`` as LangGraph's serde
(``langgraph/checkpoint/serde/jsonplus.py``) encodes them, its objects as ext types holding
``(module, name, payload, ...)``: this module keeps the payload and never imports the module it
names, so nothing in the file is constructed or run (``_langgraph_sqlite`` opens the file so that
no SQL in it runs either).

What a damaged or hostile file gets, by what is damaged:

- **The database** (not SQLite; no stored ``checkpoints`` table, a view or a virtual table in its
  place being none, or one without the columns every layout has; no checkpoint in the root
  namespace; a generated column; a query past its budget): ``RecordingError`` naming the file.
- **A checkpoint** that cannot be read (``checkpoint`` not a BLOB, a blob that does not decode,
  ``pickle``, lists, maps or ext types nested deeper than ``MAX_DEPTH``) and **a write** that
  cannot be read (the same faults in ``value``, or an ``idx`` that is not an integer) go to
  ``Unread.skip``, naming the thread, the checkpoint (the write's channel and task) and the column:
  skipped with a ``RecordingWarning`` (``errors="raise"``: a ``RecordingError``). A thread whose
  latest checkpoint is skipped is read from the latest one that can be (``_langgraph`` says the
  run's end is unknown).
- **What makes a load poorer without breaking it**: no stored ``writes`` table, or one without a
  column every layout has (the errors and interrupts that ended runs, message times, and messages
  kept only as writes are lost), or checkpoints whose ``ts`` is not an ISO time (their turns lose
  their times): a ``RecordingWarning`` naming the database and what is missing or odd; the load
  goes on. A column only newer layouts have (``task_path``) is read as its default.
"""

from __future__ import annotations

import json
import math
import sqlite3
import warnings
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from loopnb.foreign._formats import Unread
from loopnb.foreign._langgraph_sqlite import Budget, budget_for, connect, query, select, stored
from loopnb.record import RecordingError, RecordingWarning

EXT_CONSTRUCTOR_SINGLE_ARG = 0
EXT_CONSTRUCTOR_POS_ARGS = 1
EXT_CONSTRUCTOR_KW_ARGS = 2
EXT_METHOD_SINGLE_ARG = 3
EXT_PYDANTIC_V1 = 4
EXT_PYDANTIC_V2 = 5
EXT_NUMPY_ARRAY = 6
EXT_DELTA_SNAPSHOT = 7

MAX_DEPTH = 100
"""How deep a blob's lists, maps and objects (ext types) may nest. LangGraph's own stay within a
dozen levels; what loopnb reads must stay well within Python's recursion limit and JSON readers'
(about 200 levels), since its recordings carry tool arguments on."""


@dataclass(slots=True)
class Obj:
    """An object LangGraph's serde wrote (a message, a ``Send``, ...): its class, by name only,
    and what it was made from."""

    module: str
    name: str
    value: Any


@dataclass(slots=True)
class Write:
    """One row of ``writes``."""

    checkpoint_id: str
    task_id: str
    task_path: str
    idx: int
    channel: str
    value: Any


@dataclass(slots=True)
class Checkpoint:
    """One row of ``checkpoints``: its ids and when it was taken; its blob decoded on demand."""

    id: str
    parent_id: str | None
    type: str | None
    blob: bytes | None
    ts: float | None = None
    version: Any = None


@dataclass(slots=True)
class Thread:
    """A thread's checkpoints in order and every write recorded against them."""

    thread_id: str
    checkpoints: list[Checkpoint] = field(default_factory=list)
    writes: list[Write] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)
    """The ids of its checkpoints that could not be read."""


_MSGPACK: list[Any] = []


def _msgpack() -> Any:
    """The ``msgpack`` module, imported on first use."""
    if not _MSGPACK:
        try:
            import msgpack  # type: ignore[import-untyped]  # it ships no annotations
        except ImportError as exc:  # pragma: no cover - the foreign extra has it
            raise ImportError(
                "reading LangGraph checkpoints needs msgpack: pip install 'loopnb[foreign]'"
            ) from exc
        _MSGPACK.append(msgpack)
    return _MSGPACK[0]


@dataclass(slots=True)
class _Ext:
    """An ext type as msgpack hands it to its hook, read later by ``_resolve``: reading it inside
    the hook would nest msgpack's calls, each holding tens of KB of C stack (a few hundred nested
    ext types crash the interpreter, a few dozen in a thread with a small stack)."""

    code: int
    data: bytes

    def read(self) -> Any:
        """What the ext type holds, as plain data; ext types inside it are still ``_Ext``."""
        inner = _unpackb(self.data)
        if self.code == EXT_DELTA_SNAPSHOT:
            return inner
        if self.code == EXT_NUMPY_ARRAY:
            return Obj("numpy", "ndarray", None)
        if isinstance(inner, list) and len(inner) >= 3 and all(isinstance(s, str) for s in inner[:2]):
            return Obj(inner[0], inner[1], inner[2])
        return Obj("", f"ext{self.code}", inner)


def _unpackb(data: bytes) -> Any:
    return _msgpack().unpackb(data, ext_hook=_Ext, raw=False, strict_map_key=False)


_NESTED = frozenset({list, dict, Obj})
"""What holds more of a decoded blob (msgpack and json make exact lists and dicts; ext types are
read as ``Obj``)."""


def _opened(value: Any) -> Any:
    """``value``, or what it holds if it is an ext type (a delta snapshot's may be one again)."""
    while isinstance(value, _Ext):
        value = value.read()
    return value


def _resolve(value: Any, where: str, path: Path) -> Any:
    """``value`` with every ext type in it read (as ``Obj``, nothing named in it imported or
    constructed), walked with a stack of its own; lists, maps and objects nested deeper than
    ``MAX_DEPTH`` are a ``RecordingError``. Only what holds more goes on the stack (a blob is
    mostly strings and numbers), and a value is written back only where an ext type was read."""
    top = [value]
    stack: list[tuple[Any, int]] = [(top, 0)]
    push = stack.append
    while stack:
        item, depth = stack.pop()
        inner = depth + 1
        kind = type(item)
        if kind is list:
            for i, v in enumerate(item):
                if type(v) is _Ext:
                    v = item[i] = _opened(v)
                if type(v) in _NESTED:
                    push((v, inner))
        elif kind is dict:
            for key, v in item.items():
                if type(v) is _Ext:
                    v = item[key] = _opened(v)  # a value replaced, no key added: iterating goes on
                if type(v) in _NESTED:
                    push((v, inner))
        else:  # an Obj
            v = item.value = _opened(item.value)
            if type(v) in _NESTED:
                push((v, inner))
        if depth > MAX_DEPTH:
            raise _too_deep(where, path)
    return top[0]


def _too_deep(where: str, path: Path) -> RecordingError:
    return RecordingError(
        f"{where}: lists, maps or ext types nested deeper than {MAX_DEPTH} levels, not read "
        "(LangGraph's own nest a dozen at most)",
        path=path,
    )


def _shown(value: Any) -> str:
    """``value``'s repr, cut to 40 characters."""
    shown = repr(value)
    return shown if len(shown) <= 40 else shown[:40] + "..."


_STORAGE = {str: "TEXT", int: "INTEGER", float: "REAL", bytes: "BLOB"}


def _column(value: Any) -> str:
    """A value as SQLite stored it: its storage class, and what it holds."""
    return "NULL" if value is None else f"{_STORAGE.get(type(value), 'BLOB')} {_shown(value)}"


def unpack(data: bytes, where: str, path: Path) -> Any:
    """A msgpack blob as plain data (ext types as ``Obj``)."""
    msgpack = _msgpack()
    try:
        return _resolve(_unpackb(data), where, path)
    except (ValueError, TypeError, msgpack.UnpackException) as exc:
        raise RecordingError(f"{where}: a msgpack blob that does not decode ({exc})", path=path) from exc


def typed(kind: Any, data: Any, where: str, path: Path, column: str = "checkpoint") -> Any:
    """A blob as LangGraph's ``loads_typed`` would read it, except that ``pickle`` is refused;
    ``column`` names where ``data`` came from when it is not a blob."""
    if kind in (None, "null", "empty") or data is None:
        return None
    if kind == "pickle":
        raise RecordingError(
            f"{where}: a pickle blob; loopnb never unpickles a file (it could run any code). Re-save the "
            "thread with LangGraph's default serializer (msgpack) to read it",
            path=path,
        )
    if kind not in ("bytes", "bytearray", "msgpack", "json"):
        raise RecordingError(
            f"{where}: unknown blob type {kind!r} (expected msgpack, json, null or bytes)", path=path
        )
    if kind == "json" and isinstance(data, str):
        data = data.encode()  # JSON is text: a TEXT column holds it as well as a BLOB
    if not isinstance(data, bytes):
        raise RecordingError(
            f"{where}: column {column} holds {_column(data)}, expected a BLOB of {kind}", path=path
        )
    if kind in ("bytes", "bytearray"):
        return data
    if kind == "msgpack":
        return unpack(data, where, path)
    try:
        value = json.loads(data)
    except RecursionError as exc:  # json's parser recurses: far past MAX_DEPTH
        raise _too_deep(where, path) from exc
    except ValueError as exc:  # UnicodeDecodeError is one
        raise RecordingError(f"{where}: a json blob that does not parse ({exc})", path=path) from exc
    return _resolve(value, where, path)


def _header(kind: Any, blob: Any, where: str, path: Path) -> tuple[Any, Any]:
    """A checkpoint's ``ts`` and ``v`` as stored; a msgpack one's read without decoding its
    channel values."""
    if kind != "msgpack" or not isinstance(blob, bytes):
        body = typed(kind, blob, where, path)
        return (body.get("ts"), body.get("v")) if isinstance(body, dict) else (None, None)
    msgpack = _msgpack()
    unpacker = msgpack.Unpacker(raw=False, strict_map_key=False, ext_hook=_Ext)
    unpacker.feed(blob)
    ts: Any = None
    version: Any = None
    try:
        for _ in range(unpacker.read_map_header()):
            key = unpacker.unpack()
            if key == "ts":
                ts = unpacker.unpack()
            elif key == "v":
                version = unpacker.unpack()
            else:
                unpacker.skip()
            if ts is not None and version is not None:
                break
        ts, version = _resolve([ts, version], where, path)
    except (ValueError, TypeError, msgpack.UnpackException) as exc:
        raise RecordingError(f"{where}: a checkpoint that does not decode ({exc})", path=path) from exc
    return ts, version


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
                ts, version = _header(kind, blob, where, path)
            except RecordingError as exc:
                unread.skip(where, exc)
                found.setdefault(str(thread_id), Thread(str(thread_id))).unread.append(str(cid))
                continue
            if isinstance(version, bool) or not isinstance(version, int | float | str):
                version = None
            cp = Checkpoint(str(cid), parent, kind, blob, _when(ts), version)
            if cp.ts is None:
                odd.append(f"{where} has {'no ts' if ts is None else 'ts ' + _shown(ts)}")
            versions.add(version)
            found.setdefault(str(thread_id), Thread(str(thread_id))).checkpoints.append(cp)
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
                    f"{where}: column idx holds {_column(idx)}, expected an INTEGER", path=path
                )
            decoded = typed(kind, value, where, path, column="value")
        except RecordingError as exc:
            unread.skip(where, exc, left=_WRITE_SKIPPED)
            continue
        thread.writes.append(Write(str(cid), str(task), str(task_path or ""), idx, str(channel), decoded))
