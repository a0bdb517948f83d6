"""Loaded recordings: ``load(path) -> Recording`` and ``load_many(paths) -> DataFrame``."""

from __future__ import annotations

import glob
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from loopnb.engine._events import Event, TurnFinished
from loopnb.engine._turns import turns_of
from loopnb.record._errors import RecordingError, RecordingWarning

if TYPE_CHECKING:
    import pandas as pd

    from loopnb.record._redact import Redact


_SUFFIXES = (".jsonl", ".parquet")


class Recording:
    """A recording read back: ``turns`` and ``events`` frames, ``meta`` and the typed events.

    ``meta`` is the file's header (``format``, ``version``, ``loopnb_version``, ``created_at``,
    ``redacted``) plus ``path``, ``run_ids``, ``n_turns``, ``n_events`` and ``source`` (the
    format the run was read from and its version: ``{"format": "loopnb"}`` for loopnb's own).
    ``event_objects`` are the events revalidated through ``EVENT_ADAPTER``: replay them into a
    live view. Frames and events are loaded on first use and cached.
    """

    def __init__(
        self,
        *,
        meta: dict[str, Any],
        turns: Callable[[], pd.DataFrame],
        events: Callable[[], pd.DataFrame],
        event_objects: Callable[[], list[Event]],
    ) -> None:
        self.meta = meta if "source" in meta else {**meta, "source": {"format": "loopnb"}}
        self._loaders: dict[str, Callable[[], Any]] = {
            "turns": turns,
            "events": events,
            "event_objects": event_objects,
        }
        self._cache: dict[str, Any] = {}

    @classmethod
    def from_events(
        cls, events: list[Event], *, meta: dict[str, Any], path: str | Path | None = None
    ) -> Recording:
        """A recording of ``events`` (already redacted, if they are to be)."""
        from loopnb.record._frames import event_table, turn_table

        run_ids = list(dict.fromkeys(e.run_id for e in events))
        full = {
            **meta,
            "path": None if path is None else str(path),
            "run_ids": run_ids,
            "n_turns": sum(1 for e in events if isinstance(e, TurnFinished)),
            "n_events": len(events),
        }
        return cls(
            meta=full,
            turns=lambda: turn_table(events),
            events=lambda: event_table(events),
            event_objects=lambda: events,
        )

    def _get(self, name: str) -> Any:
        if name not in self._cache:
            self._cache[name] = self._loaders[name]()
        return self._cache[name]

    @property
    def turns(self) -> pd.DataFrame:
        """One row per turn: the columns of ``TURNS``, described in ``loopnb.TURN_SCHEMA``
        (``loopnb schema``)."""
        turns: pd.DataFrame = self._get("turns")
        return turns.copy(deep=False)

    @property
    def events(self) -> pd.DataFrame:
        """One row per event: the columns of ``EVENTS``, described in ``loopnb.EVENT_SCHEMA``
        (``loopnb schema events``)."""
        events: pd.DataFrame = self._get("events")
        return events.copy(deep=False)

    @property
    def event_objects(self) -> list[Event]:
        """The typed events, in order, revalidated from the file."""
        return list(self._get("event_objects"))

    @property
    def run_ids(self) -> list[str]:
        """The runs in this recording, in the order they started."""
        return list(self.meta.get("run_ids", []))

    @property
    def path(self) -> Path | None:
        """Where the recording was read from (``None`` for one made in memory)."""
        where = self.meta.get("path")
        return None if where is None else Path(where)

    def save(self, path: str | Path) -> Path:
        """Write this recording to ``path``; the suffix picks the format (``.jsonl`` or
        ``.parquet``, which needs pyarrow), so a JSON Lines recording converts to Parquet and back.

        Redacted as every export is: each event goes through the default redactor, whatever the
        header says. Written whole or not at all (a temporary file renamed onto ``path``); a file
        a live ``Recorder`` streams to is never replaced. The header is a new one (the current
        format version) keeping ``created_at`` and, for a run read from another framework,
        ``source``. Returns the path.
        """
        from loopnb.record._jsonl import make_header, write_jsonl
        from loopnb.record._redact import DEFAULT_REDACTOR

        path = Path(path)
        suffix = path.suffix.lower()
        if suffix not in _SUFFIXES:
            raise ValueError(f"cannot save a recording as {path.name!r}: use a .jsonl or .parquet suffix")
        objects, lines = exported(self.event_objects, DEFAULT_REDACTOR)
        header = make_header(redacted=True)
        if isinstance(self.meta.get("created_at"), str):
            header["created_at"] = self.meta["created_at"]
        source = self.meta.get("source")
        if isinstance(source, dict) and source.get("format") not in (None, "loopnb"):
            header["source"] = source  # a foreign run, converted, still says where it came from
        if suffix == ".jsonl":
            write_jsonl(path, header, lines)
        else:
            from loopnb.record._parquet import write_parquet

            write_parquet(path, header, objects, lines)
        return path

    def to_html(self, path: str | Path) -> Path:
        """Write a static HTML report of this recording (provided by ``loopnb.notebook``)."""
        from loopnb.notebook import to_html

        return to_html(self, path)

    def __repr__(self) -> str:
        where = f" from {self.meta['path']!r}" if self.meta.get("path") else ""
        return (
            f"Recording({len(self.run_ids)} runs, {self.meta.get('n_turns', '?')} turns, "
            f"{self.meta.get('n_events', '?')} events{where})"
        )


