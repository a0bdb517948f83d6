"""The live view's state as a pure fold over events: no widgets, no plotly, no clock.

``ViewModel.apply(event)`` folds one event in; ``snapshot()`` returns an immutable, comparable
``ViewState`` with the four panes: the decision flow (lit path, edge counts), the recovery gauge,
the breaker board and the turn timeline with per-turn inspector data. The same events give the same
state, whether they come live from an engine or from a loaded recording: the view has no other
input. Time is the events' own ``at`` (cooldowns are "left as of the last event").
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from loopnb.engine.events import (
    BreakerState,
    BreakerTransitioned,
    HardErrorRaised,
    RecoveryDecided,
    RunFinished,
    RunStarted,
    ToolDispatched,
    TurnFinished,
    TurnStarted,
)
from loopnb.engine.messages import ToolCall
from loopnb.notebook.flow import EDGE_INDEX, EDGES, path_of

__all__ = [
    "MAX_ATTEMPTS",
    "BreakerView",
    "CallView",
    "Gauge",
    "ReadView",
    "RunView",
    "TurnView",
    "ViewModel",
    "ViewState",
    "runs_of",
    "turn_view",
]

MAX_ATTEMPTS = 5
"""The recovery ceiling: attempt 0 plus five retries; a sixth retry is the wall."""

Phase = Literal["waiting", "running", "ok", "hard"]
GaugeStatus = Literal["idle", "ok", "failed", "retrying", "gave_up", "exhausted"]


@dataclass(frozen=True, slots=True)
class RunView:
    """The run as a whole: what it was asked, what it used, how it ended."""

    run_id: str | None = None
    task: str = ""
    models: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    phase: Phase = "waiting"
    turn: int = 0
    output: str | None = None
    error: str | None = None
    message: str | None = None
    scratchpad_discarded: bool = False


@dataclass(frozen=True, slots=True)
class Gauge:
    """The recovery gauge: the current (or last) tool call's attempt against the ceiling.

    ``attempt`` is 0 for the original call, 1..5 for retries, and 6 when recovery asked for a
    sixth retry and hit the wall (``ToolRecoveryExhausted``).
    """

    tool: str | None = None
    call_id: str | None = None
    turn: int = 0
    attempt: int = 0
    status: GaugeStatus = "idle"
    decision: str | None = None
    producer: str | None = None
    max_attempts: int = MAX_ATTEMPTS

    @property
    def at_wall(self) -> bool:
        return self.attempt > self.max_attempts


@dataclass(frozen=True, slots=True)
class BreakerView:
    """One breaker on the board. ``cooldown_left`` is seconds left while open (None if unknown)."""

    name: str
    scope: Literal["tool", "model"]
    state: BreakerState = "closed"
    failures: int = 0
    cooldown: float = 0.0
    cooldown_left: float | None = None


@dataclass(frozen=True, slots=True)
class CallView:
    """A tool call the model asked for; ``arguments`` as JSON text (or the raw string it sent)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ReadView:
    """One thing the model read after its reply: a tool result, or the engine's own feedback."""

    source: Literal["tool", "engine"]
    name: str
    text: str
    is_error: bool
    producer: str | None
    note: str | None = None


@dataclass(frozen=True, slots=True)
class TurnView:
    """One turn for the timeline and the inspector: the request and exactly what the model read."""

    turn: int
    channel: Literal["ok", "soft", "hard"]
    producer: str | None
    model: str | None
    reply_text: str | None
    calls: tuple[CallView, ...]
    read: tuple[ReadView, ...]
    error_text: str | None
    error: str | None
    recovery_attempts: int
    dropped: bool
    latency_ms: float
    path: tuple[str, ...]
    breakers: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class ViewState:
    """Everything the four panes show, at one moment of one run."""

    run: RunView = field(default_factory=RunView)
    lit: tuple[str, ...] = ()
    lit_turn: int | None = None
    lit_channel: str | None = None
    lit_producer: str | None = None
    edge_counts: tuple[int, ...] = (0,) * len(EDGES)
    gauge: Gauge = field(default_factory=Gauge)
    breakers: tuple[BreakerView, ...] = ()
    turns: tuple[TurnView, ...] = ()
    now: float = 0.0

    def edge_count(self, edge_id: str) -> int:
        return self.edge_counts[EDGE_INDEX[edge_id]]

    def turn(self, number: int) -> TurnView | None:
        """The turn numbered ``number`` (1-based), if it has finished."""
        if 1 <= number <= len(self.turns) and self.turns[number - 1].turn == number:
            return self.turns[number - 1]
        return next((t for t in self.turns if t.turn == number), None)

    @property
    def breaker_by_name(self) -> dict[str, BreakerView]:
        return {b.name: b for b in self.breakers}


