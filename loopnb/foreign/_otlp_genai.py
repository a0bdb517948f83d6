"""What a span says about an agent run, by the conventions that name it.

Every ``gen_ai.*`` item of the GenAI semantic conventions is still at Development status, so
both the current and the previous names are read: ``gen_ai.input.messages`` /
``gen_ai.output.messages`` and the older message events (``gen_ai.user.message``,
``gen_ai.tool.message``, ``gen_ai.choice``: span events, or pydantic-ai's ``events``
attribute); ``gen_ai.usage.input_tokens`` and ``gen_ai.usage.prompt_tokens``; indexed
``gen_ai.prompt.N`` / ``gen_ai.completion.N`` attributes. pydantic-ai's own names
(``agent run``, ``running tool``, ``tool_arguments``, ``tool_response``, ``final_result``,
``pydantic_ai.tool.retry.*``) and OpenInference's (``openinference.span.kind``, ``tool.name``,
``input.value``, ``output.value``, ``llm.input_messages.N``, ``llm.token_count.*``) where present,
and loopnb's own (``loopnb.otel.Exporter``'s ``loopnb.producer`` and ``loopnb.soft_error`` event).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import Any, Literal, cast, get_args

from loopnb.engine._errors import SoftProducer
from loopnb.engine._messages import Usage
from loopnb.foreign._otlp_spans import Span
from loopnb.otel._exporter import ERROR_TEXT, PRODUCER, SOFT_ERROR

Role = Literal["agent", "chat", "tool", "other"]
_SOFT: frozenset[str] = frozenset(get_args(SoftProducer))

_OPERATIONS: dict[str, Role] = {
    "invoke_agent": "agent",
    "chat": "chat",
    "text_completion": "chat",
    "generate_content": "chat",
    "execute_tool": "tool",
}
_KINDS: dict[str, Role] = {"AGENT": "agent", "LLM": "chat", "TOOL": "tool"}
_NAMES: dict[str, Role] = {"agent run": "agent", "running tool": "tool", "running output function": "tool"}
_PREFIXES: tuple[tuple[str, Role], ...] = (
    ("invoke_agent", "agent"),
    ("execute_tool", "tool"),
    ("chat ", "chat"),
)


def role_of(span: Span) -> Role:
    """What the span is to a run: the agent's run, a model request, a tool's execution."""
    a = span.attributes
    op = a.get("gen_ai.operation.name")
    if isinstance(op, str) and op in _OPERATIONS:
        return _OPERATIONS[op]
    kind = a.get("openinference.span.kind")
    if isinstance(kind, str) and kind.upper() in _KINDS:
        return _KINDS[kind.upper()]
    if span.name in _NAMES:
        return _NAMES[span.name]
    return next((role for prefix, role in _PREFIXES if span.name.startswith(prefix)), "other")


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


def first(attrs: dict[str, Any], *names: str) -> Any:
    """The value of the first of ``names`` that ``attrs`` has."""
    for name in names:
        value = attrs.get(name)
        if value is not None:
            return value
    return None


def loads(value: Any) -> Any:
    """A JSON attribute's value (attributes hold JSON as strings; in memory it may be parsed)."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def dumps(value: Any) -> str:
    """A value as the text a model reads: a string as is, anything else compact JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _semconv_messages(raw: Any) -> list[Message]:
    """``gen_ai.input.messages`` / ``gen_ai.output.messages``: ``[{role, parts: [...]}]``."""
    out: list[Message] = []
    for msg in raw if isinstance(raw, list) else ():
        if not isinstance(msg, dict):
            continue
        parts: list[Part] = []
        for p in msg.get("parts") or ():
            kind = p.get("type") if isinstance(p, dict) else None
            if kind == "text":
                parts.append(Part("text", p.get("content")))
            elif kind == "tool_call":
                parts.append(
                    Part("tool_call", p.get("arguments"), str(p.get("id") or ""), str(p.get("name") or ""))
                )
            elif kind == "tool_call_response":
                parts.append(
                    Part("tool_call_response", p.get("result", p.get("response")), str(p.get("id") or ""))
                )
        out.append(Message(str(msg.get("role", "")), parts))
    return out


def _event_message(name: str, body: dict[str, Any]) -> Message | None:
    """One message event of the previous conventions (``gen_ai.assistant.message``, ...)."""
    if name == "gen_ai.choice":
        body = loads(body.get("message")) or {}
        if not isinstance(body, dict):
            return None
        name = "gen_ai.assistant.message"
    role = name.removeprefix("gen_ai.").removesuffix(".message")
    msg = Message(str(body.get("role") or role))
    if role == "tool":
        msg.parts.append(Part("tool_call_response", loads(body.get("content")), str(body.get("id") or "")))
        return msg
    if body.get("content") is not None:
        msg.parts.append(Part("text", body.get("content")))
    for call in loads(body.get("tool_calls")) or ():
        if isinstance(call, dict):
            fn = call.get("function") or {}
            msg.parts.append(
                Part(
                    "tool_call",
                    loads(fn.get("arguments")),
                    str(call.get("id") or ""),
                    str(fn.get("name") or ""),
                )
            )
    return msg


def _events_messages(span: Span) -> tuple[list[Message], list[Message]] | None:
    """The previous conventions' message events: pydantic-ai's ``events`` attribute, or span
    events named ``gen_ai.*.message`` / ``gen_ai.choice``."""
    bodies: list[tuple[str, dict[str, Any]]] = []
    raw = loads(span.attributes.get("events"))
    if isinstance(raw, list):
        bodies = [(str(e.get("event.name", "")), e) for e in raw if isinstance(e, dict)]
    else:
        bodies = [(e.name, e.attributes) for e in span.events if e.name.startswith("gen_ai.")]
    if not bodies:
        return None
    inputs: list[Message] = []
    outputs: list[Message] = []
    for name, body in bodies:
        if not (name.endswith(".message") or name == "gen_ai.choice"):
            continue
        msg = _event_message(name, body)
        if msg is not None:
            (outputs if name == "gen_ai.choice" else inputs).append(msg)
    return inputs, outputs


def _indexed(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """Flattened attributes ``<prefix>.<i>.<rest>`` grouped by ``i``: ``[{rest: value}, ...]``."""
    groups: dict[int, dict[str, Any]] = {}
    dotted = prefix + "."
    for key, value in attrs.items():
        if key.startswith(dotted):
            index, _, rest = key[len(dotted) :].partition(".")
            if index.isdigit():
                groups.setdefault(int(index), {})[rest] = value
    return [groups[i] for i in sorted(groups)]


def _flat_messages(attrs: dict[str, Any], prefix: str, style: str) -> list[Message]:
    """OpenInference's ``llm.*_messages.N.message.*`` or the older ``gen_ai.prompt.N.*``."""
    lead = "message." if style == "openinference" else ""
    out: list[Message] = []
    for group in _indexed(attrs, prefix):
        role = str(group.get(lead + "role") or "")
        msg = Message(role)
        call_id = group.get(lead + "tool_call_id")
        content = group.get(lead + "content")
        if role == "tool" or call_id is not None:
            msg.parts.append(Part("tool_call_response", content, str(call_id or "")))
            out.append(msg)
            continue
        if content is not None:
            msg.parts.append(Part("text", content))
        calls = _indexed({k: v for k, v in group.items()}, lead + "tool_calls")
        for call in calls:
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


