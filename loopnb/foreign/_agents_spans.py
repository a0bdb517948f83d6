"""The OpenAI Agents SDK's exported spans and traces, parsed into trees (no SDK needed).

A ``TracingProcessor`` sees each finished span's ``export()`` (``"object": "trace.span"``: ids,
ISO times, ``span_data`` with a ``type``, and ``error``) and each trace's (``"object": "trace"``:
its id, workflow name, group and metadata). The runner's ``task`` and ``turn`` spans are
``custom`` spans whose data says ``sdk_span_type``. This module checks those shapes, groups the
spans by trace, links each to its parent and groups a run's spans into turns (what a model span
kept: ``_agents_replies``). A value of the wrong shape is a ``RecordingError`` naming where the
span is, which span, the field and what was expected (``Span.bad``); a line or item that is not
an export, and a span whose ids, type, error or times cannot be read, go to ``Unread.skip``.
"""

from __future__ import annotations

import bisect
import json
import re
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from loopnb.foreign._formats import Unread
from loopnb.foreign._otlp_values import describe
from loopnb.record import RecordingError, RecordingWarning

MODEL_KINDS = ("generation", "response")
_OWN: Any = object()
"""A field's value not given: the span's own (``Span.text`` and the like read it from its data)."""


@dataclass(slots=True)
class Span:
    """One exported span: ``kind`` is its data's type (``task`` and ``turn`` for the runner's
    custom spans), ``data`` its span data (a custom span's ``data`` bag)."""

    id: str
    parent: str | None
    kind: str
    data: dict[str, Any]
    error: dict[str, Any] | None
    start: float | None
    end: float | None
    order: int
    children: list[Span] = field(default_factory=list)
    where: str = ""
    """Where it is: ``line N`` of a file, ``item N`` of a list."""
    path: Path | None = None
    data_at: str = "span_data"
    """Where ``data`` is in the export (a custom span's bag: ``span_data.data``)."""

    @property
    def duration_ms(self) -> float:
        """How long the span ran (0 when a time is missing)."""
        if self.start is None or self.end is None:
            return 0.0
        return max(0.0, (self.end - self.start) * 1000)

    @property
    def error_message(self) -> str | None:
        """The error's message, when the span has one."""
        return None if self.error is None else str(self.error.get("message") or "")

    def error_data(self, key: str) -> Any:
        """One item of the error's data (``None`` when absent)."""
        data = (self.error or {}).get("data")
        return data.get(key) if isinstance(data, dict) else None

    @property
    def label(self) -> str:
        """Where the span is and which it is, as an error names it."""
        return f"{self.where}, span {self.id} ({self.kind})"

    def bad(self, at: str, expected: str, found: Any) -> RecordingError:
        """The error of a value of the wrong shape at ``at`` of the span's export."""
        return RecordingError(
            f"{self.label}: {at}: expected {expected}, found {describe(found)}", path=self.path
        )

    def text(self, key: str, value: Any = _OWN) -> str | None:
        """Its data's ``key`` (or ``value``, found there), a string or ``None``."""
        value = self.data.get(key) if value is _OWN else value
        if value is None or isinstance(value, str):
            return value
        raise self.bad(f"{self.data_at}.{key}", "a string", value)

    def listed(self, key: str, expected: str, value: Any = _OWN) -> list[Any]:
        """Its data's ``key`` (or ``value``, found there), a list (``None``: an empty one)."""
        value = self.data.get(key) if value is _OWN else value
        if value is None or isinstance(value, list):
            return value or []
        raise self.bad(f"{self.data_at}.{key}", expected, value)

    def mapping(self, key: str, expected: str, value: Any = _OWN) -> dict[str, Any]:
        """Its data's ``key`` (or ``value``, found there), an object (``None``: an empty one)."""
        value = self.data.get(key) if value is _OWN else value
        if value is None or isinstance(value, dict):
            return value or {}
        raise self.bad(f"{self.data_at}.{key}", expected, value)

    def names(self, key: str) -> list[str]:
        """Its data's ``key``, a list of names (an agent span's ``tools`` and ``handoffs``)."""
        found = self.listed(key, "a list of names")
        for i, name in enumerate(found):
            if not isinstance(name, str):
                raise self.bad(f"{self.data_at}.{key}[{i}]", "a name (a string)", name)
        return found


