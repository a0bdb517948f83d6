"""A LangGraph checkpointer's SQLite file, opened so that nothing in it can run or run away.

The file is opened read-only (``mode=ro``, and ``query_only``), with extension loading off and
``trusted_schema`` off; only stored tables are read: a view (which could be an endless recursive
query), a virtual table (run by a module's code) or a generated column (computed as it is read)
under the name of a table loopnb reads is refused. Every query runs under a ``Budget``, SQLite's
progress handler: a query that does more work than the file's size can account for is stopped,
and ``load`` says so instead of running forever. ``stored`` also tells which columns a table has:
``SqliteSaver``'s layout changed over its versions (``writes.task_path`` came in 3.1.2), and a
column a version never wrote is read as its default.
"""

from __future__ import annotations

import contextlib
import sqlite3
from dataclasses import dataclass
from pathlib import Path
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
