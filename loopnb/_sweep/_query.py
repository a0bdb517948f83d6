"""``loopnb.query``: DuckDB SQL over recordings, with a ``turns`` and an ``events`` view.

What each path names is read the way that costs least and writes no turn logic twice:

- a sweep's folder (``config=NAME/part-*.parquet``): DuckDB reads the files itself,
  ``read_parquet(..., hive_partitioning=true)``, so ``turns`` has ``config`` and ``seed`` columns;
- loopnb's Parquet recordings: DuckDB reads their turns table (the file *is* the turns frame);
- JSON Lines (and first-layout Parquet, and other frameworks' runs): the frame loopnb's own builder
  makes (``loopnb.load(path).turns``), registered as an Arrow table of the Parquet files' types.

The ``events`` view is built from the events each recording keeps, by loopnb's builder, and only
when the SQL names it. Needs duckdb (``pip install 'loopnb[sql]'``).
"""

from __future__ import annotations

import glob
import re
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from loopnb._sweep._batch import run_id, sweep_files
from loopnb._sweep._plan import PLAN_FILE
from loopnb.record import RecordingError, RecordingWarning

if TYPE_CHECKING:
    import pandas as pd

    from loopnb.record import Recording

_SUFFIXES = (".jsonl", ".parquet")


@dataclass
class _Sources:
    sweeps: list[Path] = field(default_factory=list)
    parquet: list[Path] = field(default_factory=list)
    loaded: list[Recording] = field(default_factory=list)
    """The recordings DuckDB cannot read itself, each loaded once (the events view reuses them)."""

    def __bool__(self) -> bool:
        return bool(self.sweeps or self.parquet or self.loaded)


def _is_sweep(folder: Path) -> bool:
    return (folder / PLAN_FILE).is_file() or any(folder.glob("config=*/part-*.parquet"))


def _sources(paths: Sequence[str | Path], errors: str) -> _Sources:
    """Sort what ``paths`` name into sweeps, Parquet recordings and recordings loopnb loads; with
    ``errors="warn"`` a recording that cannot be read is left out with a ``RecordingWarning``."""
    found = _Sources()
    files: list[Path] = []
    for item in paths:
        path = Path(item)
        text = str(item)
        if path.is_dir():
            if _is_sweep(path):
                found.sweeps.append(path)
                continue
            files.extend(sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in _SUFFIXES))
            found.sweeps.extend(sorted(p for p in path.iterdir() if p.is_dir() and _is_sweep(p)))
        elif any(ch in text for ch in "*?[") and not path.is_file():
            for match in sorted(glob.glob(text, recursive=True)):
                m = Path(match)
                if m.is_dir() and _is_sweep(m):
                    found.sweeps.append(m)
                elif m.is_file() and not m.name.startswith((".", "_")):
                    files.append(m)
        elif path.exists():
            files.append(path)
        else:
            raise RecordingError("no such file or folder", path=path)
    in_sweep = {s.resolve() for s in found.sweeps}
    for f in dict.fromkeys(files):
        if f.resolve().parent.parent in in_sweep:
            continue  # one of a sweep's files, already read with its sweep
        try:
            _sort(f, found)
        except RecordingError as exc:
            if errors == "raise":
                raise
            warnings.warn(f"left out {exc}", RecordingWarning, stacklevel=4)
    if not found:
        shown = ", ".join(map(str, paths))
        raise RecordingError(
            f"no recordings found in {shown} (expected .jsonl or .parquet files, or a sweep's folder)"
        )
    return found


def _sort(path: Path, found: _Sources) -> None:
    """Put ``path`` where it is read: a Parquet file DuckDB reads itself, or a loaded recording."""
    if _plain_parquet(path):
        found.parquet.append(path)
    else:
        from loopnb.fileformats import load

        found.loaded.append(load(path))


