"""Recordings read back: the ``Recording`` (frames, meta and events of one file or of runs in
memory), how loopnb's own JSON Lines file becomes one (``read_jsonl_recording``), and how one is
written in loopnb's own formats (``write_recording``, ``Recording.save``). Telling a file's format
and reading other frameworks' runs is the formats layer's (``loopnb.load``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from loopnb._drawing import drawer
from loopnb.engine import turns_of
from loopnb.engine._events import Event, TurnFinished
from loopnb.record._errors import RecordingError

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
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix not in _SUFFIXES:
            raise ValueError(f"cannot save a recording as {path.name!r}: use a .jsonl or .parquet suffix")
        return write_recording(self, path, "jsonl" if suffix == ".jsonl" else "parquet")

    def to_html(self, path: str | Path) -> Path:
        """Write a static HTML report of this recording (drawn by the notebook layer)."""
        path_written: Path = drawer().recording_page(self, path)
        return path_written

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


def write_recording(recording: Recording, path: Path, kind: Literal["jsonl", "parquet"]) -> Path:
    """Write ``recording`` to ``path`` in loopnb's own format ``kind``, as ``Recording.save`` says."""
    from loopnb.record._jsonl import make_header, write_jsonl
    from loopnb.record._redact import DEFAULT_REDACTOR

    objects, lines = exported(recording.event_objects, DEFAULT_REDACTOR)
    header = make_header(redacted=True)
    if isinstance(recording.meta.get("created_at"), str):
        header["created_at"] = recording.meta["created_at"]
    source = recording.meta.get("source")
    if isinstance(source, dict) and source.get("format") not in (None, "loopnb"):
        header["source"] = source  # a foreign run, converted, still says where it came from
    if kind == "jsonl":
        write_jsonl(path, header, lines)
    else:
        from loopnb.record._parquet import write_parquet

        write_parquet(path, header, objects, lines)
    return path


def read_jsonl_recording(path: Path) -> Recording:
    """The recording in loopnb's own JSON Lines file ``path``: ``RecordingError`` naming the path
    (and line) when it is missing, empty, of an unknown format version or damaged; a torn last
    line is tolerated with a ``RecordingWarning``. A value no frame column can hold is an error
    naming its line when the frame is first built."""
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
