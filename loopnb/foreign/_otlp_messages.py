"""A model request span's input and output messages, by each convention that writes them down.

The current GenAI names (``gen_ai.input.messages`` / ``gen_ai.output.messages``: JSON lists of
``{role, parts}``); the previous ones' message events (``gen_ai.user.message``,
``gen_ai.tool.message``, ``gen_ai.choice``: span events, or pydantic-ai's ``events``
attribute); OpenInference's ``llm.input_messages.N.message.*`` and the older indexed
``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*``. A message event's content may be a list of
content blocks (Strands Agents writes Bedrock's: ``{"text"}``, ``{"toolUse"}``, ``{"toolResult"}``),
read as parts. A value of the wrong shape (a message that is not an object, ``parts`` or
``tool_calls`` that are not lists, blocks of which none is text, a call or a result) is a
``RecordingError`` naming the span, the attribute and what was expected; given an ``Unread``, the
input, output or event it is in is skipped instead and the rest is read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from loopnb.foreign._formats import Unread
from loopnb.foreign._otlp_genai import Malformed, bad, dumps, indexed, label, loads
from loopnb.foreign._otlp_spans import Span

T = TypeVar("T")

INPUTS = "gen_ai.input.messages"
OUTPUTS = "gen_ai.output.messages"


@dataclass(slots=True)
class Part:
    """One part of a message: ``text``, a ``tool_call`` or a ``tool_call_response``."""

    kind: str
    content: Any = None
    """The text, the call's arguments, or the response's result."""
    id: str = ""
    name: str = ""


@dataclass(slots=True)
class Message:
    role: str
    parts: list[Part] = field(default_factory=list)


def _semconv(raw: Any, where: str, start: int = 0) -> list[Message]:
    """``gen_ai.input.messages`` / ``gen_ai.output.messages``: ``[{role, parts: [...]}]``
    (``start``: the index of the first of ``raw`` in the attribute's list)."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise Malformed(where, "a JSON list of messages", raw)
    out: list[Message] = []
    for i, msg in enumerate(raw, start):
        if not isinstance(msg, dict):
            raise Malformed(f"{where}[{i}]", "a message object ({role, parts})", msg)
        found = msg.get("parts")
        if found is not None and not isinstance(found, list):
            raise Malformed(f"{where}[{i}].parts", "a list of parts", found)
        parts: list[Part] = []
        for j, p in enumerate(found or ()):
            if not isinstance(p, dict):
                raise Malformed(f"{where}[{i}].parts[{j}]", "a part object ({type, ...})", p)
            kind = p.get("type")
            if kind == "text":
                parts.append(Part("text", p.get("content")))
            elif kind == "tool_call":
                parts.append(
                    Part("tool_call", p.get("arguments"), str(p.get("id") or ""), str(p.get("name") or ""))
                )
            elif kind == "tool_call_response":
                response = p.get("result", p.get("response"))
                if _is_blocks(response):  # Strands writes a result's content blocks
                    response = _block_text(response)
                parts.append(Part("tool_call_response", response, str(p.get("id") or "")))
        out.append(Message(str(msg.get("role", "")), parts))
    return out


_BLOCKS = "a message object, a text or a list of content blocks (text, toolUse, toolResult)"


def _is_blocks(value: Any) -> bool:
    """Whether ``value`` is a list of content blocks (``[{"text": ...}, ...]``)."""
    return isinstance(value, list) and bool(value) and all(isinstance(b, dict) and "text" in b for b in value)


def _block_text(blocks: Any) -> str:
    """The text of a tool result's content blocks: their texts, and any other block as JSON."""
    if not isinstance(blocks, list):
        return dumps(blocks)
    return "\n".join(
        b["text"] if isinstance(b.get("text"), str) else dumps(b) for b in blocks if isinstance(b, dict)
    )


def _blocks(value: Any, *, results: bool = False) -> list[Part] | None:
    """Content blocks (Bedrock's, as Strands Agents writes a message's content) as parts, or
    ``None`` when ``value`` holds none: not a list of objects, or (``results``: a tool message's)
    none a ``toolResult``."""
    if not isinstance(value, list) or not value or not all(isinstance(b, dict) for b in value):
        return None
    parts: list[Part] = []
    for block in value:
        use, result, text = block.get("toolUse"), block.get("toolResult"), block.get("text")
        if isinstance(text, str):
            parts.append(Part("text", text))
        elif isinstance(use, dict):
            parts.append(
                Part(
                    "tool_call", use.get("input"), str(use.get("toolUseId") or ""), str(use.get("name") or "")
                )
            )
        elif isinstance(result, dict):
            parts.append(
                Part(
                    "tool_call_response",
                    _block_text(result.get("content")),
                    str(result.get("toolUseId") or ""),
                )
            )
    if not parts or (results and not any(p.kind == "tool_call_response" for p in parts)):
        return None
    return parts


def _event_message(name: str, body: dict[str, Any], where: str) -> Message | None:
    """One message event of the previous conventions (``gen_ai.assistant.message``, ...)."""
    if name == "gen_ai.choice":
        found = loads(body.get("message"))
        if found is None:
            return None
        where += ".message"
        if isinstance(found, str):  # an agent's answer, as Strands writes it
            return Message("assistant", [Part("text", found)])
        if isinstance(found, list):  # the message's content blocks, as Strands writes them
            parts = _blocks(found)
            if parts is None:
                raise Malformed(where, _BLOCKS, found)
            return Message("assistant", parts)
        if not isinstance(found, dict):
            raise Malformed(where, _BLOCKS, found)
        body, name = found, "gen_ai.assistant.message"
    role = name.removeprefix("gen_ai.").removesuffix(".message")
    msg = Message(str(body.get("role") or role))
    content = body.get("content")
    blocks = _blocks(
        loads(content) if isinstance(content, str) and content.startswith("[") else content,
        results=role == "tool",
    )
    if blocks is not None:
        msg.parts.extend(blocks)
        return msg
    if role == "tool":
        msg.parts.append(Part("tool_call_response", loads(body.get("content")), str(body.get("id") or "")))
        return msg
    if body.get("content") is not None:
        msg.parts.append(Part("text", body.get("content")))
    calls = loads(body.get("tool_calls"))
    if calls is not None and not isinstance(calls, list):
        raise Malformed(f"{where}.tool_calls", "a list of tool calls", calls)
    for i, call in enumerate(calls or ()):
        if not isinstance(call, dict):
            raise Malformed(f"{where}.tool_calls[{i}]", "a tool call object", call)
        fn = call.get("function") or {}
        if not isinstance(fn, dict):
            raise Malformed(f"{where}.tool_calls[{i}].function", "an object ({name, arguments})", fn)
        name, call_id = str(fn.get("name") or ""), str(call.get("id") or "")
        msg.parts.append(Part("tool_call", loads(fn.get("arguments")), call_id, name))
    return msg


def _events(span: Span, unread: Unread | None) -> tuple[list[Message], list[Message]] | None:
    """The previous conventions' message events: pydantic-ai's ``events`` attribute, or span
    events named ``gen_ai.*.message`` / ``gen_ai.choice`` (one that cannot be read goes to
    ``unread``)."""
    bodies: list[tuple[str, dict[str, Any], str]] = []
    raw = loads(span.attributes.get("events"))
    if isinstance(raw, list):
        bodies = [
            (str(e.get("event.name", "")), e, f"events[{i}]")
            for i, e in enumerate(raw)
            if isinstance(e, dict)
        ]
    else:
        bodies = [
            (e.name, e.attributes, f"event {e.name}") for e in span.events if e.name.startswith("gen_ai.")
        ]
    if not bodies:
        return None
    inputs: list[Message] = []
    outputs: list[Message] = []
    for name, body, where in bodies:
        if not (name.endswith(".message") or name == "gen_ai.choice"):
            continue
        msg = _guarded(span, unread, lambda: _event_message(name, body, where), None)  # noqa: B023  (called at once)
        if msg is not None:
            (outputs if name == "gen_ai.choice" else inputs).append(msg)
    return inputs, outputs


def _contents(group: dict[str, Any], lead: str) -> str | None:
    """OpenInference's multi-part content (``message.contents.N.message_content.text``, as
    smolagents' instrumentation writes every message): its texts, one after another."""
    texts = [
        str(part["message_content.text"])
        for part in indexed(group, lead + "contents")
        if part.get("message_content.text") is not None
    ]
    return "\n".join(texts) if texts else None


_RESULT_ROLES = frozenset({"tool", "tool-response"})
"""The roles of a message that gives results back: ``tool``, and smolagents' ``tool-response`` (its
observations and the errors it gives the model, with no call id)."""


def _flat(attrs: dict[str, Any], prefix: str, style: str) -> list[Message]:
    """OpenInference's ``llm.*_messages.N.message.*`` or the older ``gen_ai.prompt.N.*``."""
    lead = "message." if style == "openinference" else ""
    out: list[Message] = []
    for group in indexed(attrs, prefix):
        role = str(group.get(lead + "role") or "")
        msg = Message(role)
        call_id = group.get(lead + "tool_call_id")
        content = group.get(lead + "content")
        if content is None and style == "openinference":
            content = _contents(group, lead)
        if role in _RESULT_ROLES or call_id is not None:
            msg.parts.append(Part("tool_call_response", content, str(call_id or "")))
            out.append(msg)
            continue
        if content is not None:
            msg.parts.append(Part("text", content))
        for call in indexed(group, lead + "tool_calls"):
            if style == "openinference":
                name, args, cid = (
                    call.get("tool_call.function.name"),
                    call.get("tool_call.function.arguments"),
                    call.get("tool_call.id"),
                )
            else:
                name, args, cid = call.get("name"), call.get("arguments"), call.get("id")
            msg.parts.append(Part("tool_call", loads(args), str(cid or ""), str(name or "")))
        out.append(msg)
    return out


def messages(
    span: Span, history: History | None = None, unread: Unread | None = None
) -> tuple[list[Message] | None, list[Message] | None]:
    """A model request's input and output messages (``None`` where the span kept none);
    ``history``: the run's requests read so far, in order (of an input that repeats the previous
    request's and adds to it, only the messages it adds are read and given). With ``unread``, an input,
    output or message event that cannot be read goes to it and is read as absent."""
    try:
        return _messages(span, history, unread)
    except Malformed as exc:
        raise bad(span, exc) from None


def _guarded(span: Span, unread: Unread | None, read: Callable[[], T], absent: T) -> T:
    """``read()``; with ``unread``, ``absent`` when it finds a malformed value (``unread`` says
    which), else the ``Malformed`` is raised."""
    if unread is None:
        return read()
    try:
        return read()
    except Malformed as exc:
        unread.skip(label(span), bad(span, exc))
        return absent


def _messages(
    span: Span, history: History | None, unread: Unread | None
) -> tuple[list[Message] | None, list[Message] | None]:
    a = span.attributes
    inputs, outputs = a.get(INPUTS), a.get(OUTPUTS)
    if inputs is None and outputs is None:
        inputs, outputs = _details(span)
    if inputs is not None or outputs is not None:
        read: list[Message] | None = None
        if inputs is not None:
            reader = history.read if history is not None else lambda raw: _semconv(loads(raw), INPUTS)
            read = _guarded(span, unread, lambda: reader(inputs), None)
        if outputs is None:
            return read, None
        return read, _guarded(span, unread, lambda: _semconv(loads(outputs), OUTPUTS), None)
    events = _events(span, unread)
    if events is not None:
        return events
    for style, prefix_in, prefix_out in (
        ("openinference", "llm.input_messages", "llm.output_messages"),
        ("semconv", "gen_ai.prompt", "gen_ai.completion"),
    ):
        if any(k.startswith(prefix_in + ".") or k.startswith(prefix_out + ".") for k in a):
            return _flat(a, prefix_in, style), _flat(a, prefix_out, style)
    return None, None


DETAILS = "gen_ai.client.inference.operation.details"
"""The event the GenAI conventions put a request's messages in where they are not span attributes
(Strands Agents' latest conventions write them so)."""


def _details(span: Span) -> tuple[Any, Any]:
    """``gen_ai.input.messages`` and ``gen_ai.output.messages`` from the span's ``DETAILS`` events."""
    found: dict[str, Any] = {}
    for event in span.events:
        if event.name == DETAILS:
            found.update((k, v) for k, v in event.attributes.items() if k in (INPUTS, OUTPUTS))
    return found.get(INPUTS), found.get(OUTPUTS)


class History:
    """The input messages of one run's requests, read in turn.

    A framework that sends the whole history with every request (pydantic-ai) writes each
    request's ``gen_ai.input.messages`` as the previous one's JSON with the new messages before
    its closing bracket: only those are read, so reading a request costs what it adds rather than
    the length of the run. Only they are needed: the results a request gives back are to the calls
    of the request before it, so they are among the messages it added. An input is taken to extend
    the previous one when it is longer, has a comma where that one closed, begins as that one
    began and ends its part the same way (``SEAM`` characters each: bounded, so that checking does
    not grow with the run either), and what follows the comma reads as a list of messages.
    """

    __slots__ = ("_count", "_end", "_head", "_seam")

    SEAM = 256
    """How many characters of the previous input's beginning and of its end are compared."""

    def __init__(self) -> None:
        self._end = 0
        """The length of the previous input's JSON text (0: nothing to extend)."""
        self._head = self._seam = ""
        self._count = 0
        """How many messages the inputs read so far hold."""

    def read(self, raw: Any) -> list[Message]:
        """``gen_ai.input.messages`` (a JSON text, or its value) as messages: the ones added since
        the previous request's, when this input extends it, else all of them."""
        end, count = self._end, self._count
        self._end = 0
        if not isinstance(raw, str):
            return _semconv(loads(raw), INPUTS)
        if end and len(raw) > end and raw[end - 1] == "," and self._extends(raw, end):
            added = loads("[" + raw[end:])  # what follows the last message read (a text if not JSON)
            if isinstance(added, list):
                found = _semconv(added, INPUTS, count)
                self._note(raw, count + len(found))
                return found
        value = loads(raw)
        found = _semconv(value, INPUTS)
        if isinstance(value, list):
            self._note(raw, len(found))
        return found

    def _extends(self, raw: str, end: int) -> bool:
        """Whether ``raw`` begins as the previous input did and has its end before ``end``."""
        seam = self._seam
        return raw.startswith(self._head) and raw.startswith(seam, end - 1 - len(seam))

    def _note(self, raw: str, count: int) -> None:
        """Keep where ``raw``, an input of ``count`` messages, ends, for the next to extend."""
        stripped = raw.rstrip()
        if stripped.endswith("]"):
            end = len(stripped)
            self._end, self._count = end, count
            self._head, self._seam = raw[: self.SEAM], raw[max(0, end - 1 - self.SEAM) : end - 1]