@dataclass(slots=True)
class _Breaker:
    scope: Literal["tool", "model"]
    state: BreakerState = "closed"
    failures: int = 0
    cooldown: float = 0.0
    opened_at: float | None = None


class ViewModel:
    """Folds the events of one run into a ``ViewState`` (a new ``RunStarted`` starts over).

    ``apply`` is cheap (it runs on the engine's thread, once per event); the per-turn inspector
    data is built lazily by ``snapshot``, which is what a redraw calls.
    """

    def __init__(self) -> None:
        self._reset(None)

    def _reset(self, started: RunStarted | None) -> None:
        self.run_id = started.run_id if started else None
        self._run = RunView()
        self._lit: tuple[str, ...] = ()
        self._lit_turn: int | None = None
        self._lit_channel: str | None = None
        self._lit_producer: str | None = None
        self._counts = [0] * len(EDGES)
        self._gauge = Gauge()
        self._breakers: dict[str, _Breaker] = {}
        self._finished: list[tuple[TurnFinished, str | None]] = []
        self._turns: list[TurnView] = []
        self._hard_error: str | None = None
        self._now = 0.0
        self.events = 0

    # -- the fold ---------------------------------------------------------------------------

    def apply(self, event: Any) -> None:
        """Fold one event in. Events of another run than the current one are ignored."""
        kind = event.kind
        if kind == "run_started":
            self._start(event)
        elif event.run_id != self.run_id:
            return
        self.events += 1
        self._now = event.at
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, event)

    def extend(self, events: Iterable[Any]) -> ViewModel:
        for event in events:
            self.apply(event)
        return self

    @classmethod
    def fold(cls, events: Iterable[Any]) -> ViewState:
        """The state after ``events`` (of the last run among them)."""
        return cls().extend(events).snapshot()

    def _start(self, e: RunStarted) -> None:
        self._reset(e)
        self._run = RunView(run_id=e.run_id, task=e.task, models=e.models, tools=e.tools, phase="running")
        for name in e.settings.get("tool_breakers") or ():
            self._breakers[str(name)] = _Breaker("tool")
        for name in e.models:
            self._breakers.setdefault(name, _Breaker("model"))

    def _turn_started(self, e: TurnStarted) -> None:
        self._run = replace(self._run, turn=e.turn)

    def _dispatched(self, e: ToolDispatched) -> None:
        g = self._gauge
        call_id = e.call.id or e.result.call_id
        if g.turn == e.turn and g.call_id != call_id and e.attempt < g.attempt:
            return  # a call with more retries this turn keeps the gauge
        self._gauge = Gauge(
            tool=e.call.name,
            call_id=call_id,
            turn=e.turn,
            attempt=e.attempt,
            status="failed" if e.result.is_error else "ok",
            producer=e.result.producer,
        )

    def _decided(self, e: RecoveryDecided) -> None:
        g = self._gauge
        if g.turn == e.turn and g.call_id == e.call_id:
            status: GaugeStatus = "retrying" if e.decision == "retry" else "gave_up"
            self._gauge = replace(g, decision=e.decision, status=status)

    def _breaker(self, e: BreakerTransitioned) -> None:
        b = self._breakers.get(e.target)
        if b is None:
            b = self._breakers[e.target] = _Breaker(e.scope)
        b.state, b.failures, b.cooldown = e.state, e.failures, e.cooldown
        if e.state == "open":
            b.opened_at = e.at
        elif e.state == "closed":
            b.opened_at = None

    def _hard(self, e: HardErrorRaised) -> None:
        self._hard_error = e.error
        if e.producer == "tool_recovery_exhausted":
            self._gauge = replace(self._gauge, attempt=MAX_ATTEMPTS + 1, status="exhausted", decision="retry")

    def _turn_finished(self, e: TurnFinished) -> None:
        self._light(e.turn, e.channel, e.producer)
        self._finished.append((e, self._hard_error if e.channel == "hard" else None))
        for name, state in e.breakers.items():  # the engine's word at turn end wins
            b = self._breakers.get(name)
            if b is None:
                scope: Literal["tool", "model"] = "model" if name in self._run.models else "tool"
                b = self._breakers[name] = _Breaker(scope)
            if b.state != state:
                b.state = state
                if state != "open":
                    b.opened_at = None

    def _light(self, turn: int, channel: str, producer: str | None) -> None:
        path = path_of(channel, producer)
        for edge_id in path:
            self._counts[EDGE_INDEX[edge_id]] += 1
        self._lit, self._lit_turn, self._lit_channel, self._lit_producer = path, turn, channel, producer

    def _run_finished(self, e: RunFinished) -> None:
        if e.outcome == "hard" and not self._finished:
            # the run ended before any turn finished: light the hard path all the same
            self._light(0, "hard", _producer_of_error(e.error))
        self._run = replace(
            self._run,
            phase=e.outcome,
            turn=e.turns,
            output=e.output,
            error=e.error,
            message=e.message,
            scratchpad_discarded=e.scratchpad_discarded,
        )

    # -- the snapshot -------------------------------------------------------------------------

    def snapshot(self, *, with_turns: bool = True) -> ViewState:
        """The current state; ``with_turns=False`` leaves the timeline empty (cheaper)."""
        if with_turns:
            while len(self._turns) < len(self._finished):
                finished, error = self._finished[len(self._turns)]
                self._turns.append(turn_view(finished, error))
        return ViewState(
            run=self._run,
            lit=self._lit,
            lit_turn=self._lit_turn,
            lit_channel=self._lit_channel,
            lit_producer=self._lit_producer,
            edge_counts=tuple(self._counts),
            gauge=self._gauge,
            breakers=tuple(self._breaker_view(name, b) for name, b in self._breakers.items()),
            turns=tuple(self._turns) if with_turns else (),
            now=self._now,
        )

    @property
    def turns_finished(self) -> int:
        return len(self._finished)

    def _breaker_view(self, name: str, b: _Breaker) -> BreakerView:
        left: float | None = None
        if b.state == "open" and b.opened_at is not None:
            left = max(0.0, b.opened_at + b.cooldown - self._now)
        return BreakerView(name, b.scope, b.state, b.failures, b.cooldown, left)


