"""Command-line hooks: ``loopnb audit PATH...``, ``loopnb convert SRC DST`` and writing
recordings for ``loopnb demo``.

``loopnb/cli.py`` wires them: ``audit_command(paths)`` and ``convert_command(src, dst)`` print
(in colour on a terminal, through rich) and return the exit status.
"""

from __future__ import annotations

import re
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from loopnb import _terminal as terminal
from loopnb._terminal import plural
from loopnb.record._errors import RecordingError, RecordingWarning
from loopnb.record._recorder import Recorder


def audit_command(
    paths: Sequence[str],
    *,
    out: TextIO | None = None,
    err: TextIO | None = None,
    width: int | None = None,
    progress: bool | None = None,
) -> int:
    """Print the audit of the recordings ``paths`` name (files, folders or globs).

    Returns 0 when every recording was read. 1 when one could not be (damaged, of a newer
    format version, Parquet without pyarrow): it is named on ``err`` with what is wrong and the
    others are audited. 2 for bad input: no path; a path that names no file (nothing there, a
    folder without recordings, a pattern matching none), named and nothing audited; or a file
    that is not a loopnb recording, named and the others audited. ``progress`` as in
    ``load_many`` (a bar on ``err`` for a large folder, when interactive).
    """
    import shutil

    import pandas as pd

    from loopnb.record._audit import Audit
    from loopnb.record._audit_text import audit_lines
    from loopnb.record._progress import Progress, wanted
    from loopnb.record._recording import load
    from loopnb.record._usage import simulated_runs

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
                rec = load(path)
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
    from loopnb.record._files import holds_recording

    try:
        return not path.is_file() or not holds_recording(path)
    except RecordingError:  # it cannot even be read: whether it is one is unknown
        return False


def convert_command(src: str, dst: str, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Save the recording ``src`` as ``dst``, in the format ``dst``'s suffix names, redacted.

    Returns 0 when ``dst`` was written; 1 when ``src`` cannot be read or ``dst`` cannot be
    written (an existing ``dst`` that is not a recording is never replaced); 2 when ``dst``'s
    suffix is neither ``.jsonl`` nor ``.parquet``.
    """
    from loopnb.record._files import holds_recording
    from loopnb.record._recording import load

    out = out or sys.stdout
    err = err or sys.stderr
    target = Path(dst)
    if target.suffix.lower() not in (".jsonl", ".parquet"):
        print(f"loopnb convert: {dst}: give DST a .jsonl or .parquet suffix (it picks the format)", file=err)
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
            rec = load(src)
            rec.save(target)
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
    from loopnb.record._recording import recording_paths

    files: list[Path] = []
    for item in paths:
        try:
            files.extend(recording_paths(item))
        except RecordingError:
            what = "no .jsonl or .parquet file in this folder" if Path(item).is_dir() else "matches no file"
            raise RecordingError(what, path=item) from None
    return list(dict.fromkeys(files))


def write_recordings(recorder: Recorder, folder: str | Path, *, suffix: str = ".jsonl") -> list[Path]:
    """Save each run the recorder observed as its own file, ``<folder>/<run_id><suffix>``.

    Runs are taken from what is exported (redacted), and each file name is made of the run id's
    letters, digits, ``.``, ``_`` and ``-`` (anything else becomes ``_``, and a name already taken
    gets ``-2``, ``-3``...): a run id can neither leak a secret into a name nor point outside
    ``folder``.
    """
    from loopnb.record._jsonl import make_header, write_jsonl

    if suffix not in (".jsonl", ".parquet"):
        raise ValueError(f"suffix must be .jsonl or .parquet, got {suffix!r}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    objects, lines = recorder.exported_events()
    runs: dict[str, list[int]] = {}
    for i, e in enumerate(objects):
        runs.setdefault(e.run_id, []).append(i)
    header = make_header(redacted=recorder.redact is not None)
    written: list[Path] = []
    for run_id, mine in runs.items():
        path = _file_for(folder, run_id, suffix, taken=written)
        if suffix == ".parquet":
            from loopnb.record._parquet import write_parquet

            write_parquet(path, header, [objects[i] for i in mine], [lines[i] for i in mine])
        else:
            write_jsonl(path, header, [lines[i] for i in mine])
        written.append(path)
    return written


def _file_for(folder: Path, run_id: str, suffix: str, *, taken: list[Path]) -> Path:
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", run_id).lstrip(".") or "run"
    path, n = folder / f"{stem}{suffix}", 2
    while path in taken:
        path, n = folder / f"{stem}-{n}{suffix}", n + 1
    return path
