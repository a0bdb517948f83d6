"""The OpenAI Agents SDK's exported spans and traces, parsed into trees (no SDK needed).

A ``TracingProcessor`` sees each finished span's ``export()`` (``"object": "trace.span"``: ids,
ISO times, ``span_data`` with a ``type``, and ``error``) and each trace's (``"object": "trace"``:
its id, workflow name, group and metadata). The runner's ``task`` and ``turn`` spans are
``custom`` spans whose data says ``sdk_span_type``. This module checks those shapes, groups the
spans by trace, links each to its parent, and reads what a model span kept of the reply (chat
completion messages, a Responses dump, or nothing: a Responses model's ``response`` span keeps
only its id and usage).
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from loopnb.engine._messages import Usage
from loopnb.record._errors import RecordingError, RecordingWarning

MODEL_KINDS = ("generation", "response")


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


@dataclass(slots=True)
class Trace:
    """The spans of one trace (``roots`` are those whose parent is not in the file)."""

    id: str
    info: dict[str, Any] = field(default_factory=dict)
    spans: list[Span] = field(default_factory=list)
    roots: list[Span] = field(default_factory=list)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _when(value: Any) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        return None


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
    if kind == "custom":
        bag = _dict(data.get("data"))
        runner = bag.get("sdk_span_type")
        kind = runner if runner in ("task", "turn") else f"custom:{data.get('name')}"
        data = bag
    error = item.get("error")
    parent = item.get("parent_id")
    return Span(
        id=span_id,
        parent=parent if isinstance(parent, str) else None,
        kind=kind,
        data=data,
        error=error if isinstance(error, dict) else None,
        start=_when(item.get("started_at")),
        end=_when(item.get("ended_at")),
        order=order,
    )


def traces(items: Iterable[tuple[int, Any]], *, lines: bool, path: Path | None = None) -> list[Trace]:
    """The traces ``items`` (``(index, exported dict)`` pairs) hold, in order of first mention."""
    found: dict[str, Trace] = {}
    for order, (index, item) in enumerate(items):
        where = _where(index, lines)
        kind = item.get("object") if isinstance(item, dict) else None
        trace_id = item.get("id") if kind == "trace" else item.get("trace_id") if kind else None
        if kind not in ("trace", "trace.span") or not isinstance(trace_id, str):
            raise RecordingError(
                f"{where}: expected a Trace.export() or Span.export() object "
                f"('object': 'trace' or 'trace.span', with a string trace id), got {_brief(item)}",
                path=path,
            )
        trace = found.setdefault(trace_id, Trace(trace_id))
        if kind == "trace":
            trace.info = item
        else:
            trace.spans.append(_span(item, order, where, path))
    for trace in found.values():
        _link(trace)
    return list(found.values())


def _brief(item: Any) -> str:
    if isinstance(item, dict):
        return f"an object with keys {sorted(item)[:8]}"
    return f"a JSON {type(item).__name__}"


def _key(span: Span) -> tuple[float, int]:
    return (span.start if span.start is not None else float("inf"), span.order)


def _link(trace: Trace) -> None:
    by_id = {s.id: s for s in trace.spans}
    for span in sorted(trace.spans, key=_key):
        parent = by_id.get(span.parent) if span.parent else None
        (parent.children if parent is not None and parent is not span else trace.roots).append(span)


def walk(spans: Iterable[Span]) -> Iterator[Span]:
    """``spans`` and their descendants, depth first in start order, without going inside a
    function span (a nested run, an agent used as a tool, belongs to its call)."""
    for span in spans:
        yield span
        if span.kind != "function":
            yield from walk(span.children)


def usage_of(data: dict[str, Any]) -> Usage | None:
    """The tokens a span's ``usage`` reports, if it has any."""
    usage = data.get("usage")
    if not isinstance(usage, dict):
        return None
    ins = usage.get("input_tokens", usage.get("prompt_tokens"))
    outs = usage.get("output_tokens", usage.get("completion_tokens"))
    if not isinstance(ins, int) and not isinstance(outs, int):
        return None
    return Usage(
        input_tokens=ins if isinstance(ins, int) else 0, output_tokens=outs if isinstance(outs, int) else 0
    )


@dataclass(slots=True)
class Reply:
    """What a model span kept of the model's answer."""

    text: str | None = None
    calls: list[tuple[str, str, str]] = field(default_factory=list)
    """``(call_id, name, arguments)`` in the order the model made them."""
    model: str | None = None
    kept: bool = False
    """Whether the span kept the answer at all (a ``response`` span never does)."""


