"""What an OpenAI Agents SDK model span kept: the reply, the tokens, what the model read, the prompt.

A ``generation`` span keeps chat completion messages (the Chat Completions and LiteLLM models),
a Responses dump (their streaming path) or output items; a Responses model's ``response`` span
keeps only its id and usage. A value of the wrong shape is a ``RecordingError`` naming the span,
the field and what was expected (``Span.bad`` and the checks beside it).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from loopnb.engine import Usage
from loopnb.foreign._agents_spans import Span


def usage_of(span: Span) -> Usage | None:
    """The tokens a span's ``usage`` reports, if it has any."""
    usage = span.mapping("usage", "an object of token counts")
    ins = _tokens(span, usage, "input_tokens", "prompt_tokens")
    outs = _tokens(span, usage, "output_tokens", "completion_tokens")
    if ins is None and outs is None:
        return None
    return Usage(input_tokens=ins or 0, output_tokens=outs or 0)


def _tokens(span: Span, usage: dict[str, Any], *names: str) -> int | None:
    """The first of ``names`` that ``usage`` has, a whole number of tokens."""
    for name in names:
        value = usage.get(name)
        if value is None:
            continue
        if isinstance(value, float) and value.is_integer():  # not infinity, not NaN
            value = int(value)
        if type(value) is not int or not 0 <= value < 2**63:
            raise span.bad(f"{span.data_at}.usage.{name}", "a whole number of tokens", value)
        return value
    return None


@dataclass(slots=True)
class Reply:
    """What a model span kept of the model's answer."""

    text: str | None = None
    calls: list[tuple[str, str, str]] = field(default_factory=list)
    """``(call_id, name, arguments)`` in the order the model made them."""
    model: str | None = None
    kept: bool = False
    """Whether the span kept the answer at all (a ``response`` span never does)."""


def _text(span: Span, key: str, content: Any) -> str | None:
    """A message's content (at ``key`` of the span's data): a text, or the texts of its parts."""
    if content is None or isinstance(content, str):
        return content
    parts = span.listed(key, "a text or a list of content parts", content)
    texts = []
    for i, part in enumerate(parts):
        text = span.mapping(f"{key}[{i}]", "a content part (an object)", part).get("text")
        if text is not None:  # an image, a refusal: no text
            texts.append(span.text(f"{key}[{i}].text", text) or "")
    return "".join(texts) if texts else None


def _objects(span: Span, key: str, what: tuple[str, str], value: Any) -> list[dict[str, Any]]:
    """A list of objects at ``key`` of the span's data (``what``: the list, and each object)."""
    found = span.listed(key, what[0], value)
    return [span.mapping(f"{key}[{i}]", f"{what[1]} (an object)", item) for i, item in enumerate(found)]


def _items(span: Span, key: str, items: Any, reply: Reply) -> None:
    """Responses output items (``items``, at ``key``): ``message`` and ``function_call``."""
    texts = []
    for i, item in enumerate(_objects(span, key, ("a list of output items", "an output item"), items)):
        at = f"{key}[{i}]"
        if item.get("type") == "message":
            text = _text(span, f"{at}.content", item.get("content"))
            if text is not None:
                texts.append(text)
        elif item.get("type") == "function_call":
            got = [span.text(f"{at}.{k}", item.get(k)) or "" for k in ("call_id", "name", "arguments")]
            reply.calls.append((got[0], got[1], got[2]))
    reply.text = "".join(texts) if texts else None


def reply_of(span: Span) -> Reply:
    """The reply a ``generation`` span's output holds: chat completion messages (the Chat
    Completions and LiteLLM models), a Responses dump (their streaming path) or output items."""
    reply = Reply(model=span.text("model"))
    if span.data.get("output") is None:
        return reply
    reply.kept = True
    messages = _objects(
        span,
        "output",
        ("a list of messages or output items", "a message or an output item"),
        span.data["output"],
    )
    if any("output" in m for m in messages):  # Response.model_dump()
        for i, dump in enumerate(messages):
            _items(span, f"output[{i}].output", dump.get("output"), reply)
            reply.model = reply.model or span.text(f"output[{i}].model", dump.get("model"))
        return reply
    if any(m.get("type") in ("message", "function_call") for m in messages):
        _items(span, "output", messages, reply)
        return reply
    found = [_text(span, f"output[{i}].content", m.get("content")) for i, m in enumerate(messages)]
    texts = [t for t in found if t is not None]
    reply.text = "".join(texts) if texts else None
    for i, message in enumerate(messages):
        key = f"output[{i}].tool_calls"
        for j, call in enumerate(
            _objects(span, key, ("a list of tool calls", "a tool call"), message.get("tool_calls"))
        ):
            at = f"{key}[{j}]"
            function = span.mapping(f"{at}.function", "an object ({name, arguments})", call.get("function"))
            reply.calls.append(
                (
                    span.text(f"{at}.id", call.get("id")) or "",
                    span.text(f"{at}.function.name", function.get("name")) or "",
                    span.text(f"{at}.function.arguments", function.get("arguments")) or "",
                )
            )
    return reply


def _inputs(span: Span) -> str | list[dict[str, Any]] | None:
    """A model span's ``input``: a prompt, or a list of messages and input items."""
    value = span.data.get("input") if span.kind == "generation" else None
    if value is None or isinstance(value, str):
        return value
    return _objects(span, "input", ("a text or a list of messages", "a message or an input item"), value)


def read_back(spans: Iterable[Span]) -> dict[str, str]:
    """What the model read for each call id, from the inputs model spans kept (chat ``tool``
    messages, Responses ``function_call_output`` items)."""
    seen: dict[str, str] = {}
    for span in spans:
        items = _inputs(span)
        for i, item in enumerate(items if isinstance(items, list) else ()):
            if item.get("role") == "tool":
                id_key, content_key = "tool_call_id", "content"
            elif item.get("type") == "function_call_output":
                id_key, content_key = "call_id", "output"
            else:
                continue
            call_id = span.text(f"input[{i}].{id_key}", item.get(id_key))
            content = _text(span, f"input[{i}].{content_key}", item.get(content_key))
            if call_id is not None and content is not None:
                seen[call_id] = content
    return seen


def prompt_in(span: Span) -> tuple[str, str | None] | None:
    """The user prompt and the system prompt of a model span's input (``None``: it kept none)."""
    items = _inputs(span)
    if isinstance(items, str):
        return items, None
    if items is None:
        return None
    roles = [
        (m.get("role"), _text(span, f"input[{i}].content", m.get("content"))) for i, m in enumerate(items)
    ]
    task = next((text for role, text in roles if role == "user" and text is not None), "")
    system = next((text for role, text in roles if role in ("system", "developer") and text), None)
    return task, system


def arguments(raw: Any) -> dict[str, Any] | str:
    """A call's arguments: the JSON object the model sent, else its raw text."""
    if raw is None or raw == "":
        return {}
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else raw
    except (ValueError, RecursionError):  # not JSON, or nested past reason: the model's text
        return str(raw)
    return parsed if isinstance(parsed, dict) else str(raw)
