"""A LangGraph SQLite checkpointer database, read without LangGraph and without unpickling.

``SqliteSaver`` keeps two tables: ``checkpoints`` (one row a superstep: the checkpoint, a typed
blob, and its metadata as JSON) and ``writes`` (what each task wrote, kept after the step; a task
that raised leaves an ``__error__`` write). Blobs are ``msgpack`` as LangGraph's serde
(``langgraph/checkpoint/serde/jsonplus.py``) encodes them, its objects as ext types holding
``(module, name, payload, ...)``: this module keeps the payload and never imports the module it
names, so nothing in the file is constructed or run. A ``pickle`` blob is refused: a checkpoint
so typed is a ``RecordingError``, a write a ``RecordingWarning`` and skipped.
"""

from __future__ import annotations

import json
import sqlite3
import warnings
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from loopnb.record._errors import RecordingError, RecordingWarning

EXT_CONSTRUCTOR_SINGLE_ARG = 0
EXT_CONSTRUCTOR_POS_ARGS = 1
EXT_CONSTRUCTOR_KW_ARGS = 2
EXT_METHOD_SINGLE_ARG = 3
EXT_PYDANTIC_V1 = 4
EXT_PYDANTIC_V2 = 5
EXT_NUMPY_ARRAY = 6
EXT_DELTA_SNAPSHOT = 7


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


def _ext(code: int, data: bytes) -> Any:
    """An ext type's payload, as plain data: nothing named in it is imported or constructed."""
    msgpack = _msgpack()
    inner = msgpack.unpackb(data, ext_hook=_ext, raw=False, strict_map_key=False)
    if code == EXT_DELTA_SNAPSHOT:
        return inner
    if code == EXT_NUMPY_ARRAY:
        return Obj("numpy", "ndarray", None)
    if isinstance(inner, (list, tuple)) and len(inner) >= 3 and all(isinstance(s, str) for s in inner[:2]):
        return Obj(inner[0], inner[1], inner[2])
    return Obj("", f"ext{code}", inner)


def unpack(data: bytes, where: str, path: Path) -> Any:
    """A msgpack blob as plain data (ext types as ``Obj``)."""
    msgpack = _msgpack()
    try:
        return msgpack.unpackb(data, ext_hook=_ext, raw=False, strict_map_key=False)
    except (ValueError, TypeError, msgpack.UnpackException) as exc:
        raise RecordingError(f"{where}: a msgpack blob that does not decode ({exc})", path=path) from exc


def typed(kind: str | None, data: bytes | None, where: str, path: Path) -> Any:
    """A blob as LangGraph's ``loads_typed`` would read it, except that ``pickle`` is refused."""
    if kind in (None, "null", "empty") or data is None:
        return None
    if kind in ("bytes", "bytearray"):
        return bytes(data)
    if kind == "msgpack":
        return unpack(data, where, path)
    if kind == "json":
        try:
            return json.loads(data)
        except (ValueError, UnicodeDecodeError) as exc:
            raise RecordingError(f"{where}: a json blob that does not parse ({exc})", path=path) from exc
    if kind == "pickle":
        raise RecordingError(
            f"{where}: a pickle blob; loopnb never unpickles a file (it could run any code). Re-save the "
            "thread with LangGraph's default serializer (msgpack) to read it",
            path=path,
        )
    raise RecordingError(
        f"{where}: unknown blob type {kind!r} (expected msgpack, json, null or bytes)", path=path
    )


def _header(blob: bytes, where: str, path: Path) -> tuple[float | None, Any]:
    """A msgpack checkpoint's ``ts`` and ``v``, read without decoding its channel values."""
    msgpack = _msgpack()
    unpacker = msgpack.Unpacker(raw=False, strict_map_key=False, ext_hook=_ext)
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
    except (ValueError, TypeError, msgpack.UnpackException) as exc:
        raise RecordingError(f"{where}: a checkpoint that does not decode ({exc})", path=path) from exc
    return _when(ts), version


