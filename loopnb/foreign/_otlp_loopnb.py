"""loopnb's own span profile (``loopnb.otel``), read back where the GenAI conventions say nothing.

loopnb exports a soft error with its tool span's status left unset (the model read it and the run
went on) and says so in its own attributes: ``loopnb.channel = "soft"``, ``loopnb.producer``, and
a ``loopnb.soft_error`` event holding the exact text the model read. A hard ending is ``ERROR`` on
the run's span, with ``loopnb.producer`` naming which of the six hard producers ended it. Spans
of any other source have none of these and read as before.
"""

from __future__ import annotations

from loopnb.engine._errors import HARD_PRODUCERS, SOFT_PRODUCERS, HardProducer, SoftProducer
from loopnb.foreign._otlp_spans import Span
from loopnb.otel._exporter import CHANNEL, ERROR_TEXT, PRODUCER, SOFT_ERROR

_SOFT: dict[object, SoftProducer] = {p: p for p in SOFT_PRODUCERS}
_HARD: dict[object, HardProducer] = {p: p for p in HARD_PRODUCERS}


def soft_error(span: Span) -> tuple[SoftProducer, str] | None:
    """The producer and the text of a soft error loopnb exported on ``span``, else ``None``."""
    producer = _SOFT.get(span.attributes.get(PRODUCER))
    if span.attributes.get(CHANNEL) != "soft" or producer is None:
        return None
    texts = [e.attributes.get(ERROR_TEXT) for e in span.events if e.name == SOFT_ERROR]
    return producer, str(texts[-1]) if texts and texts[-1] is not None else ""


def hard_producer(span: Span) -> HardProducer | None:
    """The hard producer loopnb exported on a run's span, else ``None``."""
    return _HARD.get(span.attributes.get(PRODUCER)) if span.attributes.get(CHANNEL) == "hard" else None


def failed_request(span: Span) -> bool:
    """A model request loopnb exported as failed (the fallback chain asked the next model)."""
    return CHANNEL in span.attributes and any(e.name == "loopnb.model_failed" for e in span.events)


def windows(chats: list[Span], tools: list[Span]) -> list[list[Span]] | None:
    """The tool spans of each model request by the turn loopnb wrote on both (the last request
    of a turn made its calls), or ``None`` when the spans do not all say their turn: times alone
    cannot order spans of a run on a fake clock, where they share one instant. Of a call's
    dispatch attempts only the last is kept: recovery retried the others, the model never read them."""
    turns = [span.attributes.get("loopnb.turn") for span in chats]
    if not chats or any(not isinstance(t, int) for t in turns):
        return None
    last = {turn: i for i, turn in enumerate(turns)}
    out: list[dict[object, Span]] = [{} for _ in chats]
    for tool in tools:
        i = last.get(tool.attributes.get("loopnb.turn"))
        if i is None:
            return None
        call = tool.attributes.get("gen_ai.tool.call.id") or tool.span_id
        out[i].pop(call, None)  # the later attempt goes last, where the call was answered
        out[i][call] = tool
    return [list(calls.values()) for calls in out]
