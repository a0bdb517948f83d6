"""OpenTelemetry spans, decoded from each way they are written down into one plain shape.

Four sources, all read without the OpenTelemetry packages:

- OTLP/JSON as the specification writes it (what a collector's file exporter writes, one
  ``{"resourceSpans": ...}`` request a line): hex ids, integer enums, lowerCamelCase keys;
- protobuf's ``MessageToDict`` of an ``ExportTraceServiceRequest``: base64 ids, enum names
  (``STATUS_CODE_ERROR``), default fields left out (``snake_case`` keys with
  ``preserving_proto_field_name``);
- the SDK's ``span.to_json()`` dicts, in a JSON list, one a line, or one after another as the
  ``ConsoleSpanExporter`` prints them;
- SDK ``ReadableSpan`` objects in memory (``from_otel``), read by their attributes.

A span's values (ids, attributes, integers, times) are read by ``_otlp_values``; a value of the
wrong shape is a ``RecordingError`` saying where the span is and what was expected. What cannot be
read goes to ``Unread.skip``, item by item: a JSON value of a file (resuming at the next line that
opens one), a request, resource or scope that is not of OTLP's shape, a span, one of its events.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from loopnb.engine._errors import exception_text
from loopnb.foreign import _otlp_values as v
from loopnb.foreign._formats import Unread
from loopnb.record import RecordingError


@dataclass(slots=True)
class SpanEvent:
    """One event of a span (an ``exception``, a GenAI message event)."""

    name: str
    at: float | None
    attributes: dict[str, Any]


@dataclass(slots=True)
class Span:
    """One span, whatever encoding it came in: ids as lowercase hex, times in epoch seconds."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start: float | None
    end: float | None
    status: str
    """``UNSET``, ``OK`` or ``ERROR``."""
    description: str | None
    attributes: dict[str, Any]
    events: list[SpanEvent] = field(default_factory=list)
    scope: str | None = None
    """The instrumentation scope, ``"<name> <version>"`` (``"pydantic-ai 2.68.0"``), if known."""
    where: str = ""
    """Where in the source the span was (for error messages)."""


@dataclass(slots=True)
class Decoded:
    """A file's (or a list's) spans, and which encoding they came in."""

    spans: list[Span] = field(default_factory=list)
    encodings: list[str] = field(default_factory=list)

    def note(self, encoding: str) -> None:
        if encoding not in self.encodings:
            self.encodings.append(encoding)


def _key(d: dict[str, Any], camel: str, snake: str) -> Any:
    value = d.get(camel)
    return d.get(snake) if value is None else value


def _events(
    raw: Any, read: Callable[[dict[str, Any]], SpanEvent], where: str, unread: Unread
) -> list[SpanEvent]:
    """A span's events, each read by ``read``; one of the wrong shape goes to ``unread``, named."""
    events = []
    for i, event in enumerate(v.listed(raw, "events")):
        if isinstance(event, dict):
            try:
                events.append(read(event))
            except v.Bad as exc:
                named = f"events[{i}] {str(event.get('name', ''))!r}"
                said = RecordingError(f"{where}: {named}: {exc}", path=unread.path)
                unread.skip(f"{where}, {named}", str(exc), error=said)
    return events


