"""Steps: a span that wraps one model request and the calls it asked for, as smolagents'
OpenInference instrumentation writes them (``Step N``, kind ``CHAIN``, between the agent's span
and the request's), and the results a framework gives back with no call id.

smolagents runs a step's calls itself and gives the model what came of them as one message with
no call id (role ``tool-response``: ``Observation: ...``, or the error it caught); a step that
caught an error ends ``ERROR`` with it. So what the model read for a call with no result of its
own id is the id-less results the next request added (``loose``), and a call that no tool span
ran (it never reached the tool) falls in the row its step's error class names (``producer``):
arguments that do not fit the tool's inputs (``AgentToolCallError``) or a call smolagents could not
parse (``AgentParsingError``) are ``invalid_arguments``, anything else a failed step caught
``tool_error`` (a name the request did not offer is ``not_advertised`` before this is asked).
"""

from __future__ import annotations

from loopnb.engine._errors import SoftProducer
from loopnb.foreign import _otlp_genai as g
from loopnb.foreign import _otlp_messages as m
from loopnb.foreign._otlp_spans import Span

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


def producer(step: Span) -> SoftProducer:
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
