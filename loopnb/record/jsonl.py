"""The JSON Lines recording format: one header line, then one event per line, append-only.

Line 1 is the header, a JSON object::

    {"format": "loopnb.recording", "version": 1, "loopnb_version": "0.1.0",
     "created_at": "2026-01-01T00:00:00+00:00", "redacted": true}

Every later line is one event exactly as ``EVENT_ADAPTER`` serialises it (redacted). Nothing is
ever rewritten; a writer killed mid-line leaves at most a torn last line, which the reader skips
with a ``RecordingWarning``. Lines are parsed as JSON and validated as events: nothing in a file
is ever executed.
"""

from __future__ import annotations

import gc
import json
import os
import secrets
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, get_args

from pydantic import TypeAdapter, ValidationError

from loopnb.engine.events import EVENT_ADAPTER, Event
from loopnb.record.errors import RecordingError, RecordingWarning
from loopnb.record.redact import Redact

__all__ = [
    "FORMAT",
    "VERSION",
    "JsonlWriter",
    "dump_event",
    "dump_event_bytes",
    "dump_events",
    "make_header",
    "parse_event",
    "parse_events",
    "read_jsonl",
    "redacted_lines",
]

FORMAT = "loopnb.recording"
VERSION = 1
SUPPORTED_VERSIONS = (1,)

_EVENTS_ADAPTER: TypeAdapter[list[Event]] = TypeAdapter(list[Event])


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


def _serializers() -> dict[type, Any]:
    # One serializer per event class: the same JSON as EVENT_ADAPTER's, about twice as fast
    # as going through the discriminated union (measured in benchmarks/bench_record.py).
    union = get_args(get_args(Event)[0])
    return {cls: TypeAdapter(cls).serializer for cls in union}


_SERIALIZERS = _serializers()


def dump_event_bytes(event: Event) -> bytes:
    """One event as one line of UTF-8 JSON (no newline), exactly as ``EVENT_ADAPTER`` dumps it."""
    serializer = _SERIALIZERS.get(type(event))
    if serializer is None:
        return EVENT_ADAPTER.dump_json(event)
    return serializer.to_json(event)  # type: ignore[no-any-return]


def dump_event(event: Event) -> str:
    """One event as one line of JSON text (no newline), exactly as ``EVENT_ADAPTER`` dumps it."""
    return dump_event_bytes(event).decode()


def dump_events(events: Sequence[Event]) -> list[bytes]:
    """The lines of ``events``, as ``dump_event_bytes`` makes them (one lookup per event, no call)."""
    serializers = _SERIALIZERS
    try:
        return [serializers[type(e)].to_json(e) for e in events]
    except KeyError:
        return [dump_event_bytes(e) for e in events]


def redact_line(line: str, redact: Redact | None) -> str:
    """``line`` (one or more JSON lines) after ``redact``; every line it changed must still be one
    valid event, and the lines as many. A hook that raises or breaks a line is a ``RecordingError``
    saying so, raised before anything is written."""
    if redact is None:
        return line
    try:
        out = redact(line)
    except Exception as exc:
        raise RecordingError(f"the redaction hook {redact!r} raised {type(exc).__name__}: {exc}") from exc
    if type(out) is not str:
        raise RecordingError(
            f"the redaction hook {redact!r} returned {type(out).__name__}, not str: it must return "
            "the text it was given, redacted"
        )
    if out != line:
        _check_redacted(line.split("\n"), out.split("\n"))
    return out


def _check_redacted(before: list[str], after: list[str]) -> None:
    """Every line the redaction hook changed must still be one valid event (else the file would
    not load), and it must keep one line per event."""
    if len(after) != len(before):
        raise RecordingError(
            f"the redaction hook turned {len(before)} line(s) into {len(after)}: a replacement must not "
            "contain a newline, nor remove one"
        )
    for old, new in zip(before, after, strict=True):
        if new == old:
            continue
        try:
            parse_event(new)
        except (ValueError, TypeError) as exc:
            what = _describe(exc) if isinstance(exc, ValidationError) else str(exc)
            where = _where(old)
            raise RecordingError(
                f"the redaction hook turned {where} into invalid JSON or an invalid event ({what}); "
                "a replacement must not contain quotes, backslashes or newlines, nor change an "
                "event's fields"
            ) from exc


def _where(line: str) -> str:
    """Which event ``line`` is, for an error message: its kind and seq."""
    try:
        raw = json.loads(line)
        return f"event {raw['seq']} ({raw['kind']})"
    except Exception:
        return "an event"


def redacted_lines(events: Iterable[Event], redact: Redact | None) -> list[str]:
    """The file lines of ``events``: serialised, then redacted."""
    return [redact_line(dump_event(e), redact) for e in events]


