"""One event as one line of JSON: serialised, parsed back, and redacted before it is written.

Every line is what ``EVENT_ADAPTER`` (the one adapter of events) makes of an event, with its
``kind`` first and the fields left at their defaults left out (they read back as the defaults);
a line is parsed as JSON and validated by the same adapter, never executed. The files these
lines go into are in ``jsonl``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from pydantic import ValidationError

from loopnb.engine._events import EVENT_ADAPTER, Event
from loopnb.record._errors import RecordingError
from loopnb.record._redact import Redact

_dump = EVENT_ADAPTER.dump_json


def dump_event_bytes(event: Event) -> bytes:
    """One event as one line of UTF-8 JSON (no newline): ``{"kind": ..., <the other fields>}``."""
    body = _dump(event, exclude_defaults=True)  # the kind is a default too: it goes first, always
    return b'{"kind":"' + event.kind.encode() + b'",' + body[1:]


def dump_event(event: Event) -> str:
    """One event as one line of JSON text (no newline), as ``dump_event_bytes`` makes it."""
    return dump_event_bytes(event).decode()


def dump_events(events: Sequence[Event]) -> list[bytes]:
    """The lines of ``events``, as ``dump_event_bytes`` makes them."""
    return [dump_event_bytes(e) for e in events]


def describe(exc: ValidationError) -> str:
    """A ``ValidationError`` in one line: its first error, where, and how many more."""
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{first['msg']} at {where or 'top level'}{more}"


def parse_event(raw: bytes | str) -> Event:
    """One event from its JSON text (validated; a ``ValidationError`` or ``ValueError`` if not)."""
    return EVENT_ADAPTER.validate_json(raw)


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
            what = describe(exc) if isinstance(exc, ValidationError) else str(exc)
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
