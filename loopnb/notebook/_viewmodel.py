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
from dataclasses import replace
from typing import assert_never

from loopnb.analysis._breakers import BreakerCount, BreakerFold
from loopnb.analysis._flowchart import FlowCount
from loopnb.analysis._history import tool_breakers
from loopnb.analysis._retries import RecoveryFold
from loopnb.analysis._usage import UsageLedger, UsageTotals
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
from loopnb.engine._turns import Turn, TurnAssembler
from loopnb.notebook._kept import TurnStore
from loopnb.notebook._state import (
    BoardAt,
    BreakerView,
    Gauge,
    RunView,
    TurnView,
    ViewState,
    gauge_of,
    turn_view,
)


class ViewModel:
    """Folds the events of one run into a ``ViewState`` (a new ``RunStarted`` starts over).

    ``apply`` is cheap (the live view calls it on the engine's thread, once per event): a turn's
    view (``TurnView``) is made as the turn ends, so that ``snapshot``, which a redraw calls,
    only gathers what is folded already.
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
        self._recovery = RecoveryFold()  # the gauge's rule, and recovery_attempts'
        self._board = BreakerFold()  # the board's rule, and breaker_history's
        self._history: dict[str, list[tuple[int, BreakerState]]] = {}
        self._last_board: BoardAt | None = None
        self._board_moves = -1  # the board fold's moves when the last board was drawn
        self._cooling = False  # a breaker on the last board has a cooldown running
        self._counts: tuple[int, ...] = ()  # the edge counts as the last turn left them
        self._start_board: BoardAt = ()
        self._assembler = TurnAssembler()
        self._kept = TurnStore()  # the run's events, for the inspector to read a turn back from
        self._turn_from = 0  # where the next turn's events begin in self._kept
        self._turns: list[TurnView] = []
        self._hard_error: str | None = None
        self._now = 0.0
        # a FakeClock's run: its turns' tokens and cost count, their simulated time does not
        simulated = started is not None and started.settings.get("clock") == "simulated"
        self._usage = UsageLedger(simulated=simulated)

    # -- the fold ---------------------------------------------------------------------------

    def apply(self, event: Event) -> None:
        """Fold one event in. Events of another run than the current one are ignored, and so
        are kinds no pane shows (``HANDLED`` lists those that count)."""
        if event.run_id != self.run_id and event.kind != "run_started":
            return
        if event.kind == "run_started":
            self._start(event)  # a new run: a new assembler and store, which must see its start too
        else:
            self._kept.add(event)
        turn = self._assembler.add(event)
        if turn is not None:
            self._turn_finished(turn, event.at)
        else:  # the usual kinds first: a match tries its cases in order
            match event.kind:
                case "model_replied":
                    self._board.model_replied(event.reply.model)
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
                    self._board.settle()
                    self._run_finished(event)
                case "model_failed":
                    self._board.model_failed(event.model)
                case "detector_fired":
                    self._board.settle()
                    self._recovery.detected(event.turn, event.detector, event.action, event.count)
                case (
                    "run_started"  # folded in above
                    | "soft_error_returned"
                    | "turn_finished"  # read through the Turn it completes
                    | "completion_rejected"
                    | "context_compacted"
                ):
                    self._board.settle()
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
        self._run = RunView(
            run_id=e.run_id,
            task=e.task,
            models=e.models,
            tools=e.tools,
            phase="running",
            simulated=e.settings.get("clock") == "simulated",  # as the audit tells it (simulated_runs)
        )
        self._recovery.start(e.settings)
        self._board.start(e.models, tool_breakers(e.settings), e.breakers)
        self._start_board = self._board_at(e.at)
        self._kept.add(e)
        self._turn_from = len(self._kept)

    def _turn_started(self, e: TurnStarted) -> None:
        self._turn = e.turn
        # the turns before keep their calls as values (their TurnView's): the fold needs only this one's
        self._recovery.calls.clear()
        self._board.settle()

    def _dispatched(self, e: ToolDispatched) -> None:
        r = e.result
        self._recovery.dispatched(e.turn, r.call_id, r.name, e.attempt, r.is_error, r.producer)
        self._board.dispatched(r.name, e.attempt, r.is_error, r.producer)

    def _decided(self, e: RecoveryDecided) -> None:
        self._recovery.decided(e.turn, e.call_id, e.attempt, e.max_attempts, e.decision)

    def _breaker(self, e: BreakerTransitioned) -> None:
        self._board.transitioned(e.target, e.scope, e.state, e.failures, e.cooldown, e.at)
        self._history.setdefault(e.target, []).append((e.turn, e.state))

    def _hard(self, e: HardErrorRaised) -> None:
        self._hard_error = e.error
        self._recovery.hard(e.producer)
        self._board.settle(drop=e.producer == "tool_recovery_exhausted")

    def _turn_finished(self, e: Turn, at: float) -> None:
        verdict = e.finished
        if verdict is None:  # the assembler completes a turn with its TurnFinished
            return
        channel = verdict.channel
        self._light(e.turn, channel, verdict.producer)
        fold = self._recovery
        # the engine's word wins: the breakers not closed (the board knows the run's others)
        for name in self._board.end_turn(verdict.breakers):
            history = self._history.get(name)
            state = self._board.breakers[name].state
            if (history[-1][1] if history else "closed") != state:
                self._history.setdefault(name, []).append((e.turn, state))
        if self._lit or not self._counts:  # a turn that lit nothing leaves the counts as they were
            self._counts = tuple(self._flow.counts)
        error = self._hard_error if channel == "hard" else None
        begin, end = self._turn_from, len(self._kept)
        self._turn_from = end
        self._turns.append(
            turn_view(e, error, fold.calls, fold.strategy, fold.loops.get(e.turn), (self._lit, self._counts),
                      self._board_at(at), self._kept, begin, end)
        )  # fmt: skip
        self._usage.append(e)  # priced in hundreds, not one by one

    def _board_at(self, now: float) -> BoardAt:
        """The board as it stands at ``now``: what selecting this moment's turn shows. The usual
        turn moves no breaker, and none is cooling down: the previous turn's board is shared."""
        fold, last = self._board, self._last_board
        if last is not None and fold.moves == self._board_moves and not self._cooling:
            return last
        board = tuple((b.name, b.state, b.failures, b.cooldown_left(now)) for b in fold.breakers.values())
        if board != last:
            self._last_board = last = board
            self._cooling = any(left is not None for *_, left in board)
        self._board_moves = fold.moves
        return last

    def _light(self, turn: int, channel: str, producer: str | None) -> None:
        path = self._flow.turn(channel, producer)
        self._lit, self._lit_turn, self._lit_channel, self._lit_producer = path, turn, channel, producer

    def _run_finished(self, e: RunFinished) -> None:
        path = self._flow.run_finished(e.outcome, e.producer)
        if path is not None:  # the run ended hard before any turn finished: light it all the same
            self._lit, self._lit_turn, self._lit_channel, self._lit_producer = path, 0, "hard", e.producer
            self._counts = ()  # moved: a turn after this (a torn recording's) takes them anew
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
        """The current state; ``with_turns=False`` leaves the timeline empty."""
        return ViewState(
            run=replace(self._run, turn=self._turn),
            lit=self._lit,
            lit_turn=self._lit_turn,
            lit_channel=self._lit_channel,
            lit_producer=self._lit_producer,
            edge_counts=tuple(self._flow.counts),
            gauge=self._live_gauge(),
            breakers=tuple(self._breaker_view(b) for b in self._board.breakers.values()),
            turns=tuple(self._turns) if with_turns else (),
            now=self._now,
            start_board=self._start_board,
            usage=self._usage.upto(len(self._turns)) if with_turns else UsageTotals(),
            ledger=self._usage,
        )

    @property
    def turns_finished(self) -> int:
        return len(self._turns)

    def _live_gauge(self) -> Gauge:
        """The turn going on, once it has dispatched a call; else the last finished turn's."""
        fold, last = self._recovery, self._turns[-1] if self._turns else None
        calls = fold.calls
        if (last is None or self._turn > last.turn) and calls:
            return gauge_of(self._turn, calls, fold.strategy, fold.loops.get(self._turn))
        return Gauge() if last is None else last.gauge

    def _breaker_view(self, b: BreakerCount) -> BreakerView:
        history = tuple(self._history.get(b.name, ()))
        return BreakerView(
            b.name, b.scope, b.state, b.failures, b.cooldown, b.cooldown_left(self._now), history
        )


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
        "model_failed",
        "detector_fired",
        "soft_error_returned",
    }
)
"""The event kinds that change the view (model failures and replies move the board's counts, the
loop detector shows on the gauge); the rest are read through the ``Turn`` a ``TurnFinished``
completes."""


def runs_of(events: Iterable[Event]) -> dict[str, list[Event]]:
    """Split an event stream into runs, by ``run_id``, in order of first appearance."""
    runs: dict[str, list[Event]] = {}
    for event in events:
        runs.setdefault(event.run_id, []).append(event)
    return runs
