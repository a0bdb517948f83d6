"""Reading files of any format: ``load(path) -> Recording`` and ``load_many(paths) -> DataFrame``.

A file's format is told from its content: each format of ``formats()`` sniffs its first bytes in
turn (loopnb's own first) and the first that recognises it reads it. A file none recognises whose
suffix is loopnb's own (or that is empty) goes to loopnb's reader, which says what is wrong with
it; any other is a ``RecordingError`` listing every format. ``holds_recording`` answers whether a
file is a recording of any format, so that no HTML page or converted file is written over one.
"""

from __future__ import annotations

import glob
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from loopnb.fileformats._own import OWN
from loopnb.fileformats._registry import known, named, others, unrecognised
from loopnb.foreign._formats import HEAD_BYTES, Errors, Format, checked_errors
from loopnb.record import Recording, RecordingError, RecordingWarning
from loopnb.record._files import is_loopnb_recording

if TYPE_CHECKING:
    import pandas as pd

_OWN_SUFFIXES = {suffix: fmt for fmt in OWN for suffix in fmt.suffixes}


def head(path: Path) -> bytes:
    """The first bytes of the file at ``path``, which the formats sniff."""
    try:
        with path.open("rb") as f:
            return f.read(HEAD_BYTES)
    except FileNotFoundError as exc:
        raise RecordingError("no such file", path=path) from exc
    except IsADirectoryError as exc:
        raise RecordingError("a folder, not a recording (load_many reads folders)", path=path) from exc
    except OSError as exc:
        raise RecordingError(f"cannot read: {exc}", path=path) from exc


def format_of(path: Path) -> Format:
    """The format of the file at ``path``, told from its content (a ``RecordingError`` listing
    every format when none recognises it)."""
    first = head(path)
    found: Format | None = next((fmt for fmt in OWN if fmt.sniff(first, path)), None)
    if found is None:  # loopnb's own files need no other format loaded
        found = next((fmt for fmt in others() if fmt.sniff(first, path)), None)
    if found is not None:
        return found
    if not first.strip():
        return OWN[0]  # loopnb's reader says what is wrong with it: empty
    own = _OWN_SUFFIXES.get(path.suffix.lower())
    if own is not None:
        return own  # its reader says what is wrong with it (a damaged header, not Parquet)
    raise unrecognised(path, "not a recording loopnb knows")


def load(path: str | Path, format: str | None = None, *, errors: Errors = "warn") -> Recording:
    """Read a recording: loopnb's own (``.jsonl`` or ``.parquet``) or another framework's run.

    ``format`` is told from the content unless given: a name of ``loopnb.formats()`` (``"jsonl"``,
    ``"parquet"``, ``"pydantic-ai"``, ``"inspect"``, ``"openai-agents"``, ``"otlp"``,
    ``"langgraph"``, or a format ``register_format`` added), or ``"loopnb"`` for either of loopnb's
    own. A foreign run's turns carry what its source said in ``source_status``, and
    ``meta["source"]`` names the source's format and version.

    ``errors`` is for another framework's file: with ``"warn"`` a span, message, event, sample or
    checkpoint that cannot be read is skipped with a ``RecordingWarning`` naming it (where, why,
    what was expected), the turn it belonged to keeps what could be read, and
    ``recording.meta["unread"]`` lists what was skipped (``{"where": ..., "why": ...}`` each);
    ``"raise"`` raises ``RecordingError`` on the first one. A file of which nothing can be read is a
    ``RecordingError`` either way. loopnb's own files keep their rules.

    Raises ``RecordingError`` naming the path (and line) when the file is missing, empty, not a
    recording (listing the formats loopnb reads), of an unknown format version, or damaged; a
    torn last line of a JSON Lines file is tolerated with a ``RecordingWarning``.
    """
    checked_errors(errors)
    path = Path(path)
    if format is None or format == "loopnb":
        fmt = format_of(path)
        if format == "loopnb" and fmt not in OWN:
            raise RecordingError(f"not a loopnb recording (it reads as {fmt.name})", path=path)
    else:
        found = named(format)
        if found is None:
            raise RecordingError(f"unknown format {format!r}: loopnb reads {known()}", path=path)
        fmt = found
    recording = fmt.read(path, errors=errors)
    if not isinstance(recording, Recording):
        raise TypeError(
            f"format {fmt.name!r} read {path} as a {type(recording).__name__}, not a loopnb.Recording"
        )
    return recording


def holds_recording(path: Path) -> bool:
    """Whether ``path`` is a recording loopnb reads: one of its own (a JSON Lines header, a Parquet
    footer holding one), or a file another format sniffs. Only its head and footer are read; a
    file that cannot be read is a ``RecordingError`` (whether it is a recording is unknown)."""
    if is_loopnb_recording(path):
        return True
    try:
        with path.open("rb") as f:
            first = f.read(HEAD_BYTES)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return False
    except OSError as exc:
        raise RecordingError(
            f"cannot read it to check it is no recording: {exc.strerror or exc}", path=path
        ) from exc
    return any(fmt.sniff(first, path) for fmt in others())


