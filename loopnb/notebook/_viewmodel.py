"""The live view's state as a pure fold over events: no widgets, no plotly, no clock.

``ViewModel.apply(event)`` folds one event in; ``snapshot()`` returns an immutable, comparable
``ViewState`` with the four panes: the decision flow (lit path, edge counts), the recovery gauge,
the breaker board and the turn timeline with per-turn inspector data. The same events give the same
state, whether they come live from an engine or from a loaded recording: the view has no other
input. Time is the events' own ``at`` (cooldowns are "left as of the last event"). The state's
types are defined in ``loopnb.notebook._state`` and importable from here too.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Literal, assert_never

from loopnb.engine._events import (
    BreakerState,
    BreakerTransitioned,
    Event,
    HardErrorRaised,
    RecoveryDecided,
    RunFinished,
    RunStarted,
    ToolDispatched,
    TurnStarted,
)
from loopnb.engine._recovery import MAX_RECOVERY_ATTEMPTS
from loopnb.engine._turns import Turn, TurnAssembler
from loopnb.notebook._flow import FlowCount
from loopnb.notebook._state import (
    BreakerView,
    Gauge,
    GaugeStatus,
    RunView,
    TurnView,
    ViewState,
    turn_view,
)


@dataclass(slots=True)
class _Gauge:
    """The gauge's call as events come (a ``Gauge`` once snapshotted)."""

    tool: str | None = None
    call_id: str | None = None
    turn: int = 0
    attempt: int = 0
    status: GaugeStatus = "idle"
    decision: str | None = None
    producer: str | None = None

    def frozen(self) -> Gauge:
        return Gauge(
            self.tool, self.call_id, self.turn, self.attempt, self.status, self.decision, self.producer
        )


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
        self._flow = FlowCount()
        self._gauge = _Gauge()
        self._breakers: dict[str, _Breaker] = {}
        self._finished: list[tuple[Turn, str | None]] = []
        self._assembler = TurnAssembler()
        self._turns: list[TurnView] = []
        self._hard_error: str | None = None
        self._now = 0.0

    # -- the fold ---------------------------------------------------------------------------

    def apply(self, event: Event) -> None:
        """Fold one event in. Events of another run than the current one are ignored, and so
        are kinds no pane shows (``HANDLED`` lists those that count)."""
        if event.run_id != self.run_id and event.kind != "run_started":
            return
        if event.kind == "run_started":
            self._start(event)  # a new run: a new assembler, which must see its start too
        turn = self._assembler.add(event)
        if turn is not None:
            self._turn_finished(turn)
        else:
            match event.kind:
                case "tool_dispatched":
                    self._dispatched(event)
                case "turn_started":
                    self._turn_started(event)
                case "recovery_decided":
                    self._decided(event)
                case "breaker_transitioned":
                    self._breaker(event)
                case "hard_error_raised":
                    self._hard(event)
                case "run_finished":
                    self._run_finished(event)
                case (
                    "run_started"  # folded in above
                    | "model_replied"
                    | "soft_error_returned"
                    | "turn_finished"  # read through the Turn it completes
                    | "model_failed"
                    | "detector_fired"
                    | "completion_rejected"
                    | "context_compacted"
                ):
                    pass
                case _:
                    assert_never(event)
        self._now = event.at

    def extend(self, events: Iterable[Event]) -> ViewModel:
        for event in events:
            self.apply(event)
        return self

    @classmethod
    def fold(cls, events: Iterable[Event]) -> ViewState:
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
        result = e.result
        if g.turn == e.turn and g.call_id != result.call_id and e.attempt < g.attempt:
            return  # a call with more retries this turn keeps the gauge
        self._gauge = _Gauge(
            result.name,
            result.call_id,
            e.turn,
            e.attempt,
            "failed" if result.is_error else "ok",
            None,
            result.producer,
        )

    def _decided(self, e: RecoveryDecided) -> None:
        g = self._gauge
        if g.turn == e.turn and g.call_id == e.call_id:
            g.status = "retrying" if e.decision == "retry" else "gave_up"
            g.decision = e.decision

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
            g.attempt, g.status, g.decision = MAX_RECOVERY_ATTEMPTS + 1, "exhausted", "retry"

    def _turn_finished(self, e: Turn) -> None:
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
        path = self._flow.turn(channel, producer)
        self._lit, self._lit_turn, self._lit_channel, self._lit_producer = path, turn, channel, producer

    def _run_finished(self, e: RunFinished) -> None:
        path = self._flow.run_finished(e.outcome, e.producer)
        if path is not None:  # the run ended hard before any turn finished: light it all the same
            self._lit, self._lit_turn, self._lit_channel, self._lit_producer = path, 0, "hard", e.producer
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
            edge_counts=tuple(self._flow.counts),
            gauge=self._gauge.frozen(),
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


HANDLED: frozenset[str] = frozenset(
    {
        "run_started",
        "turn_started",
        "tool_dispatched",
        "recovery_decided",
        "breaker_transitioned",
        "hard_error_raised",
        "run_finished",
        "turn_finished",
        "model_replied",
        "soft_error_returned",
    }
)
"""The event kinds that change the view; the rest (model replies, soft-error notices, ...) are
read through the ``Turn`` a ``TurnFinished`` completes."""


def _names(value: object) -> list[str]:
    """The names in a recorded list of names; anything else (a damaged file's) names none."""
    if not isinstance(value, list | tuple):
        return []
    return [name for name in value if isinstance(name, str)]


def runs_of(events: Iterable[Event]) -> dict[str, list[Event]]:
    """Split an event stream into runs, by ``run_id``, in order of first appearance."""
    runs: dict[str, list[Event]] = {}
    for event in events:
        runs.setdefault(event.run_id, []).append(event)
    return runs
