"""A streaming recorder's written events: where they are in its file, and reading them back.

A streaming recorder keeps of the events it wrote only what its frames read (``_store``); its
``event_objects`` and ``save`` read the events themselves back from the file, as written there.
``Written`` notes where each write went and the CRC-32 of all the bytes, so that a file changed or
replaced since is a ``RecordingError`` naming it, never other events taken for these.
"""

from __future__ import annotations

import zlib
from array import array
from collections.abc import Sequence
from pathlib import Path

from loopnb.engine._events import Event
from loopnb.record._errors import RecordingError
from loopnb.record._lines import parse_event


def read_span(path: Path, places: Sequence[int]) -> bytes:
    """The bytes of ``path`` at ``places`` (``start, end, start, end, ...``), one piece after the other."""
    pieces = []
    with path.open("rb") as f:
        for start, end in zip(places[::2], places[1::2], strict=True):
            f.seek(start)
            pieces.append(f.read(end - start))
    return b"".join(pieces)


class Written:
    """Where a streaming recorder's written events are in its file: how many, the places of their
    bytes (``[start, end, ...]``) and the CRC-32 of those bytes, to read them back unchanged."""

    __slots__ = ("crc", "events", "path", "places")

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.events = 0
        self.places = array("q")
        self.crc = 0

    def add(self, events: int, places: tuple[int, int], crc: int) -> None:
        """Note a write of ``events`` events at ``places``; ``crc`` is the writer's CRC-32 since."""
        self.events += events
        self.places.extend(places)
        self.crc = crc

    def copy(self) -> Written:
        other = Written(self.path)
        other.events, other.places, other.crc = self.events, self.places[:], self.crc
        return other

    def read(self) -> tuple[list[Event], list[str]]:
        """The written events and their lines; a ``RecordingError`` if the file no longer holds
        them as they were written."""
        if not self.events or self.path is None:
            return [], []
        try:
            data = read_span(self.path, self.places)
        except OSError as exc:
            raise RecordingError(
                f"cannot read back the events this recorder wrote: {exc}", path=self.path
            ) from exc
        lines = data.decode(errors="replace").split("\n")[:-1]
        if zlib.crc32(data) != self.crc or len(lines) != self.events:
            raise RecordingError(
                "the file no longer holds the events this recorder wrote to it (it was changed or "
                "replaced since): they cannot be read back",
                path=self.path,
            )
        try:
            return [parse_event(line) for line in lines], lines
        except ValueError as exc:  # pragma: no cover - the CRC matched what this recorder wrote
            raise RecordingError(
                f"cannot read back an event this recorder wrote: {exc}", path=self.path
            ) from exc