def messages(span: Span, history: History | None = None) -> tuple[list[Message] | None, list[Message] | None]:
    """A model request's input and output messages (``None`` where the span kept none);
    ``history``: the run's requests read so far, in order (an input that repeats the previous
    request's and adds to it is read from where that one ended)."""
    a = span.attributes
    inputs = a.get("gen_ai.input.messages")
    outputs = a.get("gen_ai.output.messages")
    if inputs is not None or outputs is not None:
        if inputs is None:
            read_in = None
        else:
            read_in = history.read(inputs) if history is not None else _semconv_messages(loads(inputs))
        return read_in, None if outputs is None else _semconv_messages(loads(outputs))
    events = _events_messages(span)
    if events is not None:
        return events
    for style, prefix_in, prefix_out in (
        ("openinference", "llm.input_messages", "llm.output_messages"),
        ("semconv", "gen_ai.prompt", "gen_ai.completion"),
    ):
        if any(k.startswith(prefix_in + ".") or k.startswith(prefix_out + ".") for k in a):
            return _flat_messages(a, prefix_in, style), _flat_messages(a, prefix_out, style)
    return None, None


class History:
    """The input messages of one run's requests, read in turn.

    A framework that sends the whole history with every request (pydantic-ai) writes each
    request's ``gen_ai.input.messages`` as the previous one's JSON with the new messages before
    its closing bracket: that input is read from there on, and the messages read before are
    kept, so reading a request costs what it adds rather than the length of the run.
    """

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last: tuple[str, list[Message]] | None = None

    def read(self, raw: Any) -> list[Message]:
        """``gen_ai.input.messages`` (a JSON text, or its value) as messages."""
        if not isinstance(raw, str):
            return _semconv_messages(loads(raw))
        last = self._last
        found: list[Message] | None = None
        if last is not None:
            before, read = last
            n = len(before)
            if len(raw) > n and raw[n - 1] == "," and before[-1] == "]" and raw.startswith(before[:-1]):
                try:
                    added = json.loads("[" + raw[n:])  # what follows the last message read
                except json.JSONDecodeError:
                    added = None
                if isinstance(added, list):
                    found = read + _semconv_messages(added)
        if found is None:
            value = loads(raw)
            found = _semconv_messages(value)
            if not isinstance(value, list):
                self._last = None
                return found
        self._last = (raw, found)
        return found


def usage(span: Span) -> Usage | None:
    """The request's token usage, by the current, the previous or OpenInference's names."""
    a = span.attributes
    inp = first(a, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt")
    out = first(
        a, "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens", "llm.token_count.completion"
    )
    if inp is None and out is None:
        return None
    return Usage(input_tokens=_count(inp), output_tokens=_count(out))


def _count(value: Any) -> int:
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError):
        return 0


