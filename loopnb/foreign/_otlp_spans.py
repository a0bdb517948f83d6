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
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from loopnb.engine._errors import exception_text
from loopnb.record._errors import RecordingError

STATUS_NAMES = ("UNSET", "OK", "ERROR")
"""OTel's status codes, by their number."""


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


def _hex_id(value: Any, size: int, where: str, path: Path | None) -> tuple[str | None, str]:
    """A trace or span id as lowercase hex, and whether it was written as hex or base64."""
    if value is None or value == "":
        return None, ""
    if not isinstance(value, str):
        raise RecordingError(f"{where}: an id should be a string, found {value!r}", path=path)
    text = value[2:] if value.startswith("0x") else value
    if len(text) == 2 * size:
        try:
            int(text, 16)
            return text.lower(), "hex"
        except ValueError:
            pass
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != size:
        raise RecordingError(
            f"{where}: id {value!r} is neither {2 * size} hex digits nor the base64 of {size} bytes",
            path=path,
        )
    return raw.hex(), "base64"


class _Bad(Exception):
    """A value that is not what the encoding says (the span's decoder adds where it is)."""


def describe(value: Any) -> str:
    """A value as an error message names it: its type, and the value when it is short."""
    text = repr(value)
    return type(value).__name__ + (f" {text}" if len(text) <= 40 else "")


