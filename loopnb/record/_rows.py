"""Events to rows: the pure functions every table of loopnb is built with.

``turn_row`` makes the ``turns`` row of one ``Turn`` (a turn put back together from its events,
``loopnb.engine._turns``); ``event_row`` the ``events`` row of any event. The recorder, the loaders
and the live view all call these, so a view rebuilt from a recording equals the live one. Rows are
plain dicts keyed by the columns of ``TURNS`` / ``EVENTS`` (in that order); no pandas is needed.

The turns columns are read as ``loopnb.record._schema.TURNS`` declares; ``EVENT_LAYOUTS`` gives,
per event class, the events columns it fills, each by name beside how it is read (as Inspect AI's
columns are). Times are epoch seconds in those raw values; a row holds them as aware ``datetime``
objects (``when``), a frame converts the whole column at once, to the same microsecond.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from operator import attrgetter
from typing import Any

from loopnb.engine import Turn, turns_of
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


@dataclass(frozen=True, slots=True)
class Fixed:
    """A column every event of a class fills with the same value."""

    value: Any

    def __call__(self, event: Any) -> Any:
        return self.value


@dataclass(frozen=True, slots=True)
class Mapped:
    """A column read at an attribute path, then passed through ``convert``."""

    path: str
    convert: Callable[[Any], Any]

    def __call__(self, event: Any) -> Any:
        return self.convert(attrgetter(self.path)(event))


Read = str | Fixed | Mapped | Callable[[Any], Any]
"""How an events column is read from an event: an attribute path (``"reply.model"``), a constant,
a path and a conversion, or a function of the event (for a value made of several fields). The
recorder reads the first three straight from what it stores (``loopnb.record._store``)."""
Layout = tuple[tuple[str, Callable[[Any], Any]], ...]
"""The columns an event class fills, each by name beside the function that reads it."""
EVENT_LAYOUTS: dict[type, Layout] = {}
"""Per event class: the other columns it fills, as ``_fills`` declares them. Columns a class does
not name are missing (``None``) in its rows."""
EVENT_READS: dict[type, tuple[tuple[str, Read], ...]] = {}
"""Per event class: the same columns, each beside its read as declared."""


def _fills(cls: type, **columns: Read) -> None:
    """Declare the events columns ``cls``'s events fill: each column by name, beside how it is read
    (an attribute path is read by one ``attrgetter``, in C)."""
    unknown = set(columns) - set(EVENT_COLUMNS) | set(columns) & set(COMMON_EVENT_COLUMNS)
    if unknown:
        raise ValueError(f"{cls.__name__} fills columns it may not: {sorted(unknown)}")
    fields = getattr(cls, "__dataclass_fields__", {})
    paths = {k: v.path if isinstance(v, Mapped) else v for k, v in columns.items()}
    strays = [f"{k}={v!r}" for k, v in paths.items() if isinstance(v, str) and v.split(".")[0] not in fields]
    if strays:
        raise ValueError(f"{cls.__name__} has no field to read {', '.join(strays)} from")
    EVENT_LAYOUTS[cls] = tuple(
        (name, attrgetter(read) if isinstance(read, str) else read) for name, read in columns.items()
    )
    EVENT_READS[cls] = tuple(columns.items())


def _joined(models: tuple[str, ...]) -> str | None:
    return ", ".join(models) if models else None


def _or_none(call_id: str) -> str | None:
    return call_id or None


def _summary(e: ContextCompacted) -> str:
    return f"compacted {e.tokens_before} -> {e.tokens_after} tokens (budget {e.max_tokens})"


def _hard(e: RunFinished) -> bool:
    return e.outcome == "hard"


_fills(RunStarted, text="task", model=Mapped("models", _joined))
_fills(TurnStarted, turn="turn")
_fills(ModelReplied, turn="turn", model="reply.model", text="reply.text", latency_ms="latency_ms")
_fills(
    ModelFailed,
    turn="turn",
    model="model",
    text="error",
    status="status",
    latency_ms="latency_ms",
    injected="injected",
)
_fills(
    ToolDispatched,
    turn="turn",
    tool="result.name",
    call_id=Mapped("result.call_id", _or_none),
    attempt="attempt",
    executed="executed",
    is_error="result.is_error",
    producer="result.producer",
    text="result.content",
    latency_ms="latency_ms",
    source_status="source_status",
    injected="injected",
)
_fills(
    RecoveryDecided,
    turn="turn",
    tool="tool",
    call_id="call_id",
    attempt="attempt",
    max_attempts="max_attempts",
    decision="decision",
    valid="valid",
    text="note",
    delay="delay",
)
_fills(
    BreakerTransitioned,
    turn="turn",
    target="target",
    scope="scope",
    previous="previous",
    state="state",
    failures="failures",
    cooldown="cooldown",
)
_fills(DetectorFired, turn="turn", detector="detector", action="action", text="text", count="count")
_fills(
    CompletionRejected,
    turn="turn",
    producer=Fixed("completion_rejected"),
    channel=Fixed("soft"),
    text="reason",
)
_fills(ContextCompacted, turn="turn", count="dropped_items", text=_summary)
_fills(
    SoftErrorReturned,
    turn="turn",
    tool="tool",
    call_id="call_id",
    channel=Fixed("soft"),
    producer="producer",
    text="text",
)
_fills(HardErrorRaised, turn="turn", channel=Fixed("hard"), producer="producer", text="message")
_fills(
    TurnFinished,
    turn="turn",
    channel="channel",
    producer="producer",
    dropped="dropped",
    source_status="source_status",
)
_fills(
    RunFinished,
    channel="outcome",
    count="turns",
    producer=lambda e: e.producer if _hard(e) else None,
    text=lambda e: e.message if _hard(e) else e.output,
)


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
    for name, read in layout_of(type(event)):
        row[name] = read(event)
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