def exported(events: list[Event], redact: Redact | None) -> tuple[list[Event], list[str]]:
    """``events`` as they may leave the process: their JSON lines after ``redact`` (one pass over
    them all), and the events those lines hold (an event the redactor left alone is the very same
    object, a changed one is revalidated from its redacted line)."""
    from loopnb.record._lines import dump_event, parse_event, redact_line

    raw = [dump_event(e) for e in events]
    if not raw:
        return [], []
    lines = redact_line("\n".join(raw), redact).split("\n")
    objects = [
        event if line == before else parse_event(line)
        for event, before, line in zip(events, raw, lines, strict=True)
    ]
    return objects, lines


def _head(path: Path) -> bytes:
    from loopnb.foreign._formats import HEAD_BYTES

    try:
        with path.open("rb") as f:
            return f.read(HEAD_BYTES)
    except FileNotFoundError as exc:
        raise RecordingError("no such file", path=path) from exc
    except IsADirectoryError as exc:
        raise RecordingError("a folder, not a recording (load_many reads folders)", path=path) from exc
    except OSError as exc:
        raise RecordingError(f"cannot read: {exc}", path=path) from exc


def _format_of(path: Path) -> str:
    """``jsonl`` or ``parquet`` for loopnb's own recordings, else the foreign format the file's
    content is (a ``RecordingError`` listing every known format when none fits)."""
    suffix = path.suffix.lower()
    head = _head(path)
    if head[:4] == b"PAR1" or (suffix == ".parquet" and not head.startswith(b"SQLite format 3")):
        return "parquet"
    if b'"loopnb.recording"' in head.split(b"\n", 1)[0]:
        return "jsonl"
    from loopnb.foreign._formats import format_of, unrecognised

    found = format_of(path, head)
    if found is not None:
        return found
    if suffix == ".jsonl" or not head.strip():
        return "jsonl"  # loopnb's reader says what is wrong with it (empty, a damaged header)
    raise unrecognised(path, "not a recording loopnb knows")


def load(path: str | Path, format: str | None = None) -> Recording:
    """Read a recording: loopnb's own (``.jsonl`` or ``.parquet``) or another framework's run.

    ``format`` is detected from the content unless given: ``"loopnb"``, ``"pydantic-ai"``,
    ``"inspect"``, ``"openai-agents"``, ``"otlp"`` or ``"langgraph"`` (``loopnb.foreign.FORMATS``).
    A foreign run's turns carry what its source said in ``source_status``, and ``meta["source"]``
    names the source's format and version.

    Raises ``RecordingError`` naming the path (and line) when the file is missing, empty, not a
    recording (listing the formats loopnb reads), of an unknown format version, or damaged; a
    torn last line of a JSON Lines file is tolerated with a ``RecordingWarning``.
    """
    path = Path(path)
    kind = _format_of(path) if format in (None, "loopnb") else format
    if format == "loopnb" and kind not in ("jsonl", "parquet"):
        raise RecordingError(f"not a loopnb recording (it reads as {kind})", path=path)
    if kind == "parquet":
        from loopnb.record._parquet import read_parquet

        return read_parquet(path)
    if kind != "jsonl":
        from loopnb.foreign._formats import read

        return read(path, kind)
    from loopnb.record._jsonl import read_jsonl

    header, events = read_jsonl(path)
    recording = Recording.from_events(events, meta=header, path=path)
    for name, build in _TABLES.items():
        recording._loaders[name] = _located(build, events, path)
    return recording


def _turn_table(events: list[Event]) -> pd.DataFrame:
    from loopnb.record._frames import turn_table

    return turn_table(events)


def _event_table(events: list[Event]) -> pd.DataFrame:
    from loopnb.record._frames import event_table

    return event_table(events)


_TABLES: dict[str, Callable[[list[Event]], pd.DataFrame]] = {"turns": _turn_table, "events": _event_table}
_SCAN = 1000


