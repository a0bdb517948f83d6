"""One event as one line of JSON: serialised, parsed back, and redacted before it is written.

Every line is what ``EVENT_ADAPTER`` (the one adapter of events) makes of an event, with its
``kind`` first and the fields left at their defaults left out (they read back as the defaults);
a line is parsed as JSON and validated by the same adapter, never executed. The files these
lines go into are in ``jsonl``.

What UTF-8 cannot hold, or the reader cannot read back, is written by these rules:

- a lone surrogate (what ``os.listdir`` or ``surrogateescape`` make of a byte that is not UTF-8)
  is written as its JSON escape, ``\\udcXX``, and reads back as the same code point: the event
  read is equal to the event written. The frames, whose text is UTF-8 (Arrow), show each one as
  that escape, six characters (``escaped_text``). The one exception: a high surrogate directly
  followed by a low one (which ``surrogateescape`` never makes) may be written as the one character
  the pair encodes in UTF-16, as pydantic's writer does;
- an int of more than ``MAX_INT_DIGITS`` (4,000) decimal digits, which Python (from 4,300) and older
  reader converts from its digits, is written as the string ``"<int 0x...>"``: its exact value in
  hexadecimal, read back as that string;
- a value that is not JSON at all (in a tool call's arguments, say) is written as the string
  ``"<not JSON: repr>"`` (``<unprintable X>`` when its repr raises), read back as that string;
- a tool call's arguments that are neither a str nor a dict with str keys (a model that built
  its reply without validation; the dispatcher answered them as invalid arguments) are written
  as the str of their repr.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import ValidationError
from pydantic_core import PydanticSerializationError

from loopnb.engine import ToolCall
from loopnb.engine._errors import shown
from loopnb.engine._events import EVENT_ADAPTER, Event, ModelReplied, RecoveryDecided, TurnFinished
from loopnb.record._errors import RecordingError
from loopnb.record._redact import Redact

_dump = EVENT_ADAPTER.dump_json

MAX_INT_DIGITS = 4000
"""The longest int, in decimal digits, written as a JSON number: Python's limit for converting
digits to an int, which the reader (pydantic's JSON parser) keeps too."""

_LONG_NUMBER = re.compile(rb"[0-9]{%d}" % (MAX_INT_DIGITS + 1))
_INT_LIMIT = 10**MAX_INT_DIGITS
_SURROGATE = re.compile("[\ud800-\udfff]")
_ESCAPED_SURROGATE = re.compile(r"(?<!\\)((?:\\\\)*)\\u([dD][89a-fA-F][0-9a-fA-F]{2})")
_HAS_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


def dump_event_bytes(event: Event) -> bytes:
    """One event as one line of UTF-8 JSON (no newline): ``{"kind": ..., <the other fields>}``.

    Text UTF-8 cannot hold, an int too long to read back, a value that is not JSON: each is
    written by the rules in the module's docstring.
    """
    if event.kind in _KEYED and not _fast(event):
        return _dump_escaped(event)
    try:
        body = _dump(event, exclude_defaults=True)  # the kind is a default too: it goes first, always
    except (PydanticSerializationError, UnicodeEncodeError):  # a lone surrogate, a value not JSON
        return _dump_escaped(event)
    if len(body) > MAX_INT_DIGITS and _LONG_NUMBER.search(body):  # cheap: only a long line looks
        return _dump_escaped(event)
    return b'{"kind":"' + event.kind.encode() + b'",' + body[1:]


_KEYED = frozenset({"model_replied", "recovery_decided", "turn_finished"})
"""The events with a dict whose keys pydantic would write lossily (a lone surrogate in a key
becomes U+FFFD without a word): these keys are looked at first."""


def _fast(event: Event) -> bool:
    """Whether pydantic's writer writes the keys of ``event`` exactly (and its call arguments
    are what their field declares)."""
    if isinstance(event, ModelReplied):
        return all(_plain_arguments(c) and _plain_keys(c.arguments) for c in event.reply.tool_calls)
    if isinstance(event, RecoveryDecided):
        return event.corrected_input is None or _plain_keys(event.corrected_input)
    if isinstance(event, TurnFinished):
        return not event.breakers or _plain_keys(event.breakers)
    return True


def _plain_keys(value: object) -> bool:
    """A str (no keys), or a dict whose keys are str without a lone surrogate."""
    if not isinstance(value, dict):
        return True
    return all(type(k) is str and (k.isascii() or not _SURROGATE.search(k)) for k in value)


def _plain_arguments(call: ToolCall) -> bool:
    """Whether the call's arguments are what their field declares: a str, or a dict with str keys."""
    arguments: object = call.arguments
    if type(arguments) is str:
        return True
    return isinstance(arguments, dict) and all(type(key) is str for key in arguments)


def _dump_escaped(event: Event) -> bytes:
    """The line of an event holding what the fast writer cannot write as is (the slow path)."""
    data = EVENT_ADAPTER.dump_python(event, exclude_defaults=True, warnings=False)
    if isinstance(event, ModelReplied):
        for call, written in zip(event.reply.tool_calls, data["reply"].get("tool_calls", ()), strict=True):
            if not _plain_arguments(call):
                written["arguments"] = shown(call.arguments, _NO_LIMIT)
    text = json.dumps(
        {"kind": event.kind, **_portable(data)}, ensure_ascii=False, separators=(",", ":"), allow_nan=False
    )
    return _SURROGATE.sub(_escape, text).encode()


_NO_LIMIT = 2**62


def _portable(value: Any) -> Any:
    """``value`` (a dumped event) as JSON data, by the rules of the module's docstring: an int too
    long to read back as ``"<int 0x...>"``, a float that is not finite as ``null`` (as pydantic
    writes it), a value that is not JSON as ``"<not JSON: repr>"``."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return value
    if kind is int:
        return value if -_INT_LIMIT < value < _INT_LIMIT else f"<int {value:#x}>"
    if kind is float:
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, dict):
        return {k if type(k) is str else shown(k): _portable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_portable(v) for v in value]
    return f"<not JSON: {shown(value)}>"


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def escaped_text(text: str) -> str:
    """``text`` with each lone surrogate written as its escape ``\\udcXX`` (six characters): the
    text as the frames show it, which UTF-8 (and so Arrow and Parquet) can hold."""
    return _SURROGATE.sub(_escape, text)


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
    """One event from its JSON text (validated; a ``ValidationError`` or ``ValueError`` if not).

    A line with a lone surrogate's escape (which pydantic's parser refuses) is parsed by Python's
    ``json`` instead, each escape read as its one code point, then validated by the same adapter.
    """
    try:
        return EVENT_ADAPTER.validate_json(raw)
    except ValidationError as exc:
        if exc.errors()[0]["type"] != "json_invalid" or not _has_escaped_surrogate(raw):
            raise
        try:
            data = _loads_with_surrogates(raw)
        except (ValueError, RecursionError):  # not JSON pydantic would take: say so as pydantic did
            raise exc from None
    return EVENT_ADAPTER.validate_python(data)


def _has_escaped_surrogate(raw: bytes | str) -> bool:
    text = raw if isinstance(raw, str) else raw.decode(errors="replace")
    return _HAS_ESCAPED_SURROGATE.search(text) is not None


def _loads_with_surrogates(raw: bytes | str) -> Any:
    """JSON ``raw`` parsed with each escaped surrogate read as that one code point (never merged
    with the next into one character); ``NaN`` and ``Infinity`` are refused, as pydantic does."""
    text = raw.decode() if isinstance(raw, bytes) else raw
    text = _ESCAPED_SURROGATE.sub(lambda m: m.group(1) + chr(int(m.group(2), 16)), text)
    return json.loads(text, parse_constant=_refuse_constant)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


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
