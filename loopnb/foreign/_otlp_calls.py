"""What the model read for each call of a turn, and what the trace said of it.

A turn's calls come from its request's output messages, each paired with the tool span that
ran it; what the model read for a call, from the next request's input. A tool span that
recorded an error (an ``ERROR`` status, an ``exception`` event, ``error.type``, pydantic-ai's
retry cause, loopnb's ``loopnb.channel`` ``soft``) gives a soft error, its row of the channel
table read from what the span says, and whether the source marked it handled from the agent span
above it (``_said``); a call with no tool span is ``missing``.

Steps, as smolagents' OpenInference instrumentation writes them (``Step N``, kind ``CHAIN``,
between the agent's span and the request's): smolagents runs a step's calls itself and gives the
model what came of them as one message with no call id (role ``tool-response``: ``Observation:
...``, or the error it caught); a step that caught an error ends ``ERROR`` with it. So what the
model read for a call with no result of its own id is the id-less results the next request added
(``loose``), and a call that no tool span ran (it never reached the tool) falls in the row its
failed step's error class names (``step_producer``, the step kept by ``Steps`` until its turn):
arguments that do not fit the tool's inputs (``AgentToolCallError``) or a call smolagents could
not parse (``AgentParsingError``) are ``invalid_arguments``, anything else a failed step caught
``tool_error`` (a name the request did not offer is ``not_advertised`` before this is asked).
"""

from __future__ import annotations

from typing import Any, cast, get_args

from loopnb.engine import ToolCall
from loopnb.engine._errors import SoftProducer
from loopnb.foreign import _otlp_genai as g
from loopnb.foreign import _otlp_messages as m
from loopnb.foreign._formats import Unread
from loopnb.foreign._otlp_profile import INJECTED
from loopnb.foreign._otlp_spans import Span
from loopnb.foreign._transcript import TurnWriter, status

_SOFT: frozenset[str] = frozenset(get_args(SoftProducer))

NAME = "otlp"
ATTEMPT = "pydantic_ai.tool.retry.attempt"
WITHHELD = "(not recorded: the trace kept no content for this result)"
"""The text of a result the model read but the trace did not keep (pydantic-ai's
``include_content=False``): not an empty error, which would name nothing."""


def call_arguments(value: Any) -> dict[str, Any] | str:
    value = g.loads(value)
    if value is None:
        return {}
    return value if isinstance(value, dict) else g.dumps(value)


def read_reply(outputs: list[m.Message] | None, chat: Span) -> tuple[str | None, list[ToolCall]]:
    texts: list[str] = []
    calls: list[ToolCall] = []
    for msg in outputs or ():
        for part in msg.parts:
            if part.kind == "text" and part.content:
                texts.append(g.dumps(part.content))
            elif part.kind == "tool_call":
                call_id = part.id or f"{chat.span_id}-{len(calls)}"
                calls.append(ToolCall(part.name, call_arguments(part.content), id=call_id))
    return ("\n".join(texts) or None), calls


def pair_spans(calls: list[ToolCall], spans: list[g.ToolSpan]) -> list[tuple[ToolCall, g.ToolSpan | None]]:
    """Each call with the tool span that ran it (by call id, else by name in order); a tool
    span no call names (the request's output was not recorded) adds its own call."""
    by_id = {t.call_id: t for t in spans if t.call_id}
    loose = [t for t in spans if not t.call_id or t.call_id not in {c.id for c in calls}]
    pairs: list[tuple[ToolCall, g.ToolSpan | None]] = []
    for call in calls:
        found = by_id.get(call.id)
        if found is None:
            found = next((t for t in loose if not t.call_id and t.name == call.name), None)
            if found is not None:
                loose.remove(found)
        pairs.append((call, found))
    runs: dict[str, g.ToolSpan] = {}
    for t in loose:  # a call run again (a retry) is one call, and its last run is what was read
        runs[t.call_id or t.span.span_id] = t
    for call_id, t in runs.items():
        pairs.append((ToolCall(t.name, call_arguments(t.arguments), id=call_id), t))
    return pairs


def _soft(t: g.ToolSpan) -> SoftProducer:
    """The table's row for an error a tool span recorded."""
    own = g.loopnb_soft(t.span)
    if own is not None:
        return own[0]
    a = t.span.attributes
    if a.get("error.type") in _SOFT:  # the conventions' own words (MCP's tool_error), or loopnb's producers
        return cast(SoftProducer, a["error.type"])
    cause = a.get("pydantic_ai.tool.retry.cause")
    if a.get("pydantic_ai.tool.failure_stage") == "validation" or cause == "validation_error":
        return "invalid_arguments"
    if cause in ("unknown_tool", "unavailable_tool"):
        return "not_advertised"
    if cause is None:
        kind = (t.exception[0] if t.exception else str(a.get("error.type") or "")).rsplit(".", 1)[-1]
        if kind.endswith("ValidationError") or kind == "JSONDecodeError":
            return "invalid_arguments"
    return "tool_error"