def _plain_parquet(path: Path) -> bool:
    """A loopnb Parquet recording DuckDB can read as it is (checked as ``loopnb.load`` checks it;
    a first-layout file, which mixes events into the table, is loaded instead)."""
    from loopnb.record._parquet import read_parquet

    if path.suffix.lower() != ".parquet":
        return False
    read_parquet(path)  # a file that is no recording is a RecordingError naming it
    return "record" not in _columns(path)


def _columns(path: Path) -> list[str]:
    import pyarrow.parquet as pq

    return list(pq.read_schema(path).names)


def _duckdb() -> Any:
    try:
        import duckdb
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("SQL over recordings needs duckdb: pip install 'loopnb[sql]'") from exc
    return duckdb


def _list(patterns: Sequence[str]) -> str:
    """DuckDB's list of the glob patterns, each quoted as an SQL string."""
    return "[" + ", ".join("'" + p.replace("'", "''") + "'" for p in patterns) + "]"


_GLOB_CHARACTERS = re.compile(r"([*?\[])")


def _literal(path: Path) -> str:
    """``path`` as a DuckDB glob that matches that path only: DuckDB globs every path it reads, so a
    file named ``*.parquet`` (or ``runs[1].parquet``) would read its siblings; each of ``*``, ``?``
    and ``[`` is written as a class holding only itself (``[*]``), which matches it literally."""
    return _GLOB_CHARACTERS.sub(r"[\1]", str(path))


def _arrow_turns(frame: pd.DataFrame) -> Any:
    """A turns frame as the Arrow table a Parquet recording holds (categories as plain strings)."""
    from loopnb.record import TURNS
    from loopnb.record._arrow import arrow_fields, pyarrow

    pa, _ = pyarrow()
    schema = pa.schema(arrow_fields(TURNS, pa))
    return pa.Table.from_arrays(
        [pa.array(frame[f.name], type=f.type, from_pandas=True) for f in schema], schema=schema
    )


def _turns_view(con: Any, found: _Sources) -> None:
    import pandas as pd

    parts = []
    hive = "hive_partitioning = true, hive_types = {'config': VARCHAR}"
    for folder in found.sweeps:  # one read per sweep: its files share one schema (union_by_name
        # would read every file's schema before the query starts); named one by one, so that the
        # files a stopped compaction left beside the file that merged them are not read twice
        named = [_literal(p) for p in sweep_files(folder)] or [f"{_literal(folder)}/config=*/part-*.parquet"]
        parts.append(f"SELECT * FROM read_parquet({_list(named)}, {hive})")
    if found.parquet:
        files = _list([_literal(p) for p in found.parquet])
        parts.append(f"SELECT * FROM read_parquet({files}, union_by_name = true)")
    if found.loaded:
        frames = [rec.turns for rec in found.loaded]
        con.register("loopnb_loaded_turns", _arrow_turns(pd.concat(frames, ignore_index=True)))
        parts.append("SELECT * FROM loopnb_loaded_turns")
    con.execute("CREATE VIEW turns AS " + " UNION ALL BY NAME ".join(parts))


def _events_view(con: Any, found: _Sources) -> None:
    import pandas as pd

    from loopnb.fileformats import load
    from loopnb.record._frames import event_table

    frames = []
    for folder in found.sweeps:
        for part in sweep_files(folder):
            rec = load(part)
            frame = rec.events
            info = rec.meta.get("sweep") or {}
            seed_of = {run_id(str(info.get("config")), s): s for s in info.get("seeds", [])}
            seeds = frame["run_id"].map(seed_of).to_numpy()
            frame.insert(0, "seed", pd.Series(seeds, index=frame.index, dtype="Int64"))
            config = part.parent.name.removeprefix("config=")
            frame.insert(0, "config", pd.Series(config, index=frame.index, dtype="string"))
            frames.append(frame)
    frames.extend(load(path).events for path in found.parquet)
    frames.extend(rec.events for rec in found.loaded)
    events = pd.concat(frames, ignore_index=True) if frames else event_table([])
    for name in events.columns:
        if isinstance(events[name].dtype, pd.CategoricalDtype):
            events[name] = events[name].astype("string")  # as the turns' categories read: plain text
    con.register("events", events)


