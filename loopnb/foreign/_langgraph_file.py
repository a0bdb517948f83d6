"""A LangGraph checkpointer's file: opened so that nothing in it can run or run away, and its
blobs read as plain data.

**The SQLite file** is opened read-only (``mode=ro``, and ``query_only``), with extension loading
off and ``trusted_schema`` off; only stored tables are read: a view (which could be an endless
recursive query), a virtual table (run by a module's code) or a generated column (computed as it
is read) under the name of a table loopnb reads is refused. Every query runs under a ``Budget``,
SQLite's progress handler: a query that does more work than the file's size can account for is
stopped, and ``load`` says so instead of running forever. ``stored`` also tells which columns a
table has: ``SqliteSaver``'s layout changed over its versions (``writes.task_path`` came in 3.1.2),
and a column a version never wrote is read as its default.

**The blobs** are LangGraph's serde (``langgraph/checkpoint/serde/jsonplus.py``), read without
LangGraph: msgpack whose ext types hold ``(module, name, payload, ...)`` become ``Obj`` (the class
by name, the payload), so nothing named in a file is imported, constructed or run; JSON blobs are
parsed as JSON; ``pickle`` is refused. Nesting is bounded (``MAX_DEPTH``) and walked with a stack
of its own, never by recursion, in Python or in msgpack's C code.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from loopnb.record import RecordingError

TICK = 1000
"""SQLite VM instructions between two calls of a query's ``Budget``."""

BASE_TICKS = 10_000
"""What any query may do whatever the file's size: 10 million instructions (a fraction of a second)."""

TICKS_PER_KB = 100
"""What a query may do for each KB of the file and its WAL: 100 instructions a byte, some hundred
times what sorting LangGraph's tables takes (a view over an endless query takes no room at all)."""


@dataclass(slots=True)
class Budget:
    """The work one query may do, in ``TICK``s; SQLite calls it every ``TICK`` instructions, and
    a query past ``limit`` is interrupted (``spent`` then tells that from any other failure)."""

    limit: int
    used: int = 0
    spent: bool = False

    def __call__(self) -> int:
        self.used += 1
        if self.used > self.limit:
            self.spent = True
            return 1  # non-zero: SQLite interrupts the query
        return 0

    def error(self, path: Path) -> RecordingError:
        """The error for a query that ran past the budget, naming the database."""
        return RecordingError(
            f"a query ran past {self.limit * TICK:,} SQLite steps and was stopped: more work than a "
            "database of this size holds (a hostile schema?)",
            path=path,
        )