def _list(value: Any, what: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _Bad(f"{what} should be a list, found {describe(value)}")
    return value


def _any_value(value: Any) -> Any:
    """An OTLP ``AnyValue`` (``{"stringValue": ...}``, ``{"intValue": "3"}``, ...) as Python."""
    if not isinstance(value, dict):
        return value
    for kind, raw in value.items():
        if kind in ("stringValue", "string_value", "doubleValue", "double_value", "boolValue", "bool_value"):
            return raw
        if kind in ("intValue", "int_value"):
            return _integer(raw, f"an {kind}")
        if kind in ("arrayValue", "array_value", "kvlistValue", "kvlist_value"):
            if raw is not None and not isinstance(raw, dict):
                raise _Bad(f"an {kind} should be an object with values, found {describe(raw)}")
            values = _list((raw or {}).get("values"), f"an {kind}'s values")
            return [_any_value(v) for v in values] if kind.startswith("array") else _attributes(values)
        if kind in ("bytesValue", "bytes_value"):
            return raw
    return None


def _attributes(items: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in _list(items, "attributes"):
        if type(kv) is not dict or "key" not in kv:
            continue
        key = kv["key"]
        if type(key) is not str:
            raise _Bad(f"an attribute's key should be a string, found {describe(key)}")
        value = kv.get("value")
        text = value.get("stringValue") if type(value) is dict else None
        try:
            out[key] = text if text is not None else _any_value(value)  # most values are strings
        except _Bad as exc:
            raise _Bad(f"attribute {key!r}: {exc}") from exc
    return out


_DECIMAL = re.compile(r"[+-]?[0-9]{1,20}")
_BITS = 2**63
"""OTLP's integers are 64 bits (signed, or unsigned for times)."""


def _integer(raw: Any, what: str) -> int:
    """A 64-bit integer written as a JSON number or (protobuf JSON's way) as a decimal string.

    JSON's ``1e400`` reads as infinity and ``NaN`` as not a number: neither is a whole number,
    and neither may reach ``int()``, which raises for them."""
    if (isinstance(raw, float) and raw.is_integer()) or (
        isinstance(raw, str) and _DECIMAL.fullmatch(raw.strip())
    ):
        raw = int(raw)
    if type(raw) is int and -_BITS <= raw < 2 * _BITS:
        return raw
    raise _Bad(f"{what} should be a whole number of 64 bits, found {describe(raw)}")


_LIMIT = _BITS / 1e9
"""Times are kept as nanoseconds in 64 bits: from 1677 to 2262."""


def _time(seconds: float | None, what: str) -> float | None:
    if seconds is not None and not -_LIMIT < seconds < _LIMIT:  # NaN is no time either
        raise _Bad(f"{what} {seconds:.0f} s from 1970 is not a time between the years 1677 and 2262")
    return seconds


def _nanos(value: Any, what: str = "a time") -> float | None:
    if value is None or value == "" or value == 0 or value == "0":
        return None
    return _time(_integer(value, f"{what} in nanoseconds") / 1e9, what)


def _events(raw: Any, read: Callable[[dict[str, Any]], SpanEvent]) -> list[SpanEvent]:
    """A span's events, each read by ``read`` (a value of the wrong shape says which event)."""
    events = []
    for i, event in enumerate(_list(raw, "events")):
        if isinstance(event, dict):
            try:
                events.append(read(event))
            except _Bad as exc:
                raise _Bad(f"events[{i}] {str(event.get('name', ''))!r}: {exc}") from exc
    return events


def _status_code(value: Any) -> str:
    if value is None:
        return "UNSET"
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(STATUS_NAMES):
        return STATUS_NAMES[value]
    name = value.removeprefix("STATUS_CODE_").upper() if isinstance(value, str) else None
    if name not in STATUS_NAMES:
        raise _Bad(f"a status code should be UNSET, OK or ERROR (0, 1, 2), found {describe(value)}")
    return name


def _text(value: Any, what: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise _Bad(f"{what} should be a string, found {describe(value)}")
    return value or None


def _plain(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def _otlp_span(raw: Any, scope: str | None, where: str, path: Path | None, decoded: Decoded) -> Span:
    if not isinstance(raw, dict):
        raise RecordingError(f"{where}: a span should be an object, found {type(raw).__name__}", path=path)
    trace_id, enc = _hex_id(_key(raw, "traceId", "trace_id"), 16, where, path)
    span_id, _ = _hex_id(_key(raw, "spanId", "span_id"), 8, where, path)
    if trace_id is None or span_id is None:
        raise RecordingError(f"{where}: a span needs traceId and spanId", path=path)
    parent_id, _ = _hex_id(_key(raw, "parentSpanId", "parent_span_id"), 8, where, path)
    status = _plain(raw.get("status"))
    code = status.get("code")
    decoded.note("protobuf-json" if enc == "base64" or isinstance(code, str) else "otlp-json")
    try:
        events = _events(
            raw.get("events"),
            lambda e: SpanEvent(
                str(e.get("name", "")),
                _nanos(_key(e, "timeUnixNano", "time_unix_nano"), "its time"),
                _attributes(e.get("attributes")),
            ),
        )
        start = _nanos(_key(raw, "startTimeUnixNano", "start_time_unix_nano"), "the start time")
        end = _nanos(_key(raw, "endTimeUnixNano", "end_time_unix_nano"), "the end time")
        attributes = _attributes(raw.get("attributes"))
        return Span(
            trace_id=trace_id,
            span_id=span_id,
            parent_id=parent_id,
            name=str(raw.get("name", "")),
            start=start,
            end=end,
            status=_status_code(code),
            description=_text(status.get("message"), "the status message"),
            attributes=attributes,
            events=events,
            scope=scope,
            where=where,
        )
    except _Bad as exc:
        raise RecordingError(f"{where}: {exc}", path=path) from exc
    except (ValueError, TypeError, OverflowError) as exc:  # what the checks above let through
        raise RecordingError(f"{where}: not a span's shape ({exception_text(exc)})", path=path) from exc


def _scope_name(scope: Any) -> str | None:
    if not isinstance(scope, dict) or not scope.get("name"):
        return None
    version = scope.get("version")
    return f"{scope['name']} {version}" if version else str(scope["name"])


def _request(obj: dict[str, Any], where: str, path: Path | None, decoded: Decoded) -> None:
    """The spans of one ``ExportTraceServiceRequest`` (``{"resourceSpans": [...]}``)."""
    resources = _key(obj, "resourceSpans", "resource_spans")
    if not isinstance(resources, list):
        raise RecordingError(f"{where}: resourceSpans should be a list", path=path)
    for r, resource in enumerate(resources):
        scopes = _key(resource, "scopeSpans", "scope_spans") if isinstance(resource, dict) else None
        if scopes is None and isinstance(resource, dict):  # OTLP before 1.0
            scopes = _key(resource, "instrumentationLibrarySpans", "instrumentation_library_spans")
        if not isinstance(scopes, list):
            raise RecordingError(f"{where}resourceSpans[{r}]: scopeSpans should be a list", path=path)
        for s, scoped in enumerate(scopes):
            if not isinstance(scoped, dict):
                raise RecordingError(f"{where}resourceSpans[{r}].scopeSpans[{s}]: not an object", path=path)
            scope = _scope_name(
                scoped.get("scope") or _key(scoped, "instrumentationLibrary", "instrumentation_library")
            )
            spans = scoped.get("spans")
            if spans is not None and not isinstance(spans, list):
                at = f"{where}resourceSpans[{r}].scopeSpans[{s}].spans"
                raise RecordingError(f"{at} should be a list, found {describe(spans)}", path=path)
            for i, raw in enumerate(spans or ()):
                at = f"{where}resourceSpans[{r}].scopeSpans[{s}].spans[{i}]"
                decoded.spans.append(_otlp_span(raw, scope, at, path, decoded))


def _iso(value: Any, what: str = "a time") -> float | None:
    if not value:
        return None
    return _time(datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp(), what)


def _sdk_span(raw: dict[str, Any], where: str, path: Path | None) -> Span:
    """One ``span.to_json()`` dict."""
    context = raw.get("context")
    if not isinstance(context, dict):
        raise RecordingError(f"{where}: a span.to_json() dict needs a context object", path=path)
    trace_id, _ = _hex_id(context.get("trace_id"), 16, where, path)
    span_id, _ = _hex_id(context.get("span_id"), 8, where, path)
    if trace_id is None or span_id is None:
        raise RecordingError(f"{where}: the span's context needs trace_id and span_id", path=path)
    parent_id, _ = _hex_id(raw.get("parent_id"), 8, where, path)
    status = _plain(raw.get("status"))
    try:
        start, end = _iso(raw.get("start_time"), "the start time"), _iso(raw.get("end_time"), "the end time")
        events = _events(
            raw.get("events"),
            lambda e: SpanEvent(
                str(e.get("name", "")), _iso(e.get("timestamp"), "its time"), _plain(e.get("attributes"))
            ),
        )
        return Span(
            trace_id=trace_id,
            span_id=span_id,
            parent_id=parent_id,
            name=str(raw.get("name", "")),
            start=start,
            end=end,
            status=_status_code(status.get("status_code")),
            description=_text(status.get("description"), "the status description"),
            attributes=_plain(raw.get("attributes")),
            events=events,
            where=where,
        )
    except _Bad as exc:
        raise RecordingError(f"{where}: {exc}", path=path) from exc
    except (ValueError, TypeError, AttributeError, OverflowError) as exc:
        raise RecordingError(f"{where}: a time is not an ISO 8601 timestamp ({exc})", path=path) from exc


def _value(obj: Any, where: str, path: Path | None, decoded: Decoded) -> None:
    """Whatever one JSON value holds: a request, a ``to_json()`` dict, or a list of either."""
    if isinstance(obj, list):
        for i, item in enumerate(obj):
            _value(item, f"{where}[{i}]", path, decoded)
        return
    if not isinstance(obj, dict):
        raise RecordingError(f"{where}: expected spans, found {type(obj).__name__}", path=path)
    if "resourceSpans" in obj or "resource_spans" in obj:
        _request(obj, f"{where} " if where else "", path, decoded)
    elif "context" in obj and "name" in obj:
        decoded.note("sdk-json")
        decoded.spans.append(_sdk_span(obj, where or "span", path))
    else:
        keys = ", ".join(sorted(obj)[:6])
        raise RecordingError(
            f"{where or 'top level'}: expected resourceSpans or a span.to_json() dict, found keys {keys}",
            path=path,
        )


def _values(text: str, path: Path) -> Iterator[tuple[Any, str]]:
    """Every JSON value in ``text``: one, or several one after another (JSON Lines, or the
    console exporter's indented objects), each with where it starts."""
    try:
        yield json.loads(text), ""
        return
    except RecursionError as exc:
        raise RecordingError("JSON nested too deeply to be spans", path=path) from exc
    except json.JSONDecodeError as exc:
        if exc.msg != "Extra data":
            raise RecordingError(f"not JSON: {exc.msg}", path=path, line=exc.lineno) from exc
    except ValueError as exc:  # an integer past Python's limit on digits
        raise RecordingError(f"JSON this reader cannot read: {exception_text(exc)}", path=path) from exc
    decoder = json.JSONDecoder()
    pos, n = 0, 0
    while True:
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
        if pos >= len(text):
            return
        line = text.count("\n", 0, pos) + 1
        try:
            obj, pos = decoder.raw_decode(text, pos)
        except RecursionError as exc:
            raise RecordingError(
                f"value {n + 1} is JSON nested too deeply to be spans", path=path, line=line
            ) from exc
        except json.JSONDecodeError as exc:
            raise RecordingError(f"value {n + 1} is not JSON: {exc.msg}", path=path, line=line) from exc
        except ValueError as exc:  # an integer past Python's limit on digits
            raise RecordingError(
                f"value {n + 1} is JSON this reader cannot read: {exception_text(exc)}", path=path, line=line
            ) from exc
        n += 1
        yield obj, f"line {line}"


def read_file(path: Path) -> Decoded:
    """The spans in the file at ``path``."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise RecordingError(f"cannot read: {exc}", path=path) from exc
    if not text.strip():
        raise RecordingError("empty: no spans", path=path)
    decoded = Decoded()
    for obj, where in _values(text, path):
        _value(obj, where, path, decoded)
    return decoded


def decode_objects(spans: Iterable[Any]) -> Decoded:
    """SDK spans in memory (``ReadableSpan``), or the dicts of any encoding above."""
    decoded = Decoded()
    for i, span in enumerate(spans):
        if isinstance(span, (dict, list)):
            _value(span, f"[{i}]", None, decoded)
            continue
        decoded.note("sdk")
        decoded.spans.append(_readable(span, f"span {i} ({getattr(span, 'name', '?')})"))
    return decoded


def _readable(span: Any, where: str) -> Span:
    """An SDK ``ReadableSpan``, read by its public attributes."""
    context = getattr(span, "context", None)
    if context is None:
        raise RecordingError(f"{where}: expected an OpenTelemetry ReadableSpan, found {type(span).__name__}")
    try:
        parent = getattr(span, "parent", None)
        scope = getattr(span, "instrumentation_scope", None)
        status = getattr(span, "status", None)
        code = getattr(getattr(status, "status_code", None), "name", "UNSET")
        return Span(
            trace_id=format(context.trace_id, "032x"),
            span_id=format(context.span_id, "016x"),
            parent_id=None if parent is None else format(parent.span_id, "016x"),
            name=str(span.name),
            start=_nanos(span.start_time, "the start time"),
            end=_nanos(span.end_time, "the end time"),
            status=_status_code(code),
            description=_text(getattr(status, "description", None), "the status description"),
            attributes=dict(span.attributes or {}),
            events=[
                SpanEvent(e.name, _nanos(e.timestamp, "an event's time"), dict(e.attributes or {}))
                for e in span.events
            ],
            scope=_scope_name(
                {"name": getattr(scope, "name", None), "version": getattr(scope, "version", None)}
            ),
            where=where,
        )
    except _Bad as exc:
        raise RecordingError(f"{where}: {exc}") from exc
    except (AttributeError, TypeError, ValueError) as exc:
        raise RecordingError(f"{where}: not a ReadableSpan's shape ({exception_text(exc)})") from exc