def model(span: Span) -> str | None:
    """The model that answered (or was asked)."""
    value = first(
        span.attributes,
        "gen_ai.response.model",
        "gen_ai.request.model",
        "llm.model_name",
        "llm.response.model",
    )
    return None if value is None else str(value)


def _tool_name(definition: Any) -> str | None:
    if isinstance(definition, dict):
        fn = definition.get("function")
        name = fn.get("name") if isinstance(fn, dict) else definition.get("name")
        return None if name is None else str(name)
    return None


Names = tuple[tuple[str, ...] | None, tuple[str, ...]]


def _declared_values(params: Any, defs: Any) -> Names | None:
    output: tuple[str, ...] = ()
    if isinstance(params, dict):
        output = tuple(n for n in map(_tool_name, params.get("output_tools") or ()) if n)
    if isinstance(defs, list):
        return tuple(n for n in map(_tool_name, defs) if n), output
    if isinstance(params, dict):
        names = tuple(n for n in map(_tool_name, params.get("function_tools") or ()) if n)
        return names + output, output
    return None


@functools.lru_cache(maxsize=64)
def _declared(params: str | None, defs: str | None) -> Names | None:
    """``_declared_values`` of the JSON texts (the same few texts recur on every request)."""
    return _declared_values(loads(params), loads(defs))


def tools(span: Span) -> tuple[list[str] | None, list[str]]:
    """The tools a model request offered (``None`` when the span does not say) and, of them,
    pydantic-ai's output tools (``final_result``), whose plain validation makes no span."""
    a = span.attributes
    params, defs = a.get("model_request_parameters"), a.get("gen_ai.tool.definitions")
    if (params is None or isinstance(params, str)) and (defs is None or isinstance(defs, str)):
        found = _declared(params, defs)
    else:
        found = _declared_values(loads(params), loads(defs))
    if found is not None:
        return (None if found[0] is None else list(found[0])), list(found[1])
    schemas = _indexed(a, "llm.tools")
    if schemas:
        return [n for n in (_tool_name(loads(s.get("tool.json_schema"))) for s in schemas) if n], []
    return None, []


@dataclass(slots=True)
class ToolSpan:
    """What a tool span says of the call it ran."""

    span: Span
    name: str
    call_id: str
    arguments: Any
    """As recorded: a JSON text, most often (parsed only when no request output names the call)."""
    result: Any
    exception: tuple[str, str] | None
    """The recorded exception's type and message."""


def exception(span: Span) -> tuple[str, str] | None:
    """The last ``exception`` event's type and message."""
    for event in reversed(span.events):
        if event.name == "exception":
            a = event.attributes
            return str(a.get("exception.type") or ""), str(a.get("exception.message") or "")
    return None


def tool_span(span: Span) -> ToolSpan:
    a = span.attributes
    name = first(a, "gen_ai.tool.name", "tool.name")
    if name is None:
        name = span.name.removeprefix("execute_tool").strip() if span.name.startswith("execute_tool") else ""
    return ToolSpan(
        span=span,
        name=str(name),
        call_id=str(first(a, "gen_ai.tool.call.id", "tool_call.id", "tool.call.id") or ""),
        arguments=first(a, "gen_ai.tool.call.arguments", "tool_arguments", "input.value"),
        result=first(a, "gen_ai.tool.call.result", "tool_response", "output.value"),
        exception=exception(span),
    )


def agent_name(span: Span) -> str | None:
    value = first(span.attributes, "gen_ai.agent.name", "agent_name")
    return None if value is None else str(value)


def system_text(span: Span) -> str | None:
    """The system instructions a model request (or an agent run) recorded."""
    raw = loads(span.attributes.get("gen_ai.system_instructions"))
    if isinstance(raw, list):
        texts = [str(p.get("content", "")) for p in raw if isinstance(p, dict) and p.get("type") == "text"]
        return "\n\n".join(texts) or None
    return raw if isinstance(raw, str) else None


def final_output(span: Span) -> str | None:
    """What an agent run answered: pydantic-ai's ``final_result``, OpenInference's ``output.value``."""
    value = first(span.attributes, "final_result", "output.value")
    return None if value is None else dumps(value)


def loopnb_producer(span: Span) -> str | None:
    """The producer loopnb's exporter wrote on a span (``loopnb.producer``), if any."""
    value = span.attributes.get(PRODUCER)
    return value if isinstance(value, str) and value else None


def loopnb_soft(span: Span) -> tuple[SoftProducer, str] | None:
    """The soft error loopnb's exporter recorded on a span: its producer and the text the model read."""
    for event in span.events:
        if event.name == SOFT_ERROR:
            producer = event.attributes.get(PRODUCER) or loopnb_producer(span)
            if producer in _SOFT:
                return cast(SoftProducer, producer), str(event.attributes.get(ERROR_TEXT) or "")
    return None


def loopnb_turn(span: Span) -> int | None:
    """The turn loopnb's exporter numbered a span with (``loopnb.turn``), if any."""
    value = span.attributes.get("loopnb.turn")
    return value if isinstance(value, int) and not isinstance(value, bool) else None