def budget_for(path: Path) -> Budget:
    """The budget of each query on ``path``: ``BASE_TICKS``, and ``TICKS_PER_KB`` for each KB of
    the file and its ``-wal`` file."""
    size = 0
    for part in (path, path.with_name(path.name + "-wal")):
        with contextlib.suppress(OSError):  # no WAL file, or one gone since
            size += part.stat().st_size
    return Budget(BASE_TICKS + TICKS_PER_KB * size // 1024)


def query(conn: sqlite3.Connection, budget: Budget, sql: str) -> sqlite3.Cursor:
    """``sql``'s rows, under a fresh budget."""
    budget.used = 0
    return conn.execute(sql)


def _open(uri: str, budget: Budget) -> tuple[sqlite3.Connection, dict[str, str]]:
    conn = sqlite3.connect(uri, uri=True)
    try:
        conn.set_progress_handler(budget, TICK)
        if hasattr(conn, "enable_load_extension"):  # absent where Python's SQLite cannot load any
            conn.enable_load_extension(False)
        conn.execute("PRAGMA trusted_schema = OFF")
        conn.execute("PRAGMA query_only = ON")
        kinds: dict[str, str] = {}
        for kind, name, root in query(conn, budget, "SELECT type, name, rootpage FROM sqlite_master"):
            if kind == "table" and not root:  # a virtual table has no pages of its own
                kind = "virtual table"
            kinds.setdefault(str(name), str(kind))
    except BaseException:
        conn.close()
        raise
    return conn, kinds


def connect(path: Path, budget: Budget) -> tuple[sqlite3.Connection, dict[str, str]]:
    """The database at ``path``, opened read-only (nothing is ever written to it), and what each
    name in its schema is (``"table"``, ``"view"``, ``"virtual table"``, ``"index"``, ...).

    Raises ``RecordingError`` when it is not SQLite, or has no stored ``checkpoints`` table."""
    uri = f"file:{quote(path.resolve().as_posix())}?mode=ro"
    try:
        try:
            conn, kinds = _open(uri, budget)
        except sqlite3.OperationalError:
            if budget.spent:
                raise
            # a WAL database in a folder this process cannot write to (SQLite cannot make the
            # shared-memory file): read the file as it stands
            conn, kinds = _open(uri + "&immutable=1", budget)
    except sqlite3.Error as exc:
        if budget.spent:
            raise budget.error(path) from exc
        raise RecordingError(f"not a readable SQLite database ({exc})", path=path) from exc
    kind = kinds.get("checkpoints")
    if kind != "table":
        conn.close()
        if kind is None:
            found = "found " + (", ".join(sorted(n for n, k in kinds.items() if k == "table")) or "no tables")
        else:
            found = f"checkpoints is a {kind}; loopnb reads stored tables only"
        raise RecordingError(
            f"no checkpoints table ({found}): not a LangGraph SqliteSaver database", path=path
        )
    return conn, kinds


def stored(conn: sqlite3.Connection, budget: Budget, table: str, path: Path) -> set[str]:
    """The columns of ``table``; refused if one of them is computed as it is read (a generated
    column): loopnb reads stored values only, never an expression the file chose."""
    columns: set[str] = set()
    for row in query(conn, budget, f"PRAGMA table_xinfo({table})"):
        if row[6] == 2:  # hidden = 2: generated, VIRTUAL (3, STORED, was computed when written)
            raise RecordingError(
                f"column {row[1]} of table {table} is computed each time it is read (a generated "
                "column); loopnb reads stored values only",
                path=path,
            )
        columns.add(str(row[1]))
    return columns


READ = {
    "checkpoints": ("thread_id", "checkpoint_id", "parent_checkpoint_id", "type", "checkpoint"),
    "writes": ("thread_id", "checkpoint_id", "task_id", "task_path", "idx", "channel", "type", "value"),
}
"""The columns read of each table, in the order ``select`` gives them."""
DEFAULTS = {"task_path": "''", "parent_checkpoint_id": "NULL"}
"""What a column some layouts lack reads as (an SQL literal): ``task_path`` came with
langgraph-checkpoint-sqlite 3.1.2, whose ``setup`` adds it to an older database unless that one
is read-only."""


def select(table: str, columns: set[str], path: Path) -> str:
    """The ``SELECT`` of the columns ``READ`` of ``table`` (which has ``columns``), a column it
    lacks read as its default, in the root namespace (all rows, where there are no namespaces);
    a ``RecordingError`` when it lacks one that has no default (not ``SqliteSaver``'s table)."""
    wanted = READ[table]
    lacking = [name for name in wanted if name not in columns and name not in DEFAULTS]
    if lacking:
        raise RecordingError(
            f"table {table} has no column {', '.join(lacking)}: not the layout of LangGraph's SqliteSaver"
            f" (expected {', '.join(wanted)})",
            path=path,
        )
    picked = ", ".join(name if name in columns else f"{DEFAULTS[name]} AS {name}" for name in wanted)
    where = " WHERE checkpoint_ns = ''" if "checkpoint_ns" in columns else ""
    return f"SELECT {picked} FROM {table}{where}"


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


_MSGPACK: list[Any] = []


def msgpack_module() -> Any:
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
class Ext:
    """An ext type as msgpack hands it to its hook, read later by ``resolve``: reading it inside
    the hook would nest msgpack's calls, each holding tens of KB of C stack (a few hundred nested
    ext types crash the interpreter, a few dozen in a thread with a small stack)."""

    code: int
    data: bytes

    def read(self) -> Any:
        """What the ext type holds, as plain data; ext types inside it are still ``Ext``."""
        inner = unpackb_deferred(self.data)
        if self.code == EXT_DELTA_SNAPSHOT:
            return inner
        if self.code == EXT_NUMPY_ARRAY:
            return Obj("numpy", "ndarray", None)
        if type(inner) is list and len(inner) >= 3 and type(inner[0]) is str and type(inner[1]) is str:
            return Obj(inner[0], inner[1], inner[2])
        return Obj("", f"ext{self.code}", inner)


def unpackb_deferred(data: bytes) -> Any:
    """A msgpack blob decoded, its ext types left as ``Ext`` for ``opened`` or ``resolve``."""
    return msgpack_module().unpackb(data, ext_hook=Ext, raw=False, strict_map_key=False)


_NESTED = frozenset({list, dict, Obj})
"""What holds more of a decoded blob (msgpack and json make exact lists and dicts; ext types are
read as ``Obj``)."""


def opened(value: Any) -> Any:
    """``value``, or what it holds if it is an ext type (a delta snapshot's may be one again)."""
    while isinstance(value, Ext):
        value = value.read()
    return value


def resolve(value: Any, where: str, path: Path) -> Any:
    """``value`` with every ext type in it read (as ``Obj``, nothing named in it imported or
    constructed), walked a level at a time with no recursion; lists, maps and objects nested deeper
    than ``MAX_DEPTH`` are a ``RecordingError``. Only what holds more is walked (a blob is mostly
    strings and numbers), and a value is written back only where an ext type was read."""
    top = [value]
    level: list[Any] = [top]
    depth = 0
    while level:
        if depth > MAX_DEPTH:
            raise too_deep(where, path)
        below: list[Any] = []
        push = below.append
        for item in level:
            kind = type(item)
            if kind is dict:
                for key, v in item.items():
                    t = type(v)
                    if t is Ext:
                        v = item[key] = opened(v)  # a value replaced, no key added: iterating goes on
                        t = type(v)
                    if t in _NESTED:
                        push(v)
            elif kind is list:
                for i, v in enumerate(item):
                    t = type(v)
                    if t is Ext:
                        v = item[i] = opened(v)
                        t = type(v)
                    if t in _NESTED:
                        push(v)
            else:  # an Obj
                v = item.value = opened(item.value)
                if type(v) in _NESTED:
                    push(v)
        level = below
        depth += 1
    return top[0]


def too_deep(where: str, path: Path) -> RecordingError:
    return RecordingError(
        f"{where}: lists, maps or ext types nested deeper than {MAX_DEPTH} levels, not read "
        "(LangGraph's own nest a dozen at most)",
        path=path,
    )


def shown(value: Any) -> str:
    """``value``'s repr, cut to 40 characters."""
    shown = repr(value)
    return shown if len(shown) <= 40 else shown[:40] + "..."


_ARRAY = frozenset([*range(0x90, 0xA0), 0xDC, 0xDD])
"""The first bytes of a msgpack array."""


def messages_held(unpacker: Any, blob: bytes, left: int) -> int | None:
    """How many messages a checkpoint's ``messages`` channel holds (0: none, -1: no list), read
    from the ``left`` entries of its map past ``ts`` and ``v`` (where LangGraph puts
    ``channel_values``) without decoding them; ``None`` where they are not, or do not decode: a
    checkpoint damaged there spoils nothing unless the reader needs it whole."""
    msgpack = msgpack_module()
    try:
        for _ in range(left):
            if unpacker.unpack() != "channel_values":
                unpacker.skip()
                continue
            for _ in range(unpacker.read_map_header()):
                if unpacker.unpack() != "messages":
                    unpacker.skip()
                elif blob[unpacker.tell()] in _ARRAY:
                    return int(unpacker.read_array_header())
                else:
                    return -1
            return 0
    except (ValueError, TypeError, IndexError, msgpack.UnpackException):
        pass
    return None


def array_length(blob: bytes) -> int:
    """How many values a msgpack write holds (its array's length; one, if it is no array), from
    its first bytes alone (-1: none)."""
    if not blob:
        return -1
    first = blob[0]
    if 0x90 <= first <= 0x9F:
        return first & 0x0F
    if first in (0xDC, 0xDD):
        return int.from_bytes(blob[1 : 3 if first == 0xDC else 5], "big")
    return 1


_STORAGE = {str: "TEXT", int: "INTEGER", float: "REAL", bytes: "BLOB"}


def column_held(value: Any) -> str:
    """A value as SQLite stored it: its storage class, and what it holds."""
    return "NULL" if value is None else f"{_STORAGE.get(type(value), 'BLOB')} {shown(value)}"


def unpack(data: bytes, where: str, path: Path) -> Any:
    """A msgpack blob as plain data (ext types as ``Obj``)."""
    msgpack = msgpack_module()
    try:
        return resolve(unpackb_deferred(data), where, path)
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
            f"{where}: column {column} holds {column_held(data)}, expected a BLOB of {kind}", path=path
        )
    if kind in ("bytes", "bytearray"):
        return data
    if kind == "msgpack":
        return unpack(data, where, path)
    try:
        value = json.loads(data)
    except RecursionError as exc:  # json's parser recurses: far past MAX_DEPTH
        raise too_deep(where, path) from exc
    except ValueError as exc:  # UnicodeDecodeError is one
        raise RecordingError(f"{where}: a json blob that does not parse ({exc})", path=path) from exc
    return resolve(value, where, path)
