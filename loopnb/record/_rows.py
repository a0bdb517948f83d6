"""Events to rows: the pure functions every table of loopnb is built with.

``turn_row`` makes the ``turns`` row of one ``Turn`` (a turn put back together from its events,
``loopnb.engine._turns``); ``event_row`` the ``events`` row of any event. The recorder, the loaders
and the live view all call these, so a view rebuilt from a recording equals the live one. Rows are
plain dicts keyed by the columns of ``TURNS`` / ``EVENTS`` (in that order); no pandas is needed.

The turns columns are read as ``loopnb.record._schema.TURNS`` declares; ``EVENT_LAYOUTS`` gives,
per event class, the events columns it fills and the function that fills them. Times are epoch
seconds in those raw values; a row holds them as aware ``datetime`` objects (``when``), a frame
converts the whole column at once, to the same microsecond.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from loopnb.engine._events import (
    EVENT_TYPES,
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
from loopnb.engine._turns import Turn, turns_of
from loopnb.record._schema import EVENT_COLUMNS, TURNS

_utc = UTC


def when(seconds: float) -> datetime:
    """An epoch time in seconds as the aware UTC datetime a row holds (rounded to the microsecond,
    half to even)."""
    return datetime.fromtimestamp(seconds, _utc)


# -- turns --------------------------------------------------------------------------------------

_TURN_READERS = tuple((c.name, c.read, c.is_time) for c in TURNS.columns)


def turn_row(turn: Turn) -> dict[str, Any]:
    """The ``turns`` row of one finished turn (columns of ``TURNS``, in order)."""
    row: dict[str, Any] = {}
    for name, read, is_time in _TURN_READERS:
        value = read(turn)  # type: ignore[misc]
        row[name] = when(value) if is_time else value
    return row


def discarded_runs(events: Iterable[Event]) -> set[str]:
    """Run ids whose scratchpad was discarded whole (``ContextExceeded``)."""
    return {e.run_id for e in events if isinstance(e, RunFinished) and e.scratchpad_discarded}


def turn_rows(events: Iterable[Event]) -> list[dict[str, Any]]:
    """The ``turns`` rows of an event stream, in order, with discarded runs marked dropped."""
    events = list(events)
    rows = [turn_row(t) for t in turns_of(events)]
    discarded = discarded_runs(events)
    if discarded:
        for row in rows:
            if row["run_id"] in discarded:
                row["dropped"] = True
    return rows


# -- events -------------------------------------------------------------------------------------

COMMON_EVENT_COLUMNS: tuple[str, ...] = ("run_id", "seq", "kind", "at")
"""The ``events`` columns every event fills, straight from its own fields."""

Layout = tuple[tuple[str, ...], Callable[[Any], tuple[Any, ...]]]
EVENT_LAYOUTS: dict[type, Layout] = {}
"""Per event class: the other columns it fills, and the function giving their values in that
order. Columns a class does not name are missing (``None``) in its rows."""


def _fills(cls: type, *columns: str) -> Callable[[Callable[[Any], tuple[Any, ...]]], Any]:
    unknown = set(columns) - set(EVENT_COLUMNS) | set(columns) & set(COMMON_EVENT_COLUMNS)
    if unknown:
        raise ValueError(f"{cls.__name__} fills columns it may not: {sorted(unknown)}")

    def register(values: Callable[[Any], tuple[Any, ...]]) -> Callable[[Any], tuple[Any, ...]]:
        EVENT_LAYOUTS[cls] = (columns, values)
        return values

    return register


@_fills(RunStarted, "text", "model")
def _run_started(e: RunStarted) -> tuple[Any, ...]:
    return (e.task, ", ".join(e.models) if e.models else None)


@_fills(TurnStarted, "turn")
def _turn_started(e: TurnStarted) -> tuple[Any, ...]:
    return (e.turn,)


@_fills(ModelReplied, "turn", "model", "text", "latency_ms")
def _model_replied(e: ModelReplied) -> tuple[Any, ...]:
    return (e.turn, e.reply.model, e.reply.text, e.latency_ms)


@_fills(ModelFailed, "turn", "model", "text", "status", "latency_ms")
def _model_failed(e: ModelFailed) -> tuple[Any, ...]:
    return (e.turn, e.model, e.error, e.status, e.latency_ms)


@_fills(
    ToolDispatched,
    "turn",
    "tool",
    "call_id",
    "attempt",
    "executed",
    "is_error",
    "producer",
    "text",
    "latency_ms",
    "source_status",
)
def _tool_dispatched(e: ToolDispatched) -> tuple[Any, ...]:
    result = e.result
    return (
        e.turn,
        result.name,
        result.call_id or None,
        e.attempt,
        e.executed,
        result.is_error,
        result.producer,
        result.content,
        e.latency_ms,
        e.source_status,
    )


@_fills(
    RecoveryDecided,
    "turn",
    "tool",
    "call_id",
    "attempt",
    "max_attempts",
    "decision",
    "valid",
    "text",
    "delay",
)
def _recovery_decided(e: RecoveryDecided) -> tuple[Any, ...]:
    return (e.turn, e.tool, e.call_id, e.attempt, e.max_attempts, e.decision, e.valid, e.note, e.delay)


@_fills(BreakerTransitioned, "turn", "target", "scope", "previous", "state", "failures", "cooldown")
def _breaker_transitioned(e: BreakerTransitioned) -> tuple[Any, ...]:
    return (e.turn, e.target, e.scope, e.previous, e.state, e.failures, e.cooldown)


@_fills(DetectorFired, "turn", "detector", "action", "text", "count")
def _detector_fired(e: DetectorFired) -> tuple[Any, ...]:
    return (e.turn, e.detector, e.action, e.text, e.count)


@_fills(CompletionRejected, "turn", "producer", "channel", "text")
def _completion_rejected(e: CompletionRejected) -> tuple[Any, ...]:
    return (e.turn, "completion_rejected", "soft", e.reason)


@_fills(ContextCompacted, "turn", "count", "text")
def _context_compacted(e: ContextCompacted) -> tuple[Any, ...]:
    text = f"compacted {e.tokens_before} -> {e.tokens_after} tokens (budget {e.max_tokens})"
    return (e.turn, e.dropped_items, text)


@_fills(SoftErrorReturned, "turn", "tool", "call_id", "channel", "producer", "text")
def _soft_error_returned(e: SoftErrorReturned) -> tuple[Any, ...]:
    return (e.turn, e.tool, e.call_id, "soft", e.producer, e.text)


@_fills(HardErrorRaised, "turn", "channel", "producer", "text")
def _hard_error_raised(e: HardErrorRaised) -> tuple[Any, ...]:
    return (e.turn, "hard", e.producer, e.message)


@_fills(TurnFinished, "turn", "channel", "producer", "dropped", "source_status")
def _turn_finished(e: TurnFinished) -> tuple[Any, ...]:
    return (e.turn, e.channel, e.producer, e.dropped, e.source_status)


@_fills(RunFinished, "channel", "count", "producer", "text")
def _run_finished(e: RunFinished) -> tuple[Any, ...]:
    if e.outcome == "hard":
        return (e.outcome, e.turns, e.producer, e.message)
    return (e.outcome, e.turns, None, e.output)


_missing = set(EVENT_TYPES) - set(EVENT_LAYOUTS)
if _missing:  # every event class needs a layout: a new one must say what its row holds
    raise TypeError(f"no events row layout for {sorted(c.__name__ for c in _missing)}")

_EMPTY: dict[str, Any] = dict.fromkeys(EVENT_COLUMNS)


def event_row(event: Event) -> dict[str, Any]:
    """The ``events`` row of any event (columns of ``EVENTS``, in order)."""
    row = _EMPTY.copy()
    row["run_id"] = event.run_id
    row["seq"] = event.seq
    row["kind"] = event.kind
    row["at"] = when(event.at)
    columns, values = layout_of(type(event))
    row.update(zip(columns, values(event), strict=True))
    return row


def layout_of(cls: type) -> Layout:
    """The row layout of an event class (a subclass has its base's)."""
    layout = EVENT_LAYOUTS.get(cls)
    if layout is None:
        for base in cls.__mro__:
            if base in EVENT_LAYOUTS:
                layout = EVENT_LAYOUTS[cls] = EVENT_LAYOUTS[base]
                break
        else:
            raise TypeError(f"not an event: {cls.__name__}")
    return layout