def _errored(t: g.ToolSpan) -> bool:
    """Whether a tool span recorded an error, whatever its status says."""
    a = t.span.attributes
    return (
        t.span.status == "ERROR"
        or g.loopnb_soft(t.span) is not None
        or t.exception is not None
        or a.get("error.type") is not None
        or a.get("pydantic_ai.tool.retry.cause") is not None
        or g.tool_message_failed(t.result)
    )


def span_ms(span: Span) -> float:
    return 0.0 if span.start is None or span.end is None else max(0.0, (span.end - span.start) * 1000)


def results_read(inputs: list[m.Message] | None, wanted: set[str]) -> dict[str, Any] | None:
    """What ``inputs`` gave back to each of the calls ``wanted`` (its last response), read from
    the end: a request's input holds the whole history (read with a ``History``, what it added
    to the one before), the newest results last."""
    if inputs is None:
        return None
    found: dict[str, Any] = {}
    for msg in reversed(inputs):
        if len(found) == len(wanted):
            break
        for p in reversed(msg.parts):
            if p.kind == "tool_call_response" and p.id in wanted and p.id not in found:
                found[p.id] = p.content
    return found


def write_result(
    turn: TurnWriter,
    call: ToolCall,
    t: g.ToolSpan | None,
    responses: dict[str, Any] | None,
    later: bool,
    offered: list[str] | None,
    outputs: set[str],
    agent: Span | None,
    unread: Unread,
    loose: str | None = None,
    step: Span | None = None,
) -> None:
    """Write what the model read for ``call``, and what the trace said of it (``agent``: the run's
    agent span as known when the turn is written, open or ended, ``None`` when it has none; a
    retry counter that cannot be read goes to ``unread``; ``loose``: what the next request gave
    back with no call id, read for a call with no result of its own; ``step``: the failed step
    that wrapped the turn's request, ``Steps``)."""
    read = responses.get(call.id) if responses is not None else None
    withheld = read is None and responses is not None and call.id in responses
    if read is None and not withheld:
        read = loose
    producer: SoftProducer | None = None
    if offered is None and agent is not None:
        offered = g.agent_tools(agent)
    if t is None:
        if call.name in outputs:
            said = "missing" if later else "output"
            producer = "invalid_arguments" if later else None
        else:
            said = "missing"
            if later and offered is not None and call.name not in offered:
                producer = "not_advertised"
            elif later and step is not None:  # the step caught what the call did before any tool ran
                producer = step_producer(step)
            if producer is not None and step is not None:
                said = _said(step, agent, later)
        text = WITHHELD if withheld else g.dumps(read)
        turn.result(
            call.id, text, name=call.name, producer=producer, source_status=status(NAME, said), executed=False
        )
        return
    span = t.span
    attempt = 0
    if _errored(t):
        producer = _soft(t)
        if producer == "tool_error":
            producer = _answered(call, t, offered) or producer
        attempt = _attempt(span, unread)
    own = g.loopnb_soft(span)
    if read is not None:
        text = g.dumps(read)
    elif own is not None:
        text = own[1]
    elif t.result is not None:
        text = g.dumps(t.result)
    else:
        text = (t.exception[1] if t.exception else None) or span.description or ""
        if not text and (withheld or producer is not None):
            text = WITHHELD
    turn.result(
        call.id,
        text,
        name=call.name,
        producer=producer,
        source_status=status(NAME, "soft" if own is not None else _said(span, agent, later)),
        attempt=attempt,
        executed=span.attributes.get("pydantic_ai.tool.failure_stage") != "validation",
        at=span.end,
        latency_ms=span_ms(span),
        injected=_injected(span),
    )


def _answered(call: ToolCall, t: g.ToolSpan, offered: list[str] | None) -> SoftProducer | None:
    """What a failed call that the framework answered itself was (Strands and Google ADK make a
    tool span for every call they answer, the tool's or not): a name no request offered, or
    arguments that do not fit the tool's JSON schema (as its span or its request records it)."""
    if offered is not None and call.name not in offered:
        return "not_advertised"
    # the arguments as the model's reply records them (a tool span's input may be the framework's
    # own call, smolagents'); none recorded (a trace that keeps no content) is no sign of bad ones
    if call.arguments and misfit(call.arguments, t.schema):
        return "invalid_arguments"
    return None


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
    "null": (type(None),),
}


