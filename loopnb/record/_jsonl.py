"""The JSON Lines recording format: one header line, then one event per line, append-only.

Line 1 is the header, a JSON object::

    {"format": "loopnb.recording", "version": 2, "loopnb_version": "0.1.0",
     "created_at": "2026-01-01T00:00:00+00:00", "redacted": true}

Every later line is one event as ``lines.dump_event`` writes it (redacted): each fact once, about
500 bytes a turn. Version-1 files (each turn's facts written twice) still load: ``migrate``
brings their lines to version 2; appending to one is refused, since a file holds one version. Nothing is
ever rewritten; a writer killed mid-line leaves at most a torn last line, which the reader skips
with a ``RecordingWarning``. Lines are parsed as JSON and validated as events: nothing in a file
is ever executed. One line's serialising, parsing and redacting are in ``lines``; replacing a
whole file atomically, and locking one, in ``files``.
"""

from __future__ import annotations

import gc
import json
import os
import warnings
import zlib
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import ValidationError

from loopnb.engine._events import EVENT_ADAPTER, Event
from loopnb.record._errors import RecordingError, RecordingWarning
from loopnb.record._files import claim_stream, locked, replacing
from loopnb.record._lines import describe as _describe
from loopnb.record._lines import (
    dump_events,
    parse_event,
    redact_line,
)
from loopnb.record._migrate import from_v1
from loopnb.record._redact import Redact
from loopnb.record._seqs import check_order

FORMAT = "loopnb.recording"
VERSION = 2
SUPPORTED_VERSIONS = (1, 2)


def _loopnb_version() -> str:
    try:
        from importlib.metadata import version

        return version("loopnb")
    except Exception:
        return "0.1.0"


