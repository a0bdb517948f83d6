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
from loopnb.engine.frozen import positional
from loopnb.engine.messages import ToolCall
from loopnb.notebook.flow import EDGE_INDEX, EDGES, path_of

__all__ = [
    "HANDLED",
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
    """One turn for the timeline and the inspector: the request and exactly what the model read.

    The timeline needs only the first fields; the inspector's detail is read from the turn's own
    ``TurnFinished`` event when asked for, so that folding a long run stays cheap.
    """

    turn: int
    channel: Literal["ok", "soft", "hard"]
    producer: str | None
    model: str | None
    tools: tuple[str, ...]
    dropped: bool
    error: str | None
    event: TurnFinished = field(repr=False)

    @property
    def path(self) -> tuple[str, ...]:
        return path_of(self.channel, self.producer)

    @property
    def calls(self) -> tuple[CallView, ...]:
        """The tool calls the model asked for (the request)."""
        reply = self.event.reply
        return tuple(CallView(c.id, c.name, _arguments(c)) for c in (reply.tool_calls if reply else ()))

    @property
    def read(self) -> tuple[ReadView, ...]:
        """Exactly what the model read after its reply: tool results, then engine feedback."""
        e = self.event
        return tuple(
            ReadView("tool", r.name, r.content, r.is_error, r.producer, r.note) for r in e.results
        ) + tuple(ReadView("engine", m.role, m.content, m.is_error, m.producer) for m in e.feedback)

    @property
    def reply_text(self) -> str | None:
        return self.event.reply.text if self.event.reply else None

    @property
    def error_text(self) -> str | None:
        return self.event.error_text

    @property
    def recovery_attempts(self) -> int:
        return self.event.recovery_attempts

    @property
    def latency_ms(self) -> float:
        return self.event.latency_ms

    @property
    def breakers(self) -> tuple[tuple[str, str], ...]:
        return tuple(sorted(self.event.breakers.items()))


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
        self._turn = 0
        self._lit: tuple[str, ...] = ()
        self._lit_turn: int | None = None
        self._lit_channel: str | None = None
        self._lit_producer: str | None = None
        self._counts = [0] * len(EDGES)
        self._gauge: list[Any] = [None, None, 0, 0, "idle", None, None]
        self._breakers: dict[str, _Breaker] = {}
        self._finished: list[tuple[TurnFinished, str | None]] = []
        self._turns: list[TurnView] = []
        self._hard_error: str | None = None
        self._now = 0.0

    # -- the fold ---------------------------------------------------------------------------

    def apply(self, event: Any) -> None:
        """Fold one event in. Events of another run than the current one are ignored, and so
        are kinds no pane shows (``HANDLED`` lists those that count)."""
        handler = _HANDLERS.get(event.kind)
        if handler is None or (event.run_id != self.run_id and event.kind != "run_started"):
            return
        handler(self, event)
        self._now = event.at

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
        for name in _names(e.settings.get("tool_breakers")):
            self._breakers[name] = _Breaker("tool")
        for name in e.models:
            self._breakers.setdefault(name, _Breaker("model"))

    def _turn_started(self, e: TurnStarted) -> None:
        self._turn = e.turn

    def _dispatched(self, e: ToolDispatched) -> None:
        g = self._gauge
        call_id = e.call.id or e.result.call_id
        if g[2] == e.turn and g[1] != call_id and e.attempt < g[3]:
            return  # a call with more retries this turn keeps the gauge
        # tool, call_id, turn, attempt, status, decision, producer: a Gauge once snapshotted
        self._gauge = [
            e.call.name,
            call_id,
            e.turn,
            e.attempt,
            "failed" if e.result.is_error else "ok",
            None,
            e.result.producer,
        ]

    def _decided(self, e: RecoveryDecided) -> None:
        g = self._gauge
        if g[2] == e.turn and g[1] == e.call_id:
            g[4] = "retrying" if e.decision == "retry" else "gave_up"
            g[5] = e.decision

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
            g = self._gauge
            g[3], g[4], g[5] = MAX_ATTEMPTS + 1, "exhausted", "retry"

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
        self._turn = e.turns
        self._run = replace(
            self._run,
            phase=e.outcome,
            output=e.output,
            error=e.error,
            message=e.message,
            scratchpad_discarded=e.scratchpad_discarded,
        )

    # -- the snapshot -------------------------------------------------------------------------

    def snapshot(self, *, with_turns: bool = True) -> ViewState:
        """The current state; ``with_turns=False`` leaves the timeline empty (cheaper)."""
        if with_turns and len(self._turns) < len(self._finished):
            self._turns.extend(turn_view(f, error) for f, error in self._finished[len(self._turns) :])
        return ViewState(
            run=replace(self._run, turn=self._turn),
            lit=self._lit,
            lit_turn=self._lit_turn,
            lit_channel=self._lit_channel,
            lit_producer=self._lit_producer,
            edge_counts=tuple(self._counts),
            gauge=Gauge(*self._gauge),
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
    "run_started": ViewModel._start,
    "turn_started": ViewModel._turn_started,
    "tool_dispatched": ViewModel._dispatched,
    "recovery_decided": ViewModel._decided,
    "breaker_transitioned": ViewModel._breaker,
    "hard_error_raised": ViewModel._hard,
    "turn_finished": ViewModel._turn_finished,
    "run_finished": ViewModel._run_finished,
}

HANDLED: frozenset[str] = frozenset(_HANDLERS)
"""The event kinds that change the view; the rest (model replies, soft-error notices, ...) are
already in the ``TurnFinished`` that follows them."""

_new_turn_view = positional(TurnView)  # one per turn: built without the frozen __init__

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


def _names(value: object) -> list[str]:
    """The names in a recorded list of names; anything else (a damaged file's) names none."""
    if not isinstance(value, list | tuple):
        return []
    return [name for name in value if isinstance(name, str)]


def _arguments(call: ToolCall) -> str:
    if isinstance(call.arguments, str):
        return call.arguments
    try:
        return json.dumps(call.arguments, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(call.arguments)


def turn_view(e: TurnFinished, error: str | None = None) -> TurnView:
    """The timeline/inspector view of one finished turn (a pure function of the event)."""
    calls = e.reply.tool_calls if e.reply is not None else ()
    tools = (calls[0].name,) if len(calls) == 1 else tuple(c.name for c in calls)
    return _new_turn_view(e.turn, e.channel, e.producer, e.model, tools, e.dropped, error, e)


def runs_of(events: Iterable[Any]) -> dict[str, list[Any]]:
    """Split an event stream into runs, by ``run_id``, in order of first appearance."""
    runs: dict[str, list[Any]] = {}
    for event in events:
        runs.setdefault(event.run_id, []).append(event)
    return runs