def _when(ts: Any) -> float | None:
    if isinstance(ts, Obj):  # a datetime, as its ISO text
        ts = ts.value
    if not isinstance(ts, str):
        return None
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def checkpoint(cp: Checkpoint, where: str, path: Path) -> dict[str, Any]:
    """A checkpoint's content (``v``, ``ts``, ``channel_values``, ...)."""
    value = typed(cp.type, cp.blob, where, path)
    if not isinstance(value, dict):
        raise RecordingError(
            f"{where}: a checkpoint should be a map, found {type(value).__name__}", path=path
        )
    return value


def connect(path: Path) -> sqlite3.Connection:
    """The database at ``path``, opened read-only (nothing is ever written to it)."""
    uri = f"file:{quote(path.resolve().as_posix())}?mode=ro"
    try:
        try:
            conn = sqlite3.connect(uri, uri=True)
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        except sqlite3.OperationalError:
            # a WAL database in a folder this process cannot write to (SQLite cannot make the
            # shared-memory file): read the file as it stands
            conn = sqlite3.connect(uri + "&immutable=1", uri=True)
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error as exc:
        raise RecordingError(f"not a readable SQLite database ({exc})", path=path) from exc
    if "checkpoints" not in tables:
        conn.close()
        raise RecordingError(
            f"no checkpoints table (found {', '.join(sorted(tables)) or 'no tables'}): not a LangGraph "
            "SqliteSaver database",
            path=path,
        )
    return conn


def threads(path: Path) -> tuple[list[Thread], set[Any]]:
    """Every thread of the root namespace (subgraphs' checkpoints are their parents' business),
    in order of first checkpoint, and the checkpoint format versions found."""
    conn = connect(path)
    try:
        found: dict[str, Thread] = {}
        versions: set[Any] = set()
        rows = conn.execute(
            "SELECT thread_id, checkpoint_id, parent_checkpoint_id, type, checkpoint FROM checkpoints"
            " WHERE checkpoint_ns = '' ORDER BY thread_id, checkpoint_id"
        )
        for thread_id, cid, parent, kind, blob in rows:
            thread = found.setdefault(str(thread_id), Thread(str(thread_id)))
            cp = Checkpoint(str(cid), parent, kind, blob)
            if kind == "msgpack" and blob:
                cp.ts, cp.version = _header(blob, f"thread {thread_id}, checkpoint {cid}", path)
                versions.add(cp.version)
            thread.checkpoints.append(cp)
        has_writes = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'writes'").fetchone()
        if has_writes:
            _writes(conn, found, path)
    except sqlite3.Error as exc:
        raise RecordingError(f"cannot read the checkpoints ({exc})", path=path) from exc
    finally:
        conn.close()
    ordered = sorted(found.values(), key=lambda t: (t.checkpoints[0].ts or 0.0, t.checkpoints[0].id))
    return ordered, versions


def _writes(conn: sqlite3.Connection, found: dict[str, Thread], path: Path) -> None:
    rows = conn.execute(
        "SELECT thread_id, checkpoint_id, task_id, task_path, idx, channel, type, value FROM writes"
        " WHERE checkpoint_ns = '' ORDER BY thread_id, checkpoint_id, task_path, task_id, idx"
    )
    for thread_id, cid, task, task_path, idx, channel, kind, value in rows:
        thread = found.get(str(thread_id))
        if thread is None:
            continue
        where = f"thread {thread_id}, checkpoint {cid}, write {channel!r} of task {task}"
        if kind == "pickle":
            warnings.warn(
                f"{path}: {where}: a pickle blob, skipped (loopnb never unpickles a file)",
                RecordingWarning,
                stacklevel=4,
            )
            continue
        thread.writes.append(
            Write(
                str(cid),
                str(task),
                str(task_path or ""),
                int(idx),
                str(channel),
                typed(kind, value, where, path),
            )
        )