def _otlp_span(raw: Any, scope: str | None, where: str, unread: Unread, decoded: Decoded) -> Span:
    path = unread.path
    if not isinstance(raw, dict):
        raise RecordingError(f"{where}: a span should be an object, found {type(raw).__name__}", path=path)
    trace_id, enc = v.hex_id(_key(raw, "traceId", "trace_id"), 16, where, path)
    span_id, _ = v.hex_id(_key(raw, "spanId", "span_id"), 8, where, path)
    if trace_id is None or span_id is None:
        raise RecordingError(f"{where}: a span needs traceId and spanId", path=path)
    parent_id, _ = v.hex_id(_key(raw, "parentSpanId", "parent_span_id"), 8, where, path)
    status = v.plain(raw.get("status"))
    code = status.get("code")
    decoded.note("protobuf-json" if enc == "base64" or isinstance(code, str) else "otlp-json")
    try:
        events = _events(
            raw.get("events"),
            lambda e: SpanEvent(
                str(e.get("name", "")),
                v.nanos(_key(e, "timeUnixNano", "time_unix_nano"), "its time"),
                v.attributes(e.get("attributes")),
            ),
            where,
            unread,
        )
        start = v.nanos(_key(raw, "startTimeUnixNano", "start_time_unix_nano"), "the start time")
        end = v.nanos(_key(raw, "endTimeUnixNano", "end_time_unix_nano"), "the end time")
        attributes = v.attributes(raw.get("attributes"))
        return Span(
            trace_id=trace_id,
            span_id=span_id,
            parent_id=parent_id,
            name=str(raw.get("name", "")),
            start=start,
            end=end,
            status=v.status_code(code),
            description=v.text(status.get("message"), "the status message"),
            attributes=attributes,
            events=events,
            scope=scope,
            where=where,
        )
    except v.Bad as exc:
        raise RecordingError(f"{where}: {exc}", path=path) from exc
    except RecursionError as exc:  # from_otel's dicts are not bounded by a JSON parser's depth
        raise RecordingError(f"{where}: an attribute nested too deeply to read", path=path) from exc
    except (ValueError, TypeError, OverflowError) as exc:  # what the checks above let through
        raise RecordingError(f"{where}: not a span's shape ({exception_text(exc)})", path=path) from exc


def _scope_name(scope: Any) -> str | None:
    if not isinstance(scope, dict) or not scope.get("name"):
        return None
    version = scope.get("version")
    return f"{scope['name']} {version}" if version else str(scope["name"])


def _request(obj: dict[str, Any], where: str, unread: Unread, decoded: Decoded) -> None:
    """The spans of one ``ExportTraceServiceRequest`` (``{"resourceSpans": [...]}``); a resource,
    scope or span that cannot be read goes to ``unread``."""
    resources = _key(obj, "resourceSpans", "resource_spans")
    if not isinstance(resources, list):
        unread.skip(where.strip() or "top level", "resourceSpans should be a list")
        return
    for r, resource in enumerate(resources):
        scopes = _key(resource, "scopeSpans", "scope_spans") if isinstance(resource, dict) else None
        if scopes is None and isinstance(resource, dict):  # OTLP before 1.0
            scopes = _key(resource, "instrumentationLibrarySpans", "instrumentation_library_spans")
        if not isinstance(scopes, list):
            unread.skip(f"{where}resourceSpans[{r}]", "scopeSpans should be a list")
            continue
        for s, scoped in enumerate(scopes):
            _scope(scoped, f"{where}resourceSpans[{r}].scopeSpans[{s}]", unread, decoded)


def _scope(scoped: Any, where: str, unread: Unread, decoded: Decoded) -> None:
    """The spans of one ``scopeSpans`` item."""
    if not isinstance(scoped, dict):
        unread.skip(where, "not an object")
        return
    scope = _scope_name(
        scoped.get("scope") or _key(scoped, "instrumentationLibrary", "instrumentation_library")
    )
    spans = scoped.get("spans")
    if spans is not None and not isinstance(spans, list):
        unread.skip(f"{where}.spans", f"should be a list, found {v.describe(spans)}")
        return
    for i, raw in enumerate(spans or ()):
        at = f"{where}.spans[{i}]"
        try:
            decoded.spans.append(_otlp_span(raw, scope, at, unread, decoded))
        except RecordingError as exc:
            unread.skip(at, exc)


def _iso(value: Any, what: str = "a time") -> float | None:
    if not value:
        return None
    if isinstance(value, str):
        try:
            seconds = datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except (ValueError, OverflowError, OSError):  # not ISO 8601, or past what a timestamp holds
            pass
        else:
            return v.epoch(seconds, what)
    raise v.Bad(f"{what} should be an ISO 8601 timestamp, found {v.describe(value)}")


