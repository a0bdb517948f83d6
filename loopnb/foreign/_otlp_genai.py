"""What a span says about an agent run, by the conventions that name it.

Every ``gen_ai.*`` item of the GenAI semantic conventions is still at Development status, so
both the current and the previous names are read (the messages: ``_otlp_messages``):
``gen_ai.usage.input_tokens`` and ``gen_ai.usage.prompt_tokens``, ``gen_ai.tool.definitions``
and the indexed ``llm.tools.N``. pydantic-ai's own names
(``agent run``, ``running tool``, ``tool_arguments``, ``tool_response``, ``final_result``,
``pydantic_ai.tool.retry.*``) and OpenInference's (``openinference.span.kind``, ``tool.name``,
``input.value``, ``output.value``, ``llm.input_messages.N``, ``llm.token_count.*``) where present,
and loopnb's own (``loopnb.otel.Exporter``'s ``loopnb.producer`` and ``loopnb.soft_error`` event).
A value of the wrong shape is a ``RecordingError`` naming the span, the attribute and what was
expected (``Malformed``, then ``bad``).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any, Literal, cast, get_args

from loopnb.engine import Usage
from loopnb.engine._errors import SoftProducer
from loopnb.foreign._otlp_profile import CHANNEL, ERROR_TEXT, PRODUCER, SOFT_ERROR
from loopnb.foreign._otlp_spans import Span
from loopnb.foreign._otlp_values import Bad, describe, integer
from loopnb.record import RecordingError

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


_REQUEST = ("llm.input_messages.", "llm.output_messages.", "llm.tools.", "llm.token_count.")
"""What an OpenInference ``LLM`` span that stands for a model request records (any of them)."""


def entry_chain(span: Span) -> bool:
    """Whether ``span`` is an OpenInference ``CHAIN`` with no parent: an application's entry point,
    a run of its own where no agent span below it has the turns (a LangGraph graph), else only
    around the agents' runs (a CrewAI crew's kickoff)."""
    return span.parent_id is None and span.attributes.get("openinference.span.kind") == "CHAIN"


def role_of(span: Span) -> Role:
    """What the span is to a run: the agent's run, a model request, a tool's execution."""
    a = span.attributes
    op = a.get("gen_ai.operation.name")
    if isinstance(op, str) and op in _OPERATIONS:
        return _OPERATIONS[op]
    kind = a.get("openinference.span.kind")
    if kind == "LLM" and not any(k.startswith(_REQUEST) for k in a):
        return "other"  # it records no request (LlamaIndex's _prepare_chat_with_tools builds one)
    if isinstance(kind, str) and kind.upper() in _KINDS:
        return _KINDS[kind.upper()]
    if entry_chain(span):  # OpenInference's entry point (a LangGraph graph): the run, if it has turns
        return "agent"
    if span.name in _NAMES:
        return _NAMES[span.name]
    return next((role for prefix, role in _PREFIXES if span.name.startswith(prefix)), "other")


class Malformed(Exception):
    """A value that is not what its convention says: ``where`` (the attribute, and where in its
    value), what was ``expected``, and what was found; ``bad`` names the span it is on."""

    def __init__(self, where: str, expected: str, found: Any) -> None:
        super().__init__(f"{where}: expected {expected}, found {describe(found)}")


def label(span: Span) -> str:
    """Where a span is and which it is, as an error names it."""
    return (
        f"{span.where}, span {span.span_id} {span.name!r}"
        if span.where
        else f"span {span.span_id} {span.name!r}"
    )


def bad(span: Span, exc: Malformed) -> RecordingError:
    """The ``RecordingError`` of a malformed value on ``span``: where the span is, which span, what."""
    return RecordingError(f"{label(span)}, {exc}")


def first(attrs: dict[str, Any], *names: str) -> Any:
    """The value of the first of ``names`` that ``attrs`` has."""
    for name in names:
        value = attrs.get(name)
        if value is not None:
            return value
    return None


_SCAN = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # the C scanner, untyped
"""json's own scanner, which ``json.loads`` wraps in two regular-expression matches and three
Python calls: an attribute that is exactly one JSON value (as every writer writes one) is read by
it alone; anything else takes ``json.loads``'s way, and its answer."""


def loads(value: Any) -> Any:
    """A JSON attribute's value (attributes hold JSON as strings; in memory it may be parsed)."""
    if isinstance(value, str):
        try:
            found, end = _SCAN(value, 0)
            if end == len(value):
                return found
        except (StopIteration, ValueError, RecursionError):  # not JSON from its first character
            pass
        try:
            return json.loads(value)
        except (ValueError, RecursionError):  # not JSON (nested past reason, too long a number): text
            return value
    return value