@dataclass(slots=True)
class Trace:
    """The spans of one trace (``roots`` are those whose parent is not in the file)."""

    id: str
    info: dict[str, Any] = field(default_factory=dict)
    spans: list[Span] = field(default_factory=list)
    roots: list[Span] = field(default_factory=list)


def _when(span: Span, at: str, value: Any) -> float | None:
    if value is None or value == "":
        return None
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value).timestamp()
        except (ValueError, OverflowError, OSError):  # not ISO 8601, or past what a timestamp holds
            pass
    raise span.bad(at, "an ISO 8601 time", value)


def _where(index: int, lines: bool) -> str:
    return f"line {index}" if lines else f"item {index}"


def _span(item: dict[str, Any], order: int, where: str, path: Path | None) -> Span:
    data = item.get("span_data")
    span_id = item.get("id")
    if not isinstance(span_id, str) or not isinstance(data, dict) or not isinstance(data.get("type"), str):
        raise RecordingError(
            f"{where}: a span needs a string 'id' and a 'span_data' object with a 'type' "
            f"(what Span.export() writes); got keys {sorted(item)}",
            path=path,
        )
    kind: str = data["type"]
    span = Span(
        id=span_id,
        parent=None,
        kind=kind,
        data=data,
        error=None,
        start=None,
        end=None,
        order=order,
        where=where,
        path=path,
    )
    if kind == "custom":
        bag = span.mapping("data", "an object (the custom span's data)")
        runner = bag.get("sdk_span_type")
        span.kind = runner if runner in ("task", "turn") else f"custom:{data.get('name')}"
        span.data, span.data_at = bag, "span_data.data"
    parent = item.get("parent_id")
    if parent is not None and not isinstance(parent, str):
        raise span.bad("parent_id", "a span id (a string) or null", parent)
    span.parent = parent
    span.error = _error(span, item.get("error"))
    span.start = _when(span, "started_at", item.get("started_at"))
    span.end = _when(span, "ended_at", item.get("ended_at"))
    return span


def _error(span: Span, error: Any) -> dict[str, Any] | None:
    """A span's ``error``: ``null``, or ``{message, data}``."""
    if error is None:
        return None
    if not isinstance(error, dict):
        raise span.bad("error", "an object ({message, data}) or null", error)
    for key, kind, expected in (("message", str, "a string"), ("data", dict, "an object")):
        value = error.get(key)
        if value is not None and not isinstance(value, kind):
            raise span.bad(f"error.{key}", expected, value)
    return error


def traces(items: Iterable[tuple[int, Any]], *, lines: bool, unread: Unread) -> list[Trace]:
    """The traces ``items`` (``(index, exported dict)`` pairs) hold, in order of first mention;
    an item that cannot be read goes to ``unread``."""
    found: dict[str, Trace] = {}
    path = unread.path
    for order, (index, item) in enumerate(items):
        where = _where(index, lines)
        kind = item.get("object") if isinstance(item, dict) else None
        trace_id = item.get("id") if kind == "trace" else item.get("trace_id") if kind else None
        if kind not in ("trace", "trace.span") or not isinstance(trace_id, str):
            unread.skip(
                where,
                "expected a Trace.export() or Span.export() object "
                f"('object': 'trace' or 'trace.span', with a string trace id), got {_brief(item)}",
            )
            continue
        if kind == "trace":
            found.setdefault(trace_id, Trace(trace_id)).info = item
            continue
        try:
            span = _span(item, order, where, path)
        except RecordingError as exc:
            unread.skip(where, exc)
            continue
        found.setdefault(trace_id, Trace(trace_id)).spans.append(span)
    for trace in found.values():
        _link(trace, unread)
    return list(found.values())


def _brief(item: Any) -> str:
    if isinstance(item, dict):
        return f"an object with keys {sorted(item)[:8]}"
    return f"a JSON {type(item).__name__}"


def _key(span: Span) -> tuple[float, int]:
    return (span.start if span.start is not None else float("inf"), span.order)


