"""Events to rows: the pure functions every table of loopnb is built with.

``turn_row`` makes the ``turns`` row of one ``TurnFinished``; ``event_row`` the ``events`` row of
any event. The recorder, the loaders and the live view all call these, so a view rebuilt from a
recording equals the live one. Rows are plain dicts keyed by the columns of ``TurnRow`` /
``EventRow`` (in that order); no pandas is needed to call them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any, assert_never

from loopnb.engine.errors import (
    Cancelled,
    ContextExceeded,
    FallbackExhausted,
    LoopDetected,
    ToolRecoveryExhausted,
    UserInputRequired,
)
from loopnb.engine.events import (
    BreakerTransitioned,
    CompletionRejected,
    ContextCompacted,
    DetectorFired,
    Event,
    HardErrorRaised,
    ModelFailed,
    ModelReplied,
    RecoveryDecided,
    RunFinished,
    RunStarted,
    SoftErrorReturned,
    ToolDispatched,
    TurnFinished,
    TurnStarted,
)
from loopnb.record.schema import EVENT_COLUMNS

__all__ = ["HARD_PRODUCER_OF", "discarded_runs", "event_row", "turn_row", "turn_rows"]

HARD_PRODUCER_OF: dict[str, str] = {
    cls.__name__: cls.producer
    for cls in (
        Cancelled,
        ContextExceeded,
        LoopDetected,
        UserInputRequired,
        ToolRecoveryExhausted,
        FallbackExhausted,
    )
}
"""The snake_case producer of each LoopError variant, by class name (as events carry it)."""

_utc = UTC


def _when(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, _utc)


def turn_row(event: TurnFinished) -> dict[str, Any]:
    """The ``turns`` row of one finished turn (columns of ``TurnRow``, in order).

    ``error_text`` is what the model read as errors: the engine's own ``error_text`` when the
    event carries one (the hard row's message), else the error results' content followed by the
    engine's feedback, one per line. ``dropped`` is the event's own flag; ``turn_rows`` also marks
    every turn of a run whose scratchpad was discarded.
    """
    results = event.results
    reply = event.reply
    errors = [r.content for r in results if r.is_error]
    n_errors = len(errors)
    error_text = event.error_text
    if error_text is None:
        if event.feedback:
            errors += [m.content for m in event.feedback if m.is_error or m.producer is not None]
        error_text = "\n".join(errors) if errors else None
    notes = [r.note for r in results if r.note is not None]
    calls = reply.tool_calls if reply is not None else ()
    usage = reply.usage if reply is not None else None
    breakers = event.breakers
    states = None
    n_open = 0
    if breakers:
        states = json.dumps(breakers)
        n_open = sum(1 for s in breakers.values() if s != "closed")
    return {
        "run_id": event.run_id,
        "turn": event.turn,
        "seq": event.seq,
        "channel": event.channel,
        "producer": event.producer,
        "dropped": event.dropped,
        "tools": ", ".join([c.name for c in calls]) if calls else None,
        "n_calls": len(calls),
        "n_errors": n_errors,
        "error_text": error_text,
        "notes": "\n".join(notes) if notes else None,
        "reply_text": reply.text if reply is not None else None,
        "recovery_attempts": event.recovery_attempts,
        "breaker_states": states,
        "breakers_open": n_open,
        "model": event.model if event.model is not None else (reply.model if reply else None),
        "latency_ms": event.latency_ms,
        "input_tokens": usage.input_tokens if usage is not None else None,
        "output_tokens": usage.output_tokens if usage is not None else None,
        "started_at": _when(event.started_at),
    }


def discarded_runs(events: Iterable[Event]) -> set[str]:
    """Run ids whose scratchpad was discarded whole (``ContextExceeded``)."""
    return {e.run_id for e in events if isinstance(e, RunFinished) and e.scratchpad_discarded}


def turn_rows(events: Iterable[Event]) -> list[dict[str, Any]]:
    """The ``turns`` rows of an event stream, in order, with discarded runs marked dropped."""
    events = list(events)
    rows = [turn_row(e) for e in events if isinstance(e, TurnFinished)]
    discarded = discarded_runs(events)
    if discarded:
        for row in rows:
            if row["run_id"] in discarded:
                row["dropped"] = True
    return rows


_EMPTY: dict[str, Any] = dict.fromkeys(EVENT_COLUMNS)


def event_row(event: Event) -> dict[str, Any]:
    """The ``events`` row of any event (columns of ``EventRow``, in order)."""
    row = _EMPTY.copy()
    row["run_id"] = event.run_id
    row["seq"] = event.seq
    row["kind"] = event.kind
    row["at"] = _when(event.at)
    match event:
        case RunStarted():
            row["text"] = event.task
            row["model"] = ", ".join(event.models) if event.models else None
        case TurnStarted():
            row["turn"] = event.turn
        case ModelReplied():
            row["turn"] = event.turn
            row["model"] = event.model
            row["text"] = event.reply.text
            row["latency_ms"] = event.latency_ms
        case ModelFailed():
            row["turn"] = event.turn
            row["model"] = event.model
            row["text"] = event.error
            row["status"] = event.status
            row["latency_ms"] = event.latency_ms
        case ToolDispatched():
            result = event.result
            row["turn"] = event.turn
            row["tool"] = event.call.name
            row["call_id"] = event.call.id or result.call_id or None
            row["attempt"] = event.attempt
            row["executed"] = event.executed
            row["is_error"] = result.is_error
            row["producer"] = result.producer
            row["text"] = result.content
            row["latency_ms"] = event.latency_ms
        case RecoveryDecided():
            row["turn"] = event.turn
            row["tool"] = event.tool
            row["call_id"] = event.call_id
            row["attempt"] = event.attempt
            row["max_attempts"] = event.max_attempts
            row["decision"] = event.decision
            row["valid"] = event.valid
            row["text"] = event.note
            row["delay"] = event.delay
        case BreakerTransitioned():
            row["turn"] = event.turn
            row["target"] = event.target
            row["scope"] = event.scope
            row["previous"] = event.previous
            row["state"] = event.state
            row["failures"] = event.failures
            row["cooldown"] = event.cooldown
        case DetectorFired():
            row["turn"] = event.turn
            row["detector"] = event.detector
            row["action"] = event.action
            row["text"] = event.text
            row["count"] = event.count
        case CompletionRejected():
            row["turn"] = event.turn
            row["producer"] = "completion_rejected"
            row["channel"] = "soft"
            row["text"] = event.reason
        case ContextCompacted():
            row["turn"] = event.turn
            row["count"] = event.dropped_items
            row["text"] = (
                f"compacted {event.tokens_before} -> {event.tokens_after} tokens (budget {event.max_tokens})"
            )
        case SoftErrorReturned():
            row["turn"] = event.turn
            row["tool"] = event.tool
            row["call_id"] = event.call_id
            row["channel"] = "soft"
            row["producer"] = event.producer
            row["text"] = event.text
        case HardErrorRaised():
            row["turn"] = event.turn
            row["channel"] = "hard"
            row["producer"] = event.producer
            row["text"] = event.message
        case TurnFinished():
            row["turn"] = event.turn
            row["channel"] = event.channel
            row["producer"] = event.producer
            row["model"] = event.model
            row["latency_ms"] = event.latency_ms
            row["text"] = event.error_text
            row["dropped"] = event.dropped
        case RunFinished():
            row["channel"] = event.outcome
            row["count"] = event.turns
            if event.outcome == "hard":
                row["producer"] = HARD_PRODUCER_OF.get(event.error or "")
                row["text"] = event.message
            else:
                row["text"] = event.output
        case _:
            assert_never(event)
    return row
