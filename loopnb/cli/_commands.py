"""The commands that read recordings of any format: ``loopnb audit PATH...``, ``loopnb convert
SRC DST`` and ``loopnb compare A B``.

``loopnb.cli._main`` wires them: each prints (in colour on a terminal, through rich) and returns the
exit status. They read files through the formats layer (``load``, ``holds_recording``), which is
why they live above it rather than beside the text they print (``loopnb.record``).
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from loopnb.cli import _terminal as terminal
from loopnb.cli._terminal import plural
from loopnb.fileformats._load import holds_recording, load, recording_paths
from loopnb.fileformats._registry import writer_for, written_suffixes
from loopnb.record import RecordingError, RecordingWarning


def audit_command(
    paths: Sequence[str],
    *,
    out: TextIO | None = None,
    err: TextIO | None = None,
    width: int | None = None,
    progress: bool | None = None,
    format: str | None = None,
) -> int:
    """Print the audit of the recordings ``paths`` name (files, folders or globs).

    Returns 0 when every recording was read. 1 when one could not be (damaged, of a newer
    format version, Parquet without pyarrow): it is named on ``err`` with what is wrong and the
    others are audited. 2 for bad input: no path; a path that names no file (nothing there, a
    folder without recordings, a pattern matching none), named and nothing audited; or a file
    that is not a loopnb recording, named and the others audited. ``progress`` as in
    ``load_many`` (a bar on ``err`` for a large folder, when interactive); ``format`` reads every
    file as that format (``load``'s ``format=``) instead of telling it from the content.
    """
    import shutil

    import pandas as pd

    from loopnb.analysis import Audit
    from loopnb.analysis._usage import simulated_runs
    from loopnb.cli._audit_text import audit_lines
    from loopnb.record._progress import Progress, wanted

    out = out or sys.stdout
    err = err or sys.stderr
    if not paths:
        print("loopnb audit: give at least one recording (file, folder or glob)", file=err)
        return 2
    try:
        files = _files(paths)
    except RecordingError as exc:
        print(f"loopnb audit: error: {exc}", file=err)
        return 2
    turns: list[pd.DataFrame] = []
    events: list[pd.DataFrame] = []
    simulated: list[tuple[str, str]] = []  # (source, run_id) of the runs on a simulated clock
    strangers = failed = 0
    with (
        warnings.catch_warnings(record=True) as caught,
        Progress(len(files), shown=wanted(progress, len(files), err), file=err) as bar,
    ):
        warnings.simplefilter("always", RecordingWarning)
        for path in files:
            try:
                rec = load(path, format=format)
                frames = {"turns": rec.turns, "events": rec.events}
            except ImportError as exc:  # a Parquet recording without pyarrow
                failed += 1
                bar.note(f"loopnb audit: error: {RecordingError(str(exc), path=path)}")
                continue
            except RecordingError as exc:
                if _not_a_recording(path):
                    strangers += 1
                else:
                    failed += 1
                bar.note(f"loopnb audit: error: {exc}")
                continue
            finally:
                bar.advance()
            for name, bucket in (("turns", turns), ("events", events)):
                df = frames[name]
                df.insert(0, "source", pd.array([str(path)] * len(df), dtype="string"))  # type: ignore[arg-type]  # pandas-stubs: insert takes an ExtensionArray too
                bucket.append(df)
            simulated += [(str(path), run_id) for run_id in simulated_runs(rec.event_objects)]
    for w in caught:
        print(f"loopnb audit: warning: {w.message}", file=err)
    code = 2 if strangers else 1 if failed else 0
    if not turns:
        return code
    a = Audit(pd.concat(turns, ignore_index=True), pd.concat(events, ignore_index=True), simulated=simulated)
    con = terminal.console(out)
    terminal.write(con, f"loopnb audit: {_counted(len(files), strangers, failed)}")
    shown = width or shutil.get_terminal_size((100, 24)).columns
    for line in audit_lines(a, width=shown):
        terminal.write(con, line)
    return code


def _counted(given: int, strangers: int, failed: int) -> str:
    """What the audit was given and what of it could not be audited: ``2 recordings, 1 could not
    be read (named above)``."""
    if not strangers and not failed:
        return plural(given, "recording")
    problems = []
    if strangers:
        problems.append(f"{plural(strangers, 'is', 'are')} not a recording loopnb reads")
    if failed:
        problems.append(f"{failed} could not be read")
    what = plural(given, "file") if strangers else plural(given, "recording")
    return f"{what}, {' and '.join(problems)} (named above)"


def _not_a_recording(path: Path) -> bool:
    """Whether ``path`` is no loopnb recording at all (missing, a folder, another kind of file),
    as opposed to a recording that could not be read."""
    try:
        return not path.is_file() or not holds_recording(path)
    except RecordingError:  # it cannot even be read: whether it is one is unknown
        return False


def convert_command(
    src: str, dst: str, *, out: TextIO | None = None, err: TextIO | None = None, format: str | None = None
) -> int:
    """Save the recording ``src`` as ``dst``, in the format ``dst``'s suffix names, redacted.

    Returns 0 when ``dst`` was written; 1 when ``src`` cannot be read or ``dst`` cannot be
    written (an existing ``dst`` that is not a recording is never replaced); 2 when ``src`` names
    no file or no format loopnb writes has ``dst``'s suffix (``.jsonl``, ``.parquet``, or a
    registered format's that can be written). ``format`` reads ``src`` as that format.
    """
    out = out or sys.stdout
    err = err or sys.stderr
    target = Path(dst)
    write = writer_for(target)
    if write is None:
        wanted = " or ".join(written_suffixes())
        print(f"loopnb convert: error: {dst}: give DST a {wanted} suffix (it picks the format)", file=err)
        return 2
    if not Path(src).is_file():
        print(f"loopnb convert: error: {src}: no such file", file=err)
        return 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RecordingWarning)
        try:
            if target.is_file() and target.stat().st_size and not holds_recording(target):
                raise RecordingError(
                    "exists and is not a loopnb recording: it is never replaced; move it or "
                    "choose another name",
                    path=target,
                )
            rec = load(src, format=format)
            write(rec, target)
        except ImportError as exc:  # Parquet without pyarrow
            print(f"loopnb convert: error: {exc}", file=err)
            return 1
        except (RecordingError, OSError) as exc:
            print(f"loopnb convert: error: {exc}", file=err)
            return 1
    for w in caught:
        print(f"loopnb convert: warning: {w.message}", file=err)
    counts = (
        plural(len(rec.run_ids), "run"),
        plural(int(rec.meta.get("n_turns", 0)), "turn"),
        plural(int(rec.meta.get("n_events", 0)), "event"),
    )
    print(f"loopnb convert: wrote {target} ({', '.join(counts)}, redacted)", file=out)
    return 0


def _files(paths: Sequence[str]) -> list[Path]:
    """The recording files ``paths`` name, each path looked up on its own so that one naming
    nothing (an empty folder, a glob matching no file) is an error naming it, not skipped."""
    files: list[Path] = []
    for item in paths:
        try:
            files.extend(recording_paths(item))
        except RecordingError:
            what = "no .jsonl or .parquet file in this folder" if Path(item).is_dir() else "matches no file"
            raise RecordingError(what, path=item) from None
    return list(dict.fromkeys(files))


def _side_source(path: str, format: str | None) -> Any:
    """A recording's path read (as ``format``, when given), or a sweep's folder opened."""
    from loopnb._sweep._plan import PLAN_FILE

    if (Path(path) / PLAN_FILE).is_file():
        from loopnb._sweep import Sweep

        return Sweep(path)
    return load(path, format=format)


def compare_command(
    a: str,
    b: str,
    *,
    runs: Sequence[str] = (),
    labels: tuple[str, str] = ("a", "b"),
    context: int = 3,
    html: str | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
    width: int | None = None,
    format: str | None = None,
) -> int:
    """Print the comparison of the recordings ``a`` and ``b`` (files, or a sweep's folder).

    ``runs``: none, one run id for both sides, or one per side. Returns 0 when the two runs were
    compared (whether or not they differ); 1 when a recording could not be read (damaged, a
    newer format version, Parquet without pyarrow) or the page could not be written; 2 for bad
    input (no such file, a file that is not a recording, a side with several runs and no
    ``--run`` naming one, a run id it does not hold).
    """
    import shutil

    from loopnb.analysis import compare
    from loopnb.cli._compare_text import compare_lines

    out = out or sys.stdout
    err = err or sys.stderr
    if len(runs) > 2:
        print("loopnb compare: --run at most twice: the run of A, then the run of B", file=err)
        return 2
    picked = (runs[0], runs[-1]) if runs else (None, None)
    sides = []
    for path in (a, b):
        try:
            sides.append(_side_source(path, format))
        except ImportError as exc:
            print(f"loopnb compare: error: {RecordingError(str(exc), path=path)}", file=err)
            return 1
        except RecordingError as exc:
            p = Path(path)
            stranger = not p.is_file() or not _holds(holds_recording, p)
            print(f"loopnb compare: error: {exc}", file=err)
            return 2 if stranger else 1
        except ValueError as exc:  # a sweep's folder that cannot be opened
            print(f"loopnb compare: error: {path}: {exc}", file=err)
            return 1
    for name, path, source, run in zip("AB", (a, b), sides, picked, strict=True):
        ids = _run_ids(source)
        if run is None and len(ids) > 1:
            listed = ", ".join(ids[:12]) + (", ..." if len(ids) > 12 else "")
            print(
                f"loopnb compare: {name} ({path}) holds {len(ids)} runs ({listed}); pick one with --run RUN "
                "(once for both sides, or twice: the run of A, then the run of B)",
                file=err,
            )
            return 2
        if run is not None and run not in ids:
            print(
                f"loopnb compare: {name} ({path}) has no run {run!r}; its runs are {', '.join(ids)}", file=err
            )
            return 2
    try:
        c = compare(sides[0], sides[1], labels=labels, runs=picked)
    except ValueError as exc:
        print(f"loopnb compare: {str(exc).removeprefix('compare(): ')}", file=err)
        return 2
    con = terminal.console(out)
    terminal.write(con, f"loopnb compare: {labels[0]} = {a} (run {c.sides[0].run_id}), "
                   f"{labels[1]} = {b} (run {c.sides[1].run_id})")  # fmt: skip
    terminal.write(con, "")
    shown = width or shutil.get_terminal_size((100, 24)).columns
    for line in compare_lines(c, width=shown, context=context):
        terminal.write(con, line)
    if html is not None:
        try:
            written = c.to_html(html)
        except (RecordingError, OSError) as exc:
            print(f"loopnb compare: error: {exc}", file=err)
            return 1
        terminal.write(con, f"wrote the comparison page to {written}")
    return 0


def _run_ids(source: Any) -> list[str]:
    """The runs a recording (or a sweep) holds, in order."""
    ids = getattr(source, "run_ids", None)
    if isinstance(ids, list):
        return [str(i) for i in ids]
    return list(dict.fromkeys(source.turns["run_id"].dropna().astype(str).tolist()))


def _holds(check: Any, path: Path) -> bool:
    try:
        return bool(check(path))
    except RecordingError:
        return True  # it cannot even be read: whether it is one is unknown, say it could not be read