def dumps(value: Any) -> str:
    """A value as the text a model reads: a string as is, anything else compact JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def indexed(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """Flattened attributes ``<prefix>.<i>.<rest>`` grouped by ``i``: ``[{rest: value}, ...]``."""
    groups: dict[int, dict[str, Any]] = {}
    dotted = prefix + "."
    for key, value in attrs.items():
        if key.startswith(dotted):
            index, _, rest = key[len(dotted) :].partition(".")
            if index.isascii() and index.isdecimal() and len(index) < 10:  # not "²", which int() refuses
                groups.setdefault(int(index), {})[rest] = value
    return [groups[i] for i in sorted(groups)]


_INPUT_TOKENS = ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt")
_OUTPUT_TOKENS = (
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.completion_tokens",
    "llm.token_count.completion",
)


def usage(span: Span) -> Usage | None:
    """The request's token usage, by the current, the previous or OpenInference's names."""
    inp, out = _count(span, _INPUT_TOKENS), _count(span, _OUTPUT_TOKENS)
    if inp is None and out is None:
        return None
    return Usage(input_tokens=inp or 0, output_tokens=out or 0)


def _count(span: Span, names: tuple[str, ...]) -> int | None:
    """The first of the attributes ``names`` that ``span`` has, as a number of tokens."""
    for name in names:
        value = span.attributes.get(name)
        if value is None:
            continue
        try:
            count = integer(value, name)  # a number or a decimal text: not 1e400, NaN or "²"
        except Bad:
            count = -1
        if not 0 <= count < 2**63:
            raise bad(span, Malformed(name, "a whole number of tokens", value))
        return count
    return None


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
        output = tuple(n for n in map(_tool_name, _definitions(params, "output_tools")) if n)
    if isinstance(defs, list):
        return tuple(n for n in map(_tool_name, defs) if n), output
    if isinstance(params, dict):
        names = tuple(n for n in map(_tool_name, _definitions(params, "function_tools")) if n)
        return names + output, output
    return None


def _definitions(params: dict[str, Any], name: str) -> list[Any]:
    """pydantic-ai's ``model_request_parameters.<name>``: a list of tool definitions."""
    found = params.get(name)
    if found is not None and not isinstance(found, list):
        raise Malformed(f"model_request_parameters.{name}", "a list of tool definitions", found)
    return found or []


@functools.lru_cache(maxsize=64)
def _declared(params: str | None, defs: str | None) -> Names | None:
    """``_declared_values`` of the JSON texts (the same few texts recur on every request)."""
    return _declared_values(loads(params), loads(defs))


def tools(span: Span) -> tuple[list[str] | None, list[str]]:
    """The tools a model request offered (``None`` when the span does not say) and, of them,
    pydantic-ai's output tools (``final_result``), whose plain validation makes no span."""
    a = span.attributes
    params, defs = a.get("model_request_parameters"), a.get("gen_ai.tool.definitions")
    try:
        if (params is None or isinstance(params, str)) and (defs is None or isinstance(defs, str)):
            found = _declared(params, defs)
        else:
            found = _declared_values(loads(params), loads(defs))
    except Malformed as exc:
        raise bad(span, exc) from None
    if found is not None:
        return (None if found[0] is None else list(found[0])), list(found[1])
    schemas = indexed(a, "llm.tools")
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
    schema: Any = None
    """The tool's JSON schema, as the tool span (``gen_ai.tool.json_schema``) or the request that
    offered the tool (its ``gen_ai.tool.definitions``) records it."""


def exception(span: Span) -> tuple[str, str] | None:
    """The last ``exception`` event's type and message."""
    for event in reversed(span.events):
        if event.name == "exception":
            a = event.attributes
            return str(a.get("exception.type") or ""), str(a.get("exception.message") or "")
    return None


def error_class(span: Span) -> str | None:
    """The class of error a span ended with: its ``error.type`` (the conventions' word), else its
    last exception's type, without a module path; ``None`` when it names none."""
    typed = span.attributes.get("error.type")
    exc = exception(span)
    kind = typed if isinstance(typed, str) and typed else (exc[0] if exc else "")
    return kind.rsplit(".", 1)[-1] or None


def _call_id(value: Any) -> str:
    """A tool span's call id; none where it says it has none (Google ADK's ``<not specified>``)."""
    return "" if value is None or value == "<not specified>" else str(value)


@functools.lru_cache(maxsize=64)
def _parameters(defs: str) -> dict[str, Any]:
    """Each tool's parameters (its JSON schema) in a ``gen_ai.tool.definitions`` text, by name."""
    found = loads(defs)
    out: dict[str, Any] = {}
    for d in found if isinstance(found, list) else ():
        name, fn = _tool_name(d), d.get("function") if isinstance(d, dict) else None
        params = (fn if isinstance(fn, dict) else d).get("parameters") if isinstance(d, dict) else None
        if name is not None and isinstance(params, dict):
            out[name] = params
    return out