def _sdk_span(raw: dict[str, Any], where: str, unread: Unread) -> Span:
    """One ``span.to_json()`` dict."""
    path = unread.path
    context = raw.get("context")
    if not isinstance(context, dict):
        raise RecordingError(f"{where}: a span.to_json() dict needs a context object", path=path)
    trace_id, _ = v.hex_id(context.get("trace_id"), 16, where, path)
    span_id, _ = v.hex_id(context.get("span_id"), 8, where, path)
    if trace_id is None or span_id is None:
        raise RecordingError(f"{where}: the span's context needs trace_id and span_id", path=path)
    parent_id, _ = v.hex_id(raw.get("parent_id"), 8, where, path)
    status = v.plain(raw.get("status"))
    try:
        start, end = _iso(raw.get("start_time"), "the start time"), _iso(raw.get("end_time"), "the end time")
        events = _events(
            raw.get("events"),
            lambda e: SpanEvent(
                str(e.get("name", "")), _iso(e.get("timestamp"), "its time"), v.plain(e.get("attributes"))
            ),
            where,
            unread,
        )
        return Span(
            trace_id=trace_id,
            span_id=span_id,
            parent_id=parent_id,
            name=str(raw.get("name", "")),
            start=start,
            end=end,
            status=v.status_code(status.get("status_code")),
            description=v.text(status.get("description"), "the status description"),
            attributes=v.plain(raw.get("attributes")),
            events=events,
            where=where,
        )
    except v.Bad as exc:
        raise RecordingError(f"{where}: {exc}", path=path) from exc
    except (ValueError, TypeError, AttributeError, OverflowError) as exc:
        raise RecordingError(f"{where}: a time is not an ISO 8601 timestamp ({exc})", path=path) from exc


_EXPECTED = "expected resourceSpans or a span.to_json() dict"


def _value(obj: Any, where: str, unread: Unread, decoded: Decoded) -> None:
    """Whatever one JSON value holds: a request, a ``to_json()`` dict, or a list of either; what
    is none of them goes to ``unread``."""
    if isinstance(obj, list):
        for i, item in enumerate(obj):
            _value(item, f"{where}[{i}]", unread, decoded)
        return
    at = where or "top level"
    if not isinstance(obj, dict):
        unread.skip(at, f"expected spans, found {type(obj).__name__}")
    elif "resourceSpans" in obj or "resource_spans" in obj:
        _request(obj, f"{where} " if where else "", unread, decoded)
    elif "context" in obj and "name" in obj:
        decoded.note("sdk-json")
        try:
            decoded.spans.append(_sdk_span(obj, where or "span", unread))
        except RecordingError as exc:
            unread.skip(where or "span", exc)
    else:
        keys = sorted(map(str, obj))
        found = f"found keys {', '.join(keys[:6])}" if keys else "found an empty object"
        unread.skip(at, f"{_EXPECTED}, {found}")


def _whole(text: str, path: Path) -> Any:
    """``text`` as one JSON value; ``_SEVERAL`` when more follow the first (JSON Lines), or when
    it is not JSON and another line opens a value (the values are then read one by one)."""
    try:
        return json.loads(text)
    except RecursionError as exc:
        if _OPENS.search(text) is None:
            raise RecordingError("JSON nested too deeply to be spans", path=path) from exc
    except json.JSONDecodeError as exc:
        if exc.msg != "Extra data" and _OPENS.search(text) is None:
            raise RecordingError(f"not JSON: {exc.msg}", path=path, line=exc.lineno) from exc
    except ValueError as exc:  # an integer past Python's limit on digits
        if _OPENS.search(text) is None:
            raise RecordingError(f"JSON this reader cannot read: {exception_text(exc)}", path=path) from exc
    return _SEVERAL


_SEVERAL = object()
_OPENS = re.compile(r"\n[{\[]")
"""Where a value may begin, after one that is not JSON: a line opening an object or a list."""


def _values(text: str, unread: Unread) -> Iterator[tuple[Any, str]]:
    """Every JSON value in ``text``: one, or several one after another (JSON Lines, or the
    console exporter's indented objects), each with where it starts. A value that is not JSON
    goes to ``unread``, and reading resumes at the next line that opens one."""
    path = unread.path or Path()
    whole = _whole(text, path)
    if whole is not _SEVERAL:
        yield whole, ""
        return
    decoder = json.JSONDecoder()
    pos, n = 0, 0
    while True:
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
        if pos >= len(text):
            return
        line = text.count("\n", 0, pos) + 1
        n += 1
        try:
            obj, pos = decoder.raw_decode(text, pos)
        except (RecursionError, ValueError) as exc:  # JSONDecodeError is a ValueError
            why = _not_json(exc)
            unread.skip(f"line {line}", why, error=RecordingError(f"value {n} {why}", path=path, line=line))
            found = _OPENS.search(text, pos + 1)
            pos = len(text) if found is None else found.start() + 1
            continue
        yield obj, f"line {line}"