def check_header(raw: bytes, path: Path) -> dict[str, Any]:
    """The parsed header line, or a ``RecordingError`` saying what is wrong with it."""
    try:
        header = json.loads(raw)
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise RecordingError(
            f'not a loopnb recording: line 1 must be a header {{"format": "{FORMAT}", ...}}, '
            f"found {raw[:60]!r}",
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


def _describe(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{first['msg']} at {where or 'top level'}{more}"


def parse_event(raw: bytes | str) -> Event:
    """One event from its JSON text (validated; a ``ValidationError`` or ``ValueError`` if not)."""
    return EVENT_ADAPTER.validate_json(raw)


def parse_events(lines: Sequence[bytes] | Sequence[str]) -> list[Event]:
    """Events from their JSON lines, validated: the first line that is not one whole event
    raises its ``ValidationError`` (or ``ValueError``)."""
    return _parse_lines(lines, lambda raw, index: parse_event(raw))


_CHUNK = 10_000
"""Lines per call into pydantic-core. One call for a whole large file builds the JSON of every
line before the first event, and took half as long again (4.7 s against 3.1 s for 450,000)."""

_SETTLE_AFTER = 100_000


def _parse_lines(lines: Sequence[bytes] | Sequence[str], one: Callable[[Any, int], Event]) -> list[Event]:
    """Events from JSON lines, ``_CHUNK`` lines per call into pydantic-core; a chunk that is not
    one whole event per line is parsed again line by line with ``one(line, index)``, which
    raises the error for the first bad line.

    The cyclic garbage collector is paused meanwhile: events hold no cycles, and while a long
    list of them is built, each full collection would walk the whole growing heap again (loading
    took twice as long at 100,000 turns). After a large batch, one full collection settles the new
    objects at once, instead of the young generations each walking all of them later.
    """
    events: list[Event] = []
    enabled = gc.isenabled()
    gc.disable()
    try:
        for start in range(0, len(lines), _CHUNK):
            chunk = lines[start : start + _CHUNK]
            parsed = _whole_chunk(chunk)
            if parsed is None:
                parsed = [one(line, index) for index, line in enumerate(chunk, start)]
            events += parsed
    finally:
        if enabled:
            gc.enable()
    if enabled and len(events) >= _SETTLE_AFTER:
        gc.collect()
    return events


def _whole_chunk(lines: Sequence[bytes] | Sequence[str]) -> list[Event] | None:
    """The events of ``lines`` (at least one) in one call, or ``None`` unless every line is one
    valid event."""
    body = b"[" + b",".join(lines) + b"]" if isinstance(lines[0], bytes) else "[" + ",".join(lines) + "]"  # type: ignore[arg-type]
    try:
        events = _EVENTS_ADAPTER.validate_json(body)
    except Exception:  # the line-by-line pass says what is wrong, and where
        return None
    return events if len(events) == len(lines) else None


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
    events = _parse_body(body, path)
    if torn and lines:
        last = len(lines) + 1
        try:
            events.append(parse_event(torn))
        except (ValueError, TypeError):
            warnings.warn(
                f"{path}, line {last}: torn last line left out (the writer stopped mid-line; "
                f"{len(torn)} bytes)",
                RecordingWarning,
                stacklevel=3,
            )
    return header, events


def _parse_body(body: list[bytes], path: Path) -> list[Event]:
    """The events of the lines after the header (``body[0]`` is line 2 of the file)."""

    def one(raw: bytes, index: int) -> Event:
        if not raw.strip():
            raise RecordingError("empty line inside the recording", path=path, line=index + 2)
        return _parse_line(raw, path, index + 2)

    return _parse_lines(body, one)


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
            # Locked, so that of two writers opening one file at once only one writes the header,
            # and none mends a tail the other is writing.
            with _locked(file):
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
        check_header(first, path)
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

    def write(self, events: Sequence[Event]) -> None:
        """Append ``events``, one line each, in one pass of the redactor and one ``write`` call."""
        if not events:
            return
        chunk = b"\n".join(dump_events(events))
        if self.redact is not None:
            text = chunk.decode()
            redacted = redact_line(text, self.redact)
            if redacted != text:
                chunk = redacted.encode()
        self._put(self._file, chunk + b"\n")

    def close(self) -> None:
        self._file.close()

    @property
    def closed(self) -> bool:
        return self._file.closed


@contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """A fresh temporary file beside ``path``, renamed onto it when the block ends without error
    and removed otherwise: ``path`` ends up either untouched or whole. A failure to write is a
    ``RecordingError`` naming ``path``."""
    if path.is_dir():
        raise RecordingError("cannot save a recording there: it is a folder", path=path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = _fresh_file(path)
    except OSError as exc:
        raise RecordingError(f"cannot write: {exc.strerror or exc}", path=path) from exc
    try:
        yield tmp
        os.replace(tmp, path)
    except OSError as exc:
        raise RecordingError(f"cannot write: {exc.strerror or exc}", path=path) from exc
    finally:
        tmp.unlink(missing_ok=True)


def _fresh_file(path: Path) -> Path:
    """Create a new, empty file of a name no one else uses, beside ``path``. Made with the
    permissions any new file gets (the umask's), not ``mkstemp``'s owner-only ones: the saved
    recording keeps them."""
    while True:
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            continue
        return tmp


def _open_append(path: Path) -> BinaryIO:
    return path.open("ab", buffering=0)


@contextmanager
def _locked(file: BinaryIO) -> Iterator[None]:
    """An exclusive advisory lock on ``file`` while the block runs (where the OS has ``flock``)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no lock
        yield
        return
    fcntl.flock(file.fileno(), fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(file.fileno(), fcntl.LOCK_UN)


def write_jsonl(path: str | Path, header: dict[str, Any], lines: Iterable[str]) -> None:
    """Write a whole recording at once, atomically (a temporary file renamed into place)."""
    with replacing(Path(path)) as tmp, tmp.open("wb") as f:
        f.write(json.dumps(header).encode() + b"\n")
        for line in lines:
            f.write(line.encode() + b"\n")
        f.flush()
        os.fsync(f.fileno())