def make_header(*, redacted: bool, **extra: Any) -> dict[str, Any]:
    """The header of a new recording."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "loopnb_version": _loopnb_version(),
        "created_at": datetime.now(UTC).isoformat(),
        "redacted": redacted,
        **extra,
    }


class TooDeep(ValueError):
    """JSON nested too deeply for the parser (a ``ValueError``, where ``json`` raises a
    ``RecursionError`` that no reader of a damaged file expects)."""


def loads(raw: bytes | str) -> Any:
    """``json.loads``; JSON nested too deeply to be parsed is a ``TooDeep`` error."""
    try:
        return json.loads(raw)
    except RecursionError:
        raise TooDeep("JSON nested too deeply to be read") from None


def _shown(raw: bytes) -> str:
    """The start of a line as an error quotes it: text as text, anything else only named."""
    try:
        text = raw[:200].decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < 150:  # not merely a character cut in two at the end of the slice
            return "binary data (not UTF-8 text)"
        text = raw[: exc.start].decode("utf-8")
    if any(ch < " " and ch not in "\t\r\n" for ch in text[:60]):
        return "binary data (control characters)"
    return repr(text[:60]) + ("..." if len(raw) > 60 else "")


def check_header(raw: bytes, path: Path) -> dict[str, Any]:
    """The parsed header line, or a ``RecordingError`` saying what is wrong with it."""
    try:
        header = loads(raw)
    except TooDeep as exc:
        raise RecordingError(f"not a loopnb recording: its header line is {exc}", path=path, line=1) from None
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise RecordingError(
            f'not a loopnb recording: line 1 must be a header {{"format": "{FORMAT}", ...}}, '
            f"found {_shown(raw)}",
            path=path,
            line=1,
        )
    version = header.get("version")
    if type(version) is not int or version not in SUPPORTED_VERSIONS:
        raise RecordingError(
            f"format version {version!r} is not supported: this loopnb "
            f"({_loopnb_version()}) reads version {', '.join(map(str, SUPPORTED_VERSIONS))}",
            path=path,
            line=1,
        )
    return header


def parse_events(lines: Sequence[bytes] | Sequence[str], version: int = VERSION) -> list[Event]:
    """Events from their JSON lines, validated: the first line that is not one whole event
    raises its ``ValidationError`` (or ``ValueError``)."""
    if version == 1:
        return [EVENT_ADAPTER.validate_python(e) for e in from_v1(loads(raw) for raw in lines)]
    return parse_lines(lines, lambda raw, index: parse_event(raw))


_SETTLE_AFTER = 100_000


def parse_lines(lines: Sequence[bytes] | Sequence[str], one: Callable[[Any, int], Event]) -> list[Event]:
    """Events from JSON lines, each validated by the one adapter of events; when a line is not one
    whole event, the lines are parsed again with ``one(line, index)``, which raises the error for
    the first bad line.

    The cyclic garbage collector is paused meanwhile: events hold no cycles, and while a long
    list of them is built, each full collection would walk the whole growing heap again (loading
    took twice as long at 100,000 turns). After a large batch, one full collection settles the new
    objects at once, instead of the young generations each walking all of them later.
    """
    validate = EVENT_ADAPTER.validate_json
    enabled = gc.isenabled()
    gc.disable()
    try:
        try:
            events = list(map(validate, lines))
        except Exception:  # the line-by-line pass says what is wrong, and where
            events = [one(line, index) for index, line in enumerate(lines)]
    finally:
        if enabled:
            gc.enable()
    if enabled and len(events) >= _SETTLE_AFTER:
        gc.collect()
    return events


def _v1_events(lines: Sequence[bytes], path: Path, first_line: int) -> list[Event]:
    """The events of version-1 lines (``lines[0]`` is line ``first_line`` of the file)."""
    raw = []
    for index, line in enumerate(lines, first_line):
        if not line.strip():
            raise RecordingError("empty line inside the recording", path=path, line=index)
        try:
            item = loads(line)
        except ValueError as exc:
            raise RecordingError(f"not valid JSON: {exc}", path=path, line=index) from exc
        except RecursionError as exc:
            raise RecordingError("JSON nested past any event's depth", path=path, line=index) from exc
        if not isinstance(item, dict):
            raise RecordingError(
                f"not a valid event: a {type(item).__name__}, not an object", path=path, line=index
            )
        raw.append(item)
    events = []
    for index, item in enumerate(from_v1(raw), first_line):
        try:
            events.append(EVENT_ADAPTER.validate_python(item))
        except ValidationError as exc:
            raise RecordingError(f"not a valid event: {_describe(exc)}", path=path, line=index) from exc
    return events


def _is_event(raw: bytes) -> bool:
    try:
        parse_event(raw)
    except (ValueError, TypeError):
        return False
    return True


def _parse_line(raw: bytes, path: Path, line: int) -> Event:
    try:
        return parse_event(raw)
    except ValueError as exc:
        if not isinstance(exc, ValidationError):
            raise RecordingError(f"not valid JSON: {exc}", path=path, line=line) from exc
        raise _invalid(exc, path, line) from exc
    except TypeError as exc:
        raise RecordingError(f"not a valid event: {exc}", path=path, line=line) from exc


def _invalid(exc: ValidationError, path: Path, line: int) -> RecordingError:
    if exc.errors()[0]["type"] == "json_invalid":
        return RecordingError(f"not valid JSON: {_describe(exc)}", path=path, line=line)
    return RecordingError(f"not a valid event: {_describe(exc)}", path=path, line=line)


def read_jsonl(path: str | Path) -> tuple[dict[str, Any], list[Event]]:
    """The header and events of a JSON Lines recording.

    A torn last line (no newline, not a whole event) is left out with a ``RecordingWarning``
    naming the path and line; any other damage raises ``RecordingError``.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise RecordingError("no such file", path=path) from exc
    except OSError as exc:
        raise RecordingError(f"cannot read: {exc}", path=path) from exc
    if not data.strip():
        raise RecordingError("empty file: a recording starts with a header line", path=path)
    lines = data.split(b"\n")
    torn = lines.pop()  # b"" when the file ends with a newline
    if not torn.strip():  # blank lines at the very end (an editor's, or ``echo >>``) hold nothing
        torn = b""
        while len(lines) > 1 and not lines[-1].strip():
            lines.pop()
    header = check_header(lines[0] if lines else torn, path)
    body = lines[1:] if lines else []
    version = header["version"]
    events = _parse_body(body, path) if version != 1 else _v1_events(body, path, 2)
    if torn and lines:
        last = len(lines) + 1
        try:
            events += parse_events([torn], version)
        except (ValueError, TypeError):
            warnings.warn(
                f"{path}, line {last}: torn last line left out (the writer stopped mid-line; "
                f"{len(torn)} bytes)",
                RecordingWarning,
                stacklevel=5,  # the caller of load(): load, JsonLines.read, read_jsonl_recording, here
            )
    check_order(events, path)
    return header, events


def _parse_body(body: list[bytes], path: Path) -> list[Event]:
    """The events of the lines after the header (``body[0]`` is line 2 of the file)."""

    def one(raw: bytes, index: int) -> Event:
        if not raw.strip():
            raise RecordingError("empty line inside the recording", path=path, line=index + 2)
        return _parse_line(raw, path, index + 2)

    return parse_lines(body, one)


def _without_blank_tail(data: bytes, end: int) -> int:
    """Where ``data[:end]`` (which ends with a newline) ends without its blank last lines."""
    while True:
        start = data.rfind(b"\n", 0, end - 1) + 1
        if start == 0 or data[start:end].strip():
            return end
        end = start