@functools.lru_cache(maxsize=64)
def _pydantic_ai_parameters(params: str) -> dict[str, Any]:
    """Each function tool's parameters in pydantic-ai's ``model_request_parameters`` text (what
    pydantic-ai-slim 1.0 records where later releases add ``gen_ai.tool.definitions``), by name."""
    found = loads(params)
    tools = found.get("function_tools") if isinstance(found, dict) else None
    out: dict[str, Any] = {}
    for d in tools if isinstance(tools, list) else ():
        schema = d.get("parameters_json_schema") if isinstance(d, dict) else None
        if isinstance(d.get("name"), str) and isinstance(schema, dict):
            out[d["name"]] = schema
    return out


def _offered_schemas(chat: Span) -> dict[str, Any]:
    """Each tool's parameters a request offered, by name: its ``gen_ai.tool.definitions``,
    pydantic-ai's ``model_request_parameters``, or OpenInference's ``llm.tools.N.tool.json_schema``."""
    defs = chat.attributes.get("gen_ai.tool.definitions")
    if isinstance(defs, str):
        return _parameters(defs)
    params = chat.attributes.get("model_request_parameters")
    if isinstance(params, str):
        return _pydantic_ai_parameters(params)
    schemas = [s.get("tool.json_schema") for s in indexed(chat.attributes, "llm.tools")]
    return _parameters(json.dumps([loads(s) for s in schemas if isinstance(s, str)])) if schemas else {}


def tool_span(span: Span, chat: Span | None = None) -> ToolSpan:
    """What ``span`` says of the call it ran (``chat``: the request that asked for it)."""
    a = span.attributes
    name = first(a, "gen_ai.tool.name", "tool.name")
    if name is None:
        name = span.name.removeprefix("execute_tool").strip() if span.name.startswith("execute_tool") else ""
    schema = loads(a.get("gen_ai.tool.json_schema"))
    if schema is None and chat is not None:
        schema = _offered_schemas(chat).get(str(name))
    return ToolSpan(
        span=span,
        name=str(name),
        call_id=_call_id(first(a, "gen_ai.tool.call.id", "tool_call.id", "tool.call.id")),
        arguments=first(a, "gen_ai.tool.call.arguments", "tool_arguments", "input.value"),
        result=first(a, "gen_ai.tool.call.result", "tool_response", "output.value"),
        exception=exception(span),
        schema=schema,
    )


def agent_name(span: Span) -> str | None:
    value = first(span.attributes, "gen_ai.agent.name", "agent_name")
    return None if value is None else str(value)


def agent_tools(span: Span) -> list[str] | None:
    """The tools an agent span says its agent has (Strands' ``gen_ai.agent.tools``, a JSON list of
    names), ``None`` when it does not say."""
    names = loads(span.attributes.get("gen_ai.agent.tools"))
    if isinstance(names, (list, tuple)) and all(isinstance(n, str) for n in names):
        return list(names)
    return None


def system_text(span: Span) -> str | None:
    """The system instructions a model request (or an agent run) recorded."""
    raw = loads(span.attributes.get("gen_ai.system_instructions"))
    if isinstance(raw, list):
        texts = [str(p.get("content", "")) for p in raw if isinstance(p, dict) and p.get("type") == "text"]
        return "\n\n".join(texts) or None
    return raw if isinstance(raw, str) else None


def final_output(span: Span) -> str | None:
    """What an agent run answered: pydantic-ai's ``final_result``, OpenInference's ``output.value``
    on an ``AGENT`` span (a ``CHAIN``'s is the chain's whole state, not an answer)."""
    names = ("final_result",) if span.attributes.get("openinference.span.kind") == "CHAIN" else _OUTPUTS
    value = first(span.attributes, *names)
    return None if value is None else dumps(value)


_OUTPUTS = ("final_result", "output.value")


def tool_message_failed(result: Any) -> bool:
    """Whether a tool span's output is a LangChain ``ToolMessage`` marked ``status: "error"`` (a
    tool's error handled into the message the model reads, as OpenInference records it)."""
    found = loads(result) if isinstance(result, str) and result.startswith("{") else result
    data = found.get("data") if isinstance(found, dict) and found.get("type") == "tool" else None
    return isinstance(data, dict) and data.get("status") == "error"


def loopnb_producer(span: Span) -> str | None:
    """The producer loopnb's exporter wrote on a span (``loopnb.producer``), if any."""
    value = span.attributes.get(PRODUCER)
    return value if isinstance(value, str) and value else None


def loopnb_soft(span: Span) -> tuple[SoftProducer, str] | None:
    """The soft error loopnb's exporter recorded on a span: its producer and the text the model read
    (``loopnb.channel`` ``soft`` with ``loopnb.error_text``; before the third round, a
    ``loopnb.soft_error`` event)."""
    a = span.attributes
    if a.get(CHANNEL) == "soft" and isinstance(a.get(ERROR_TEXT), str):
        producer = loopnb_producer(span)
        if producer in _SOFT:
            return cast(SoftProducer, producer), a[ERROR_TEXT]
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
