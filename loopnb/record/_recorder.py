"""The ``Recorder``: the engine observer that keeps a run as data, the only writer of rows.

The hot path reads the event's fields into the recorder's store (``_store``: values the cyclic
garbage collector never walks) and, with a path, writes a turn's lines when it ends; rows and
frames are made on demand, each event read once (``_walk``), and cached until the next event::

    recorder = Recorder("runs/today.jsonl")
    engine = Engine(model, tools=[...], observers=[recorder])
    engine.run(task)
    recorder.turns        # one row per turn, tagged ok / soft / hard
    recorder.save("runs/today.parquet")
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopnb.engine import LoopnbWarning
from loopnb.engine._events import Event
from loopnb.record._errors import RecordingError, RecordingWarning
from loopnb.record._jsonl import JsonlWriter, make_header, write_jsonl
from loopnb.record._redact import DEFAULT_REDACTOR, Redact
from loopnb.record._rows import when
from loopnb.record._schema import TURN_COLUMNS
from loopnb.record._store import COMMON, PACK, add, events_at, keep, streamed
from loopnb.record._walk import WIDTH_OF_ROW, Walk
from loopnb.record._written import Written

if TYPE_CHECKING:
    import pandas as pd

    from loopnb.record._recording import Recording

Listener = Callable[[Event, "dict[str, Any] | None"], None]
"""Called after the recorder processed an event: ``listener(event, row)``; ``row`` is the turn
row for a ``TurnFinished`` (a fresh dict), else ``None``."""

_FLUSH_KINDS = frozenset({"turn_finished", "run_finished"})


class Recorder:
    """Records every event it observes; ``turns`` and ``events`` are its DataFrames.

    With ``path``, every event is also appended to that JSON Lines file (created with a header,
    or appended to when it is already a recording): a turn's events are written when the turn
    ends (and a run's last ones when it ends), in one ``write`` call that hands them to the OS
    (and fsynced with ``fsync=True``), so a killed process leaves every completed turn readable.
    ``redact`` is applied to everything written to disk or exported (``None`` turns it off); the
    in-memory frames keep exactly what the model read. One recorder may observe many runs;
    ``run_id`` tells them apart.

    What it keeps is its events' values, which the cyclic garbage collector does not walk
    (``_store``); a streaming recorder keeps of the events it wrote only what the frames read, and
    reads them back from its file (as written there, redacted) for ``event_objects`` and ``save``.
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        redact: Redact | None = DEFAULT_REDACTOR,
        fsync: bool = False,
    ) -> None:
        self.path = None if path is None else Path(path)
        if self.path is not None and self.path.suffix.lower() == ".parquet":
            raise ValueError(
                f"a recorder streams JSON Lines, not Parquet: give it a .jsonl path instead of "
                f"{self.path.name!r}, and save(...) a .parquet copy when the run is over"
            )
        self.redact = redact
        self._store: list[Any] = []
        self._walk = Walk()
        self._listeners: list[Listener] = []
        self._lock = threading.Lock()
        self._frames: dict[str, tuple[int, pd.DataFrame]] = {}
        self._writer = None if self.path is None else JsonlWriter(self.path, redact=redact, fsync=fsync)
        self._pending: list[Event] = []  # the events not yet in the file
        self._extend = self._store.extend
        self._plain = self._writer is None
        self._pending_at = 0  # the place in the store of the first of them
        self._written = Written(None if self.path is None else self.path.absolute())

    # -- the hot path -------------------------------------------------------------------------

    def __call__(self, event: Event) -> None:
        """Observe one event."""
        if self._plain:  # no file and no listener: all there is to do, in line
            try:
                self._extend(PACK[type(event)](event))
            except KeyError:
                keep(self._store, event)
            return
        if self._writer is None:
            add(self._store, event)
        else:
            self._stream(event)
        if self._listeners:
            self._notify(event)

    def _settle(self) -> None:
        """Note whether the hot path has only the store to fill (no file, no listener)."""
        self._plain = self._writer is None and not self._listeners

    def _stream(self, event: Event) -> None:
        if not self._pending:
            self._pending_at = len(self._store)
        add(self._store, event)
        self._pending.append(event)
        if event.kind in _FLUSH_KINDS:
            self._write()

    def _write(self) -> None:
        """Append the events not yet in the file (a turn's, when a turn or a run ends).

        A batch that cannot be written (a full disk, a redaction hook that fails) stops the
        streaming, with a ``RecordingWarning``: the file keeps every turn before it, whole, and
        recording goes on in memory, so nothing is lost (``save`` writes it all later).
        """
        with self._lock:
            batch, self._pending = self._pending, []
            writer = self._writer
            if writer is None or not batch:
                return
            try:
                places = writer.write(batch)
            except (RecordingError, OSError) as exc:
                self._writer = None
                self._settle()
                failure = exc
                with contextlib.suppress(OSError):
                    writer.close()
            else:  # written: keep only what the frames read of these events
                streamed(self._store, self._pending_at, len(batch))
                self._written.add(len(batch), places, writer.crc)
                return
        warnings.warn(  # outside the lock: a warning turned into an error must not hold it
            f"{self.path}: streaming stopped, this turn could not be written ({failure}); "
            "the file keeps every turn before it, and the run is still recorded in memory: "
            "recorder.save(path) writes all of it",
            RecordingWarning,
            stacklevel=4,
        )

    # -- listeners ----------------------------------------------------------------------------

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(event, row)`` after each event; returns the function that unsubscribes.

        A listener that raises is detached with a ``LoopnbWarning`` and never affects recording.
        """
        self._listeners.append(listener)
        self._settle()

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)
                self._settle()

        return unsubscribe

    def _notify(self, event: Event) -> None:
        row = None
        if event.kind == "turn_finished":
            with self._lock:
                rows = self._read().rows
                row = _row(rows[len(rows) - WIDTH_OF_ROW :], ())
        for listener in list(self._listeners):
            try:
                listener(event, None if row is None else dict(row))
            except Exception as exc:
                if listener in self._listeners:
                    self._listeners.remove(listener)
                    self._settle()
                warnings.warn(
                    f"recorder listener {listener!r} raised {type(exc).__name__}: {exc}; it was detached",
                    LoopnbWarning,
                    stacklevel=2,
                )

    # -- rows and frames ----------------------------------------------------------------------

    def _read(self) -> Walk:
        """The walk, with every event observed read into turns (call with the lock held)."""
        walk = self._walk
        walk.advance(self._store, len(self._store))
        return walk

    def _indexed(self) -> Walk:
        """The walk, knowing where every event observed begins (call with the lock held)."""
        walk = self._walk
        walk.index(self._store, len(self._store))
        return walk

    def _events_so_far(self) -> tuple[list[Event], list[str]]:
        """The events observed, and the lines in the file of the first ones (those written)."""
        with self._lock:
            starts = self._indexed().starts[:]
            streamed = self._written.copy()
        written, lines = streamed.read()
        return written + events_at(self._store, starts[len(written) :]), lines

    @property
    def event_objects(self) -> list[Event]:
        """The events observed so far, in order, each equal to the event observed; a streaming
        recorder's written events are read back from its file, as written there (redacted)."""
        return self._events_so_far()[0]

    def __len__(self) -> int:
        with self._lock:
            return self._indexed().events

    def turn_rows(self) -> list[dict[str, Any]]:
        """The turn rows so far (fresh dicts, as ``turn_rows`` of the events makes them)."""
        with self._lock:
            walk = self._read()
            rows, discarded = walk.rows[:], set(walk.discarded)
        return [_row(rows[k : k + WIDTH_OF_ROW], discarded) for k in range(0, len(rows), WIDTH_OF_ROW)]

    def _frame(self, name: str) -> pd.DataFrame:
        from loopnb.record._frames import collector_paused
        from loopnb.record._store_frames import rows_frame, store_events_frame

        with collector_paused():
            with self._lock:  # what the frame is made of, copied as it is now
                walk = self._read() if name == "turns" else self._indexed()
                n = walk.pos
                cached = self._frames.get(name)
                if cached is None or cached[0] != n:
                    made = (walk.rows[:], set(walk.discarded)) if name == "turns" else walk.starts[:]
            if cached is None or cached[0] != n:
                df = rows_frame(*made) if isinstance(made, tuple) else store_events_frame(self._store, made)
                self._frames[name] = cached = (n, df)
        return cached[1].copy(deep=False)

    @property
    def turns(self) -> pd.DataFrame:
        """One row per turn (columns of ``TURNS``), built on demand and cached."""
        return self._frame("turns")

    @property
    def events(self) -> pd.DataFrame:
        """One row per event (columns of ``EVENTS``), built on demand and cached."""
        return self._frame("events")

    @property
    def run_ids(self) -> list[str]:
        """The runs observed, in the order they started."""
        with self._lock:
            starts = self._indexed().starts.tolist()
        return list(dict.fromkeys([self._store[i + _RUN_ID] for i in starts]))

    # -- files and exports --------------------------------------------------------------------

    def exported_events(self) -> tuple[list[Event], list[str]]:
        """The events as they may leave the process: redacted objects and their JSON lines.

        The lines written to the recorder's file are taken as they are there; one redaction pass
        covers the others: an event the redactor left alone is the very same object, a changed one
        is revalidated from its redacted JSON.
        """
        from loopnb.record._recording import exported

        events, lines = self._events_so_far()
        objects, more = exported(events[len(lines) :], self.redact)
        return events[: len(lines)] + objects, lines + more

    def recording(self) -> Recording:
        """The events so far as a ``Recording``, redacted like a file would be."""
        from loopnb.record._recording import Recording

        objects, _ = self.exported_events()
        return Recording.from_events(objects, meta=make_header(redacted=self.redact is not None))

    def save(self, path: str | Path) -> Path:
        """Write everything observed so far; the suffix picks the format.

        ``.jsonl``: the streaming format. ``.parquet``: one Parquet file holding the turns and
        the events (needs pyarrow, the ``parquet`` extra). Redacted either way. Returns the path.
        """
        path = Path(path)
        self._refuse_own_stream(path)
        header = make_header(redacted=self.redact is not None)
        suffix = path.suffix.lower()
        if suffix == ".jsonl":
            _, lines = self.exported_events()
            write_jsonl(path, header, lines)
        elif suffix == ".parquet":
            from loopnb.record._parquet import write_parquet

            objects, lines = self.exported_events()
            write_parquet(path, header, objects, lines)
        else:
            raise ValueError(f"cannot save a recording as {path.name!r}: use a .jsonl or .parquet suffix")
        return path

    def _refuse_own_stream(self, path: Path) -> None:
        """Replacing the file this recorder streams to would lose what it writes next (into the
        replaced file) and whatever other runs the file held before."""
        if self.path is None or self._writer is None:
            return
        try:
            same = path.exists() and path.samefile(self.path)
        except OSError:
            same = False
        if same:
            raise ValueError(
                f"{path} is the file this recorder streams to; it already holds every "
                "finished turn (save a copy under another name)"
            )

    def close(self) -> None:
        """Flush and close the streaming file (further events are kept in memory only)."""
        if self._writer is not None:
            self._write()
            with self._lock:
                if self._writer is not None:  # not already closed by a failed write
                    self._writer.close()
                    self._writer = None
                    self._settle()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        where = f", path={str(self.path)!r}" if self.path else ""
        with self._lock:
            walk = self._read()
            return f"Recorder({walk.events} events, {walk.turns} turns{where})"


_RUN_ID = 1 + COMMON.index("run_id")
_STARTED_AT = TURN_COLUMNS.index("started_at")


def _row(values: list[Any], discarded: set[Any] | tuple[()]) -> dict[str, Any]:
    """A turn row (as ``turn_row`` makes it) of the walk's values; marked dropped when its run's
    scratchpad was discarded."""
    row = dict(zip(TURN_COLUMNS, values, strict=True))
    row["started_at"] = when(values[_STARTED_AT])
    if discarded and values[0] in discarded:
        row["dropped"] = True
    return row