def _link(trace: Trace, unread: Unread) -> None:
    """Hang each span under its parent; the spans of a parent chain that loops (so none of them
    is reached from a root) go to ``unread``, each named, not left out unsaid."""
    by_id = {s.id: s for s in trace.spans}
    for span in sorted(trace.spans, key=_key):
        parent = by_id.get(span.parent) if span.parent else None
        (parent.children if parent is not None and parent is not span else trace.roots).append(span)
    reached = {id(s) for s in walk(trace.roots, into_calls=True)}
    lost = [s for s in trace.spans if id(s) not in reached]
    for span in lost:
        expected = "a parent whose own parents do not lead back to this span"
        unread.skip(span.label, span.bad("parent_id", expected, span.parent))
    if lost:
        trace.spans = [s for s in trace.spans if id(s) in reached]


def walk(spans: Iterable[Span], *, into_calls: bool = False) -> Iterator[Span]:
    """``spans`` and their descendants, depth first in start order, without going inside a
    function span (a nested run, an agent used as a tool, belongs to its call) unless
    ``into_calls``. Iterative: a trace nested thousands deep is no ``RecursionError``."""
    stack = list(spans)[::-1]
    while stack:
        span = stack.pop()
        yield span
        if into_calls or span.kind != "function":
            stack.extend(reversed(span.children))


def handoff_tool(agent: str) -> str:
    """The tool name the SDK gives a handoff to ``agent`` by default."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", f"transfer_to_{agent}".replace(" ", "_")).lower()


def parse_lines(data: bytes, unread: Unread) -> list[tuple[int, Any]]:
    """The objects of a JSON Lines file (a torn last line, from a killed writer, is left out
    with a ``RecordingWarning``; any other line that is not JSON goes to ``unread``)."""
    rows = data.split(b"\n")
    items: list[tuple[int, Any]] = []
    path = unread.path
    for number, line in enumerate(rows, 1):
        if not line.strip():
            continue
        try:
            items.append((number, json.loads(line)))
        except RecursionError:
            why = "JSON nested too deeply to be a span or a trace"
            unread.skip(f"line {number}", why, error=RecordingError(why, path=path, line=number))
        except ValueError as exc:
            if number == len(rows) and items:
                warnings.warn(
                    f"{path}, line {number}: torn last line left out ({len(line)} bytes)",
                    RecordingWarning,
                    stacklevel=3,
                )
                continue
            why = f"not JSON ({exc.args[0]}); expected one exported span or trace a line"
            unread.skip(f"line {number}", why, error=RecordingError(why, path=path, line=number))
    return items


def listed(value: Any) -> list[Any] | None:
    """The exported items of a parsed JSON document, or ``None`` when it is none of the shapes."""
    if isinstance(value, list):
        return value
    if isinstance(value, dict) and isinstance(value.get("data"), list):
        return list(value["data"])
    if isinstance(value, dict) and "object" in value:
        return [value]
    return None


@dataclass(slots=True)
class Turn:
    """One turn of a run: the runner's ``turn`` span (if any), its model spans and its calls."""

    span: Span | None
    models: list[Span] = field(default_factory=list)
    calls: list[Span] = field(default_factory=list)

    @property
    def start(self) -> float | None:
        return (self.span or self.models[0]).start

    @property
    def end(self) -> float | None:
        return (self.span or self.models[-1]).end

    @property
    def not_found(self) -> str | None:
        """The tool the turn span says was not found, if it says one was."""
        if self.span is None or self.span.error_message != "Tool not found":
            return None
        name = self.span.error_data("tool_name")
        return str(name) if name is not None else ""


def turns_of(spans: list[Span]) -> list[Turn]:
    """A run's turns: its ``turn`` spans, else one per model span (older SDKs, or a run with
    ``include_task_and_turn_spans`` off)."""
    marked = [s for s in spans if s.kind == "turn"]
    if marked:
        turns = []
        for span in marked:
            inside = list(walk(span.children))
            turns.append(
                Turn(
                    span,
                    [s for s in inside if s.kind in MODEL_KINDS],
                    [s for s in inside if s.kind in ("function", "handoff")],
                )
            )
        return turns
    models = sorted((s for s in spans if s.kind in MODEL_KINDS), key=lambda s: s.start or 0.0)
    turns = [Turn(None, [s]) for s in models]
    starts = [t.start or 0.0 for t in turns]
    for span in spans:
        if span.kind in ("function", "handoff") and turns:
            after = bisect.bisect_right(starts, span.start or 0.0)  # the last model span before it
            turns[max(after - 1, 0)].calls.append(span)
    return turns