def _located(
    build: Callable[[list[Event]], pd.DataFrame], events: list[Event], path: Path
) -> Callable[[], pd.DataFrame]:
    """``build(events)``, where a value no frame column can hold (an integer past 64 bits, a time
    past the year 9999) is a ``RecordingError`` naming the line of the first such event."""

    def checked() -> pd.DataFrame:
        try:
            return build(events)
        except (ValueError, TypeError, OverflowError) as exc:
            index = _first_failing(build, events)
            line = None if index is None else index + 2  # line 1 is the header
            raise RecordingError(
                f"a value of this event does not fit its column: {exc}", path=path, line=line
            ) from exc

    return checked


def _first_failing(build: Callable[[list[Event]], Any], events: list[Event]) -> int | None:
    """The index of the first event ``build`` fails on alone: chunk by chunk, then one by one.
    A turns row is made of a turn's events: the first failing turn is found, then the first of
    its events whose own row fails (else the event that finished the turn)."""
    if build is _turn_table:
        return _first_failing_turn(events)
    for start in range(0, len(events), _SCAN):
        chunk = events[start : start + _SCAN]
        if _fails(build, chunk):
            for offset, event in enumerate(chunk):
                if _fails(build, [event]):
                    return start + offset
    return None


def _first_failing_turn(events: list[Event]) -> int | None:
    from loopnb.record._frames import turns_frame

    index = {id(e): i for i, e in enumerate(events)}
    for turn in turns_of(events):
        try:
            turns_frame([turn])
        except (ValueError, TypeError, OverflowError):
            parts = [
                turn.replied,
                *turn.dispatched,
                *turn.decisions,
                *turn.soft_errors,
                turn.hard,
                turn.finished,
            ]
            positions = sorted(index[id(e)] for e in parts if e is not None and id(e) in index)
            started = [i for i in range(positions[0] - 1, -1, -1) if events[i].kind == "turn_started"][:1]
            for i in started + positions:
                if _fails(_event_table, [events[i]]):
                    return i
            return positions[-1]
    return None


def _fails(build: Callable[[list[Event]], Any], events: list[Event]) -> bool:
    try:
        build(events)
    except (ValueError, TypeError, OverflowError):
        return True
    return False


def recording_paths(source: str | Path | Iterable[str | Path]) -> list[Path]:
    """The recording files ``source`` names: a file, a folder (its ``.jsonl`` and ``.parquet``
    files), a glob pattern, or an iterable of those. Raises ``RecordingError`` when none."""
    if isinstance(source, str | Path):
        items: list[str | Path] = [source]
    else:
        items = list(source)
    paths: list[Path] = []
    for item in items:
        text = str(item)
        if Path(item).is_dir():
            found = sorted(p for p in Path(item).iterdir() if p.suffix.lower() in _SUFFIXES and p.is_file())
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
) -> pd.DataFrame:
    """One frame of many recordings' ``turns`` (or ``events``), with a ``source`` column first.

    ``source`` is a file, a folder, a glob pattern or an iterable of them. Rows keep the order
    of the files and, within each, of the recording; ``run_id`` tells the runs apart.

    A recording that cannot be read raises its ``RecordingError``; with ``errors="skip"`` it is
    left out with a ``RecordingWarning`` naming it and what is wrong, and the others load (an
    audit of a folder where one file was damaged in transit).
    """
    import pandas as pd

    from loopnb.record._frames import event_frame, turn_frame

    if table not in ("turns", "events"):
        raise ValueError(f"table must be 'turns' or 'events', got {table!r}")
    if errors not in ("raise", "skip"):
        raise ValueError(f"errors must be 'raise' or 'skip', got {errors!r}")
    frames = []
    seen: dict[str, Path] = {}  # run_id -> the first file holding it
    for path in recording_paths(source):
        try:
            rec = load(path)
            df = rec.turns if table == "turns" else rec.events
        except RecordingError as exc:
            if errors == "raise":
                raise
            warnings.warn(f"skipped, not loaded: {exc}", RecordingWarning, stacklevel=2)
            continue
        _warn_of_copies(rec.run_ids, path, seen)
        df.insert(0, "source", pd.array([str(path)] * len(df), dtype="string"))  # type: ignore[arg-type]  # pandas-stubs: insert takes an ExtensionArray too
        frames.append(df)
    empty = turn_frame([]) if table == "turns" else event_frame([])
    if not any(len(f) for f in frames):
        empty.insert(0, "source", pd.array([], dtype="string"))  # type: ignore[arg-type]  # pandas-stubs: insert takes an ExtensionArray too
        return empty
    return pd.concat([f for f in frames if len(f)], ignore_index=True)