class JsonlWriter:
    """Appends batches of events to a recording file, each handed to the OS as it is written.

    A new (or empty) file gets a header. An existing one must be a recording of a supported
    version; a torn last line left by a killed writer is cut off (with a warning) before
    appending, so the file stays readable.

    ``write`` takes a batch of events (the recorder gives it a turn's): it serialises them,
    redacts them in one pass and hands them to the OS in one ``write`` call on an unbuffered file
    (and to the disk, with ``fsync=True``), so that a killed process leaves every batch written
    readable.
    """

    def __init__(self, path: str | Path, *, redact: Redact | None, fsync: bool = False) -> None:
        self.path = Path(path)
        self.redact = redact
        self.fsync = fsync
        self.crc = 0
        self._file: BinaryIO = self._open()

    def _open(self) -> BinaryIO:
        try:
            return self._open_file()
        except OSError as exc:
            raise RecordingError(f"cannot append to it: {exc.strerror or exc}", path=self.path) from exc

    def _open_file(self) -> BinaryIO:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        file = _open_append(self.path)
        try:
            self._file = file
            claim_stream(self)
            # Locked, so that of two writers opening one file at once only one writes the header,
            # and none mends a tail the other is writing.
            with locked(self.path):
                if os.fstat(file.fileno()).st_size == 0:
                    header = make_header(redacted=self.redact is not None)
                    self._put(file, json.dumps(header).encode() + b"\n")
                else:
                    self._mend_tail(self.path.read_bytes())
        except BaseException:
            file.close()
            raise
        return file

    def _mend_tail(self, data: bytes) -> None:
        """Check the header; end a last line missing only its newline, cut off a torn one, and
        drop blank lines at the end (appended to, they would sit inside the recording)."""
        path = self.path
        first, newline, _ = data.partition(b"\n")
        if check_header(first, path)["version"] != VERSION:
            raise RecordingError(
                f"cannot append to a version-{json.loads(first)['version']} recording: a file holds one "
                f"format version; load it and save a copy (written in version {VERSION}) to append to",
                path=path,
            )
        cut = data.rfind(b"\n") + 1
        tail = data[cut:]
        if not newline or (tail.strip() and _is_event(tail)):  # whole, as the reader keeps it
            with path.open("ab") as f:
                f.write(b"\n")
            return
        if tail.strip():
            last = data.count(b"\n") + 1
            warnings.warn(
                f"{path}, line {last}: torn last line cut off before appending",
                RecordingWarning,
                stacklevel=6,
            )
        end = _without_blank_tail(data, cut)
        if end < len(data):
            with path.open("r+b") as f:
                f.truncate(end)

    def _put(self, file: BinaryIO, data: bytes) -> None:
        fd = file.fileno()
        written = os.write(fd, data)
        while written < len(data):  # a regular file takes it all but for a signal or a full disk
            taken = os.write(fd, memoryview(data)[written:])
            if not taken:
                raise RecordingError("the file took none of the bytes written to it", path=self.path)
            written += taken
        if self.fsync:
            os.fsync(fd)

    def write(self, events: Sequence[Event]) -> tuple[int, int]:
        """Append ``events``, one line each, in one pass of the redactor and one ``write`` call.

        Returns where the lines went, ``(start, end)`` in bytes, and adds them to ``crc`` (the
        CRC-32 of every line this writer wrote), so that they can be read back unchanged.
        """
        if not events:
            return (0, 0)
        chunk = b"\n".join(dump_events(events))
        if self.redact is not None:
            text = chunk.decode()
            redacted = redact_line(text, self.redact)
            if redacted != text:
                chunk = redacted.encode()
        chunk += b"\n"
        self._put(self._file, chunk)
        end = os.lseek(self._file.fileno(), 0, os.SEEK_CUR)  # appended: the file's end, as written
        self.crc = zlib.crc32(chunk, self.crc)
        return (end - len(chunk), end)

    def fileno(self) -> int:
        return self._file.fileno()

    def close(self) -> None:
        self._file.close()

    @property
    def closed(self) -> bool:
        return self._file.closed


def _open_append(path: Path) -> BinaryIO:
    return path.open("ab", buffering=0)


def write_jsonl(path: str | Path, header: dict[str, Any], lines: Iterable[str]) -> None:
    """Write a whole recording at once, atomically (a temporary file renamed into place)."""
    with replacing(Path(path)) as tmp, tmp.open("wb") as f:
        f.write(json.dumps(header).encode() + b"\n")
        for line in lines:
            f.write(line.encode() + b"\n")
        f.flush()
        os.fsync(f.fileno())