def misfit(arguments: Any, schema: Any) -> bool:
    """Whether ``arguments`` break ``schema`` (a tool's JSON schema) where it is plain to see: a
    required argument missing, one it does not name where it allows no others, or a value not of
    the JSON type it names. Anything the check does not cover (``$ref``, ``anyOf``, ...) fits."""
    if not isinstance(arguments, dict) or not isinstance(schema, dict):
        return False
    named = schema.get("properties")
    named = named if isinstance(named, dict) else {}
    required = schema.get("required")
    if isinstance(required, list) and any(name not in arguments for name in required):
        return True
    if schema.get("additionalProperties") is False and any(name not in named for name in arguments):
        return True
    for name, value in arguments.items():
        kind = named.get(name, {}).get("type") if isinstance(named.get(name), dict) else None
        types = _JSON_TYPES.get(kind) if isinstance(kind, str) else None
        if types is not None and (
            not isinstance(value, types) or (bool not in types and isinstance(value, bool))
        ):
            return True
    return False


def _injected(span: Span) -> str | None:
    """The fault ``loopnb.inject`` put into the call, as its wrapper marked the tool span."""
    label = span.attributes.get(INJECTED)
    return label if isinstance(label, str) and label else None


def _said(span: Span, agent: Span | None, later: bool) -> str:
    """What a tool span's status says. ``ERROR`` under an agent span that is not ``ERROR`` is a
    failure the run handled, as the GenAI conventions' "Recording Errors" marks one:
    ``ERROR:handled``; so is one the run went on from under an agent span that ended ``ERROR``
    with a class of error of its own (a later hard ending: ``LoopDetected``, a retry limit).
    ``ERROR`` with no agent span, or under one that ended ``ERROR`` with this tool's error or no
    class at all, is the mark a run-ending failure has too: nothing tells them apart."""
    if span.status != "ERROR" or agent is None:
        return span.status
    if agent.status != "ERROR" or (later and _ended_otherwise(agent, span)):
        return "ERROR:handled"
    return span.status


def _ended_otherwise(agent: Span, span: Span) -> bool:
    """Whether an ``ERROR`` agent span names an ending of its own, not the tool span's error."""
    kind = g.error_class(agent)
    return kind is not None and kind != g.error_class(span)


def _attempt(span: Span, unread: Unread) -> int:
    """pydantic-ai's retry counter on a tool span (0 where it has none, or ``unread`` takes it)."""
    counter = span.attributes.get(ATTEMPT)
    if counter is None:
        return 0
    if type(counter) is not int or not 0 <= counter < 2**63:
        unread.skip(g.label(span), g.bad(span, g.Malformed(ATTEMPT, "a whole number of retries", counter)))
        return 0
    return counter


# Steps: smolagents' OpenInference spans (see the module docstring).
_BY_CLASS: dict[str, SoftProducer] = {
    "AgentToolCallError": "invalid_arguments",
    "AgentParsingError": "invalid_arguments",
}


class Steps:
    """The failed steps of one run (``ERROR`` spans that wrap a model request), each kept until
    the turn of the request it wraps is written."""

    __slots__ = ("_failed",)

    def __init__(self) -> None:
        self._failed: dict[str, Span] = {}

    def add(self, span: Span) -> None:
        """A span of the run that may wrap a request (only a failed one says anything)."""
        if span.status == "ERROR" and g.role_of(span) == "other":
            self._failed[span.span_id] = span

    def of(self, chat: Span) -> Span | None:
        """The failed step that wrapped request ``chat``, if any (taken: it is asked once)."""
        return None if chat.parent_id is None else self._failed.pop(chat.parent_id, None)


def step_producer(step: Span) -> SoftProducer:
    """The row of the channel table of a call that a failed ``step`` caught before any tool ran."""
    return _BY_CLASS.get(g.error_class(step) or "", "tool_error")


def loose(inputs: list[m.Message] | None, since: int) -> str | None:
    """The results with no call id that ``inputs`` (a request's input messages) gives back after
    its first ``since`` messages (the previous request's input), one after another."""
    texts = [
        g.dumps(p.content)
        for msg in (inputs or ())[since:]
        for p in msg.parts
        if p.kind == "tool_call_response" and not p.id
    ]
    return "\n".join(texts) if texts else None