def _names(duckdb: Any, sql: str) -> set[str]:
    try:
        return {str(n).lower() for n in duckdb.get_table_names(sql)}
    except duckdb.Error:
        return {"events"}  # the SQL does not parse: DuckDB will say why when it runs


def query(sql: str, *paths: str | Path, errors: str = "raise") -> pd.DataFrame:
    """Run DuckDB ``sql`` over the recordings ``paths`` name; returns a pandas frame.

    Args:
        sql: one SQL query over the views ``turns`` (the turns frame's columns; a sweep's rows also
            have ``config`` and ``seed``) and ``events`` (the events frame's).
        paths: recordings (``.jsonl``, ``.parquet``), folders of them, sweep folders, glob patterns.
            A path that exists is read as that path only, whatever characters its name holds: a
            file named ``*.parquet`` is that one file, not its folder's Parquet files. A path that
            does not exist and holds ``*``, ``?`` or ``[`` is a glob pattern (``**`` spans folders),
            and each file it matches is read as that file only.
        errors: ``"raise"`` (a recording that cannot be read is an error) or ``"warn"`` (it is left
            out with a ``RecordingWarning`` naming it, and the others are queried, as ``loopnb
            audit`` does).

    Raises:
        RecordingError: no recording is found, or (``errors="raise"``) one cannot be read.
        ValueError: the SQL is not valid or does not run (DuckDB's message, and the views).
    """
    duckdb = _duckdb()
    if not isinstance(sql, str) or not sql.strip():
        raise ValueError(f"query: sql must be a non-empty SQL query, got {sql!r:.60}")
    if not paths:
        raise ValueError("query: give at least one recording, folder, sweep or glob pattern")
    if errors not in ("raise", "warn"):
        raise ValueError(f'query: errors must be "raise" or "warn", got {errors!r:.60}')
    found = _sources(paths, errors)
    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        _turns_view(con, found)
        if "events" in _names(duckdb, sql):
            _events_view(con, found)
        try:
            result = con.sql(sql)
        except duckdb.Error as exc:
            raise ValueError(
                f"query: {type(exc).__name__}: {exc}\n(the views are turns and events: `loopnb schema` "
                "and `loopnb schema events` list their columns)"
            ) from exc
        if result is None:
            raise ValueError(f"query: {sql.strip()[:60]!r} returns no rows; give a query (SELECT ...)")
        frame: pd.DataFrame = result.df()
        return frame
    finally:
        con.close()


def query_command(
    sql: str, paths: Sequence[str], *, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """``loopnb query SQL PATH...``: print the result, querying every recording that could be read.

    Exit codes as every subcommand's (``loopnb.cli``): 0 when every recording was read, 1 when one
    could not be (named on ``err``, the rest queried), 2 when the query cannot run as asked (no such
    path, no recording found, SQL that does not run, DuckDB not installed).
    """
    import pandas as pd

    out = out or sys.stdout
    err = err or sys.stderr
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RecordingWarning)
        try:
            frame = query(sql, *paths, errors="warn")
        except ImportError as exc:  # DuckDB is an extra
            print(f"loopnb query: error: {exc}", file=err)
            return 2
        except (RecordingError, ValueError) as exc:
            frame, failure = None, str(exc).removeprefix("query: ")
    left_out = [w for w in caught if issubclass(w.category, RecordingWarning)]
    for w in left_out:
        print(f"loopnb query: warning: {w.message}", file=err)
    if frame is None:
        print(f"loopnb query: error: {failure}", file=err)
        return 1 if left_out else 2  # nothing to query because what was named could not be read
    with pd.option_context("display.max_rows", None, "display.max_columns", None, "display.width", 200):
        out.write((frame.to_string(index=False) if len(frame.columns) else "(no columns)") + "\n")
    return 1 if left_out else 0