_HANDLERS: dict[str, Any] = {
    "turn_started": ViewModel._turn_started,
    "tool_dispatched": ViewModel._dispatched,
    "recovery_decided": ViewModel._decided,
    "breaker_transitioned": ViewModel._breaker,
    "hard_error_raised": ViewModel._hard,
    "turn_finished": ViewModel._turn_finished,
    "run_finished": ViewModel._run_finished,
}

_HARD_BY_CLASS = {
    "Cancelled": "cancelled",
    "ContextExceeded": "context_exceeded",
    "LoopDetected": "loop_detected",
    "UserInputRequired": "user_input_required",
    "ToolRecoveryExhausted": "tool_recovery_exhausted",
    "FallbackExhausted": "fallback_exhausted",
}


def _producer_of_error(error: str | None) -> str | None:
    return _HARD_BY_CLASS.get(error or "")


def _arguments(call: ToolCall) -> str:
    if isinstance(call.arguments, str):
        return call.arguments
    try:
        return json.dumps(call.arguments, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(call.arguments)


def turn_view(e: TurnFinished, error: str | None = None) -> TurnView:
    """The timeline/inspector view of one finished turn (a pure function of the event)."""
    reply = e.reply
    calls = tuple(CallView(c.id, c.name, _arguments(c)) for c in (reply.tool_calls if reply else ()))
    read = tuple(
        ReadView("tool", r.name, r.content, r.is_error, r.producer, r.note) for r in e.results
    ) + tuple(ReadView("engine", m.role, m.content, m.is_error, m.producer) for m in e.feedback)
    return TurnView(
        turn=e.turn,
        channel=e.channel,
        producer=e.producer,
        model=e.model,
        reply_text=reply.text if reply else None,
        calls=calls,
        read=read,
        error_text=e.error_text,
        error=error,
        recovery_attempts=e.recovery_attempts,
        dropped=e.dropped,
        latency_ms=e.latency_ms,
        path=path_of(e.channel, e.producer),
        breakers=tuple(sorted(e.breakers.items())),
    )


def runs_of(events: Iterable[Any]) -> dict[str, list[Any]]:
    """Split an event stream into runs, by ``run_id``, in order of first appearance."""
    runs: dict[str, list[Any]] = {}
    for event in events:
        runs.setdefault(event.run_id, []).append(event)
    return runs