def _not_json(exc: RecursionError | ValueError) -> str:
    """Why a value of a file is not one the reader can read."""
    if isinstance(exc, RecursionError):
        return "is JSON nested too deeply to be spans"
    if isinstance(exc, json.JSONDecodeError):
        return f"is not JSON: {exc.msg}"
    return f"is JSON this reader cannot read: {exception_text(exc)}"  # an int past the digit limit


def read_file(path: Path, unread: Unread) -> Decoded:
    """The spans in the file at ``path``."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise RecordingError(f"cannot read: {exc}", path=path) from exc
    if not text.strip():
        raise RecordingError("empty: no spans", path=path)
    decoded = Decoded()
    for obj, where in _values(text, unread):
        _value(obj, where, unread, decoded)
    return decoded


def decode_objects(spans: Iterable[Any], unread: Unread | None = None) -> Decoded:
    """SDK spans in memory (``ReadableSpan``), or the dicts of any encoding above; one that
    cannot be read goes to ``unread`` (by default, raised)."""
    unread = unread or Unread()
    decoded = Decoded()
    for i, span in enumerate(spans):
        if isinstance(span, (dict, list)):
            _value(span, f"[{i}]", unread, decoded)
            continue
        decoded.note("sdk")
        where = f"span {i} ({getattr(span, 'name', '?')})"
        try:
            decoded.spans.append(readable(span, where))
        except RecordingError as exc:
            unread.skip(where, exc)
    return decoded


def readable(span: Any, where: str, *, started: bool = False) -> Span:
    """An SDK ``ReadableSpan``, read by its public attributes (``where``: how an error names it);
    one of another shape is a ``RecordingError``. ``loopnb.otel.LiveSpans`` reads each span so as
    it starts (``started``: only what a span has then, its ids, name, start and attributes; its
    events, status and end come as it ends) and as it ends: the path of every span it watches."""
    context = getattr(span, "context", None)
    if context is None:
        raise RecordingError(f"{where}: expected an OpenTelemetry ReadableSpan, found {type(span).__name__}")
    try:
        parent = getattr(span, "parent", None)
        read = Span(
            trace_id=format(context.trace_id, "032x"),
            span_id=format(context.span_id, "016x"),
            parent_id=None if parent is None else format(parent.span_id, "016x"),
            name=str(span.name),
            start=v.nanos(span.start_time, "the start time"),
            end=None,
            status="UNSET",
            description=None,
            attributes=_copied(span.attributes),
            where=where,
        )
        if started:
            return read
        status = getattr(span, "status", None)
        read.end = v.nanos(span.end_time, "the end time")
        read.status = v.status_code(getattr(getattr(status, "status_code", None), "name", "UNSET"))
        read.description = v.text(getattr(status, "description", None), "the status description")
        read.events = [
            SpanEvent(e.name, v.nanos(e.timestamp, "an event's time"), _copied(e.attributes))
            for e in span.events
        ]
        read.scope = _scope_of(getattr(span, "instrumentation_scope", None))
        return read
    except v.Bad as exc:
        raise RecordingError(f"{where}: {exc}") from exc
    except (AttributeError, TypeError, ValueError) as exc:
        raise RecordingError(f"{where}: not a ReadableSpan's shape ({exception_text(exc)})") from exc


def _copied(attributes: Any) -> dict[str, Any]:
    """A span's (or an event's) attributes as a dict of their own. The SDK hands them out behind
    a read-only proxy of its ``BoundedAttributes``, whose ``copy()`` copies the dict inside in one
    step (since SDK 1.3x); item by item through the mapping protocol costs a Python call a key."""
    if not attributes:
        return {}
    try:
        found = attributes.copy()
    except (AttributeError, TypeError):  # an older SDK's BoundedAttributes, or another mapping
        found = None
    return found if type(found) is dict else dict(attributes)


_last_scope: tuple[Any, str | None] = (None, None)
"""The last SDK scope read and its text: the spans of one tracer share one scope object."""


def _scope_of(scope: Any) -> str | None:
    """An SDK ``InstrumentationScope`` as ``_scope_name`` writes it."""
    global _last_scope
    last = _last_scope  # one read: another thread may set it meanwhile
    if scope is None or last[0] is scope:
        return last[1] if scope is not None else None
    text = _scope_name({"name": getattr(scope, "name", None), "version": getattr(scope, "version", None)})
    _last_scope = (scope, text)
    return text
