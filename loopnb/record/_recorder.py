"""The ``Recorder``: the engine observer that keeps a run as data, the only writer of rows.

The hot path only appends the event to a list (and, with a path, writes the turn's lines when
it ends); rows and frames are built on demand, linearly, and cached until the next event
arrives::

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
from loopnb.engine._events import Event, RunFinished, TurnFinished
from loopnb.engine._turns import Turn, TurnAssembler
from loopnb.record._errors import RecordingError, RecordingWarning
from loopnb.record._jsonl import (
    JsonlWriter,
    make_header,
    write_jsonl,
)
from loopnb.record._redact import DEFAULT_REDACTOR, Redact
from loopnb.record._rows import turn_row

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
        self._events: list[Event] = []
        self._listeners: list[Listener] = []
        self._lock = threading.Lock()
        self._assembler = TurnAssembler()
        self._turns: list[Turn] = []
        self._discarded: set[str] = set()
        self._turn_upto = 0
        self._frames: dict[str, tuple[int, pd.DataFrame]] = {}
        self._writer = None if self.path is None else JsonlWriter(self.path, redact=redact, fsync=fsync)
        self._written = 0  # the events before this one are in the file

    # -- the hot path -------------------------------------------------------------------------

    def __call__(self, event: Event) -> None:
        """Observe one event."""
        self._events.append(event)
        if self._writer is not None and event.kind in _FLUSH_KINDS:
            self._write()
        if self._listeners:
            self._notify(event)

    def _write(self) -> None:
        """Append the events not yet in the file (a turn's, when a turn or a run ends).

        A batch that cannot be written (a full disk, a redaction hook that fails) stops the
        streaming, with a ``RecordingWarning``: the file keeps every turn before it, whole, and
        recording goes on in memory, so nothing is lost (``save`` writes it all later).
        """
        with self._lock:
            start, self._written = self._written, len(self._events)
            writer = self._writer
            if writer is None or start >= self._written:
                return
            try:
                writer.write(self._events[start : self._written])
                return
            except (RecordingError, OSError) as exc:
                self._writer = None
                failure = exc
                with contextlib.suppress(OSError):
                    writer.close()
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

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def _notify(self, event: Event) -> None:
        row = None
        if event.kind == "turn_finished":
            turns, _ = self._sync_turns(len(self._events))
            row = turn_row(turns[-1])
        for listener in list(self._listeners):
            try:
                listener(event, None if row is None else dict(row))
            except Exception as exc:
                if listener in self._listeners:
                    self._listeners.remove(listener)
                warnings.warn(
                    f"recorder listener {listener!r} raised {type(exc).__name__}: {exc}; it was detached",
                    LoopnbWarning,
                    stacklevel=2,
                )

    # -- rows and frames ----------------------------------------------------------------------

    @property
    def event_objects(self) -> list[Event]:
        """The events observed so far, in order (a copy of the list)."""
        return list(self._events)

    def __len__(self) -> int:
        return len(self._events)

    def _sync_turns(self, n: int) -> tuple[list[Turn], set[str]]:
        """The turns finished among the first ``n`` events (kept, and extended as events come)
        and the runs whose scratchpad was discarded."""
        with self._lock:
            add, turns = self._assembler.add, self._turns
            for event in self._events[self._turn_upto : n]:
                turn = add(event)
                if turn is not None:
                    turns.append(turn)
                elif isinstance(event, RunFinished) and event.scratchpad_discarded:
                    self._discarded.add(event.run_id)
            self._turn_upto = max(self._turn_upto, n)
            return turns[:], set(self._discarded)

    def turn_rows(self) -> list[dict[str, Any]]:
        """The turn rows so far (fresh dicts, as ``turn_rows`` of the events makes them)."""
        turns, discarded = self._sync_turns(len(self._events))
        rows = [turn_row(t) for t in turns]
        for row in rows:
            if row["run_id"] in discarded:
                row["dropped"] = True
        return rows

    def _frame(self, name: str) -> pd.DataFrame:
        from loopnb.record._frames import collector_paused, event_table, turns_frame

        n = len(self._events)
        cached = self._frames.get(name)
        if cached is None or cached[0] != n:
            with collector_paused():
                df = turns_frame(*self._sync_turns(n)) if name == "turns" else event_table(self._events[:n])
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
        return list(dict.fromkeys(e.run_id for e in self._events))

    # -- files and exports --------------------------------------------------------------------

    def exported_events(self) -> tuple[list[Event], list[str]]:
        """The events as they may leave the process: redacted objects and their JSON lines.

        One redaction pass covers all the lines; an event the redactor left alone is the very
        same object, a changed one is revalidated from its redacted JSON.
        """
        from loopnb.record._recording import exported

        return exported(list(self._events), self.redact)

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
                self._writer.close()
                self._writer = None

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        where = f", path={str(self.path)!r}" if self.path else ""
        turns = sum(1 for e in self._events if isinstance(e, TurnFinished))
        return f"Recorder({len(self._events)} events, {turns} turns{where})"