def _listed(path: Path) -> bool:
    """Whether a folder's file is one ``load_many`` reads: a ``.jsonl`` or ``.parquet`` file, or a
    file of a suffix another format's files have (``.json``, ``.eval``, a SQLite database) that
    one of them recognises."""
    suffix = path.suffix.lower()
    if suffix in _OWN_SUFFIXES:
        return path.is_file()
    formats = others()
    if not any(suffix in fmt.suffixes for fmt in formats) or not path.is_file():
        return False
    try:
        first = head(path)
    except RecordingError:
        return True  # listed, so that the reason it cannot be read is reported
    return any(fmt.sniff(first, path) for fmt in formats)


def recording_paths(source: str | Path | Iterable[str | Path]) -> list[Path]:
    """The recording files ``source`` names: a file, a folder (its ``.jsonl`` and ``.parquet``
    files, and other frameworks' runs loopnb reads), a glob pattern, or an iterable of those.
    Raises ``RecordingError`` when none."""
    if isinstance(source, str | Path):
        items: list[str | Path] = [source]
    else:
        items = list(source)
    paths: list[Path] = []
    for item in items:
        text = str(item)
        if Path(item).is_dir():
            found = sorted(p for p in Path(item).iterdir() if _listed(p))
        elif any(ch in text for ch in "*?[") and not Path(item).is_file():  # "runs[1].jsonl" is a name
            found = [Path(p) for p in sorted(glob.glob(text, recursive=True))]
        else:
            found = [Path(item)]
        paths.extend(found)
    if not paths:
        raise RecordingError(f"no recordings found in {source!r}")
    return list(dict.fromkeys(paths))


def _warn_of_copies(run_ids: Iterable[str], path: Path, seen: dict[str, Path]) -> None:
    """A ``RecordingWarning`` when runs of ``path`` were already loaded from another file (a
    ``.jsonl`` and its ``.parquet`` copy side by side): their turns would count twice."""
    copies = [run_id for run_id in run_ids if seen.setdefault(run_id, path) != path]
    if copies:
        shown = ", ".join(copies[:3]) + (f" and {len(copies) - 3} more" if len(copies) > 3 else "")
        warnings.warn(
            f"{path}: run {shown} also in {seen[copies[0]]}; both copies are in the frame (tell them "
            "apart by the source column, or load one of the files)",
            RecordingWarning,
            stacklevel=3,
        )


def load_many(
    source: str | Path | Iterable[str | Path],
    *,
    table: Literal["turns", "events"] = "turns",
    errors: Literal["raise", "skip"] = "raise",
    progress: bool | None = None,
) -> pd.DataFrame:
    """One frame of many recordings' ``turns`` (or ``events``), with a ``source`` column first.

    ``source`` is a file, a folder, a glob pattern or an iterable of them; each file is read as
    ``load`` reads it (any format of ``loopnb.formats()``). Rows keep the order of the files and,
    within each, of the recording; ``run_id`` tells the runs apart.

    A recording that cannot be read raises its ``RecordingError``; with ``errors="skip"`` it is
    left out with a ``RecordingWarning`` naming it and what is wrong, and the others load (an
    audit of a folder where one file was damaged in transit).

    ``progress`` shows a bar of the files loaded (tqdm's, a widget in a notebook): ``True`` always,
    ``False`` never, ``None`` (the default) only in an interactive session (stderr a terminal, or
    a notebook) for 100 files or more, once loading has taken half a second.
    """
    import pandas as pd

    from loopnb.record._frames import event_frame, turn_frame
    from loopnb.record._progress import Progress, wanted

    if table not in ("turns", "events"):
        raise ValueError(f"table must be 'turns' or 'events', got {table!r}")
    if errors not in ("raise", "skip"):
        raise ValueError(f"errors must be 'raise' or 'skip', got {errors!r}")
    paths = recording_paths(source)
    frames = []
    seen: dict[str, Path] = {}  # run_id -> the first file holding it
    with Progress(len(paths), shown=wanted(progress, len(paths))) as bar:
        for path in paths:
            try:
                rec = load(path)
                df = rec.turns if table == "turns" else rec.events
            except RecordingError as exc:
                if errors == "raise":
                    raise
                warnings.warn(f"skipped, not loaded: {exc}", RecordingWarning, stacklevel=2)
                bar.advance()
                continue
            bar.advance()
            _warn_of_copies(rec.run_ids, path, seen)
            df.insert(0, "source", pd.array([str(path)] * len(df), dtype="string"))  # type: ignore[arg-type]  # pandas-stubs: insert takes an ExtensionArray too
            frames.append(df)
    empty = turn_frame([]) if table == "turns" else event_frame([])
    if not any(len(f) for f in frames):
        empty.insert(0, "source", pd.array([], dtype="string"))  # type: ignore[arg-type]  # pandas-stubs: insert takes an ExtensionArray too
        return empty
    return pd.concat([f for f in frames if len(f)], ignore_index=True)
