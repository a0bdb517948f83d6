"""Command-line hooks: ``loopnb audit PATH...``, ``loopnb convert SRC DST`` and writing
recordings for ``loopnb demo``.

``loopnb/cli.py`` wires them: ``audit_command(paths)`` and ``convert_command(src, dst)`` print
plain text (no extra dependencies) and return the exit status.
"""

from __future__ import annotations

import re
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from loopnb.record._errors import RecordingError, RecordingWarning
from loopnb.record._recorder import Recorder

_FRACTIONS = frozenset({"share", "rate"})
"""Columns holding a fraction, printed as a percentage."""


def cell_text(column: str, value: object) -> str:
    """One value as the terminal shows it: fractions as percentages, other floats to two places
    (whole ones without), missing values as ``-``."""
    import pandas as pd

    # None, NaN, NaT, pd.NA; a list gives an array, never True (pandas-stubs: isna takes any object)
    if pd.isna(value) is True:  # type: ignore[call-overload]
        return "-"
    if isinstance(value, float):
        if column in _FRACTIONS:
            return f"{value:.0%}"
        return f"{value:.0f}" if value.is_integer() else f"{value:,.2f}"
    return str(value)


def _table(df: object) -> str:
    import pandas as pd

    assert isinstance(df, pd.DataFrame)
    if not len(df):
        return "  (none)"
    shown = pd.DataFrame({c: [cell_text(str(c), v) for v in df[c].astype(object)] for c in df.columns})
    text = shown.to_string(index=False)
    return "\n".join("  " + line for line in text.splitlines())


def audit_command(paths: Sequence[str], *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Print the audit of the recordings ``paths`` name (files, folders or globs).

    A recording that cannot be read is named on ``err`` with what is wrong, and the others are
    audited all the same. Returns 0 when every recording was read, 1 when one could not be (or
    the paths name none), 2 when no path is given.
    """
    import pandas as pd

    from loopnb.record._audit import Audit
    from loopnb.record._recording import load

    out = out or sys.stdout
    err = err or sys.stderr
    if not paths:
        print("loopnb audit: give at least one recording (file, folder or glob)", file=err)
        return 2
    try:
        files = _files(paths)
    except RecordingError as exc:
        print(f"loopnb audit: error: {exc}", file=err)
        return 1
    turns: list[pd.DataFrame] = []
    events: list[pd.DataFrame] = []
    read: list[Path] = []
    failed = 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RecordingWarning)
        for path in files:
            try:
                rec = load(path)
                frames = {"turns": rec.turns, "events": rec.events}
            except ImportError as exc:  # a Parquet recording without pyarrow
                print(f"loopnb audit: error: {RecordingError(str(exc), path=path)}", file=err)
                failed += 1
                continue
            except RecordingError as exc:
                print(f"loopnb audit: error: {exc}", file=err)
                failed += 1
                continue
            for name, bucket in (("turns", turns), ("events", events)):
                df = frames[name]
                df.insert(0, "source", pd.array([str(path)] * len(df), dtype="string"))  # type: ignore[arg-type]  # pandas-stubs: insert takes an ExtensionArray too
                bucket.append(df)
            read.append(path)
    for w in caught:
        print(f"loopnb audit: warning: {w.message}", file=err)
    if not read:
        return 1
    a = Audit(pd.concat(turns, ignore_index=True), pd.concat(events, ignore_index=True))
    skipped = f", {failed} could not be read (named above)" if failed else ""
    print(f"loopnb audit: {len(read)} recording(s){skipped}", file=out)
    for title, table in (
        ("Summary", a.summary()),
        ("Soft and hard turns per producer", a.by_producer()),
        ("Self-recovery after soft errors", a.recovery()),
        ("Per model", a.models()),
    ):
        print(f"\n{title}\n{_table(table)}", file=out)
    return 1 if failed else 0


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
    print(
        f"loopnb convert: wrote {target} ({len(rec.run_ids)} run(s), {rec.meta.get('n_turns', 0)} "
        f"turn(s), {rec.meta.get('n_events', 0)} event(s), redacted)",
        file=out,
    )
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