def _text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict)]
        texts = [t for t in parts if isinstance(t, str)]
        return "".join(texts) if texts else None
    return None


def _items(items: list[Any], reply: Reply) -> None:
    """Responses output items: ``message`` and ``function_call``."""
    texts = []
    for item in items:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "message":
            text = _text(item.get("content"))
            if text is not None:
                texts.append(text)
        elif item.get("type") == "function_call":
            reply.calls.append(
                (
                    str(item.get("call_id") or ""),
                    str(item.get("name") or ""),
                    str(item.get("arguments") or ""),
                )
            )
    reply.text = "".join(texts) if texts else None


def reply_of(span: Span) -> Reply:
    """The reply a ``generation`` span's output holds: chat completion messages (the Chat
    Completions and LiteLLM models), a Responses dump (their streaming path) or output items."""
    reply = Reply(model=span.data.get("model") if isinstance(span.data.get("model"), str) else None)
    output = span.data.get("output")
    if not isinstance(output, list):
        return reply
    reply.kept = True
    messages = [m for m in output if isinstance(m, dict)]
    if any("output" in m for m in messages):  # Response.model_dump()
        for dump in messages:
            _items(dump.get("output") or [], reply)
            reply.model = reply.model or dump.get("model")
        return reply
    if any(m.get("type") in ("message", "function_call") for m in messages):
        _items(messages, reply)
        return reply
    texts = [t for t in (_text(m.get("content")) for m in messages) if t is not None]
    reply.text = "".join(texts) if texts else None
    for message in messages:
        for call in message.get("tool_calls") or []:
            if not isinstance(call, dict):
                continue
            function = _dict(call.get("function"))
            reply.calls.append(
                (
                    str(call.get("id") or ""),
                    str(function.get("name") or ""),
                    str(function.get("arguments") or ""),
                )
            )
    return reply


def read_back(spans: Iterable[Span]) -> dict[str, str]:
    """What the model read for each call id, from the inputs model spans kept (chat ``tool``
    messages, Responses ``function_call_output`` items)."""
    seen: dict[str, str] = {}
    for span in spans:
        items = span.data.get("input") if span.kind == "generation" else None
        for item in items if isinstance(items, list) else ():
            if not isinstance(item, dict):
                continue
            if item.get("role") == "tool":
                call_id, content = item.get("tool_call_id"), _text(item.get("content"))
            elif item.get("type") == "function_call_output":
                call_id, content = item.get("call_id"), _text(item.get("output"))
            else:
                continue
            if isinstance(call_id, str) and content is not None:
                seen[call_id] = content
    return seen


def prompt_of(spans: Iterable[Span]) -> tuple[str, str | None]:
    """The first user prompt and the system prompt the first model span with an input kept."""
    for span in spans:
        items = span.data.get("input") if span.kind == "generation" else None
        if isinstance(items, str):
            return items, None
        if not isinstance(items, list):
            continue
        roles = [(m.get("role"), _text(m.get("content"))) for m in items if isinstance(m, dict)]
        task = next((text for role, text in roles if role == "user" and text is not None), "")
        system = next((text for role, text in roles if role in ("system", "developer") and text), None)
        return task, system
    return "", None


def handoff_tool(agent: str) -> str:
    """The tool name the SDK gives a handoff to ``agent`` by default."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", f"transfer_to_{agent}".replace(" ", "_")).lower()


def arguments(raw: Any) -> dict[str, Any] | str:
    """A call's arguments: the JSON object the model sent, else its raw text."""
    if raw is None or raw == "":
        return {}
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return str(raw)
    return parsed if isinstance(parsed, dict) else str(raw)


def parse_lines(data: bytes, path: Path) -> list[tuple[int, Any]]:
    """The objects of a JSON Lines file (a torn last line, from a killed writer, is left out
    with a ``RecordingWarning``)."""
    rows = data.split(b"\n")
    items: list[tuple[int, Any]] = []
    for number, line in enumerate(rows, 1):
        if not line.strip():
            continue
        try:
            items.append((number, json.loads(line)))
        except ValueError as exc:
            if number == len(rows) and items:
                warnings.warn(
                    f"{path}, line {number}: torn last line left out ({len(line)} bytes)",
                    RecordingWarning,
                    stacklevel=3,
                )
                continue
            raise RecordingError(
                f"not JSON ({exc.args[0]}); expected one exported span or trace a line",
                path=path,
                line=number,
            ) from exc
    return items
