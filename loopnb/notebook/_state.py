"""What the live view shows, as immutable values: ``ViewState`` and the pane views it is made of.

``ViewModel`` (in ``viewmodel``) builds these from events; ``render`` and ``markup`` draw them.
Plain dataclasses, comparable, frozen but for ``TurnView`` (made once a turn on the engine's
thread; see there), with no widgets, no plotly and no clock: a view rebuilt from a recording
equals the live one. ``turn_view`` makes a turn's view from its ``TurnFinished``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from operator import attrgetter
from typing import Any, Literal

from loopnb.analysis._flowchart import EDGE_INDEX, EDGES
from loopnb.analysis._retries import CallRecovery, LoopCount, turn_call
from loopnb.analysis._usage import UsageLedger, UsageTotals
from loopnb.engine import MAX_RECOVERY_ATTEMPTS, Turn
from loopnb.engine._errors import arguments_text
from loopnb.engine._events import BreakerState
from loopnb.notebook._kept import Held, TurnSource, calls_kept, calls_of

"""The recovery ceiling: attempt 0 plus five retries; a sixth retry is the wall."""

Phase = Literal["waiting", "running", "ok", "hard"]
GaugeStatus = Literal["idle", "ok", "failed", "retrying", "gave_up", "exhausted"]
"""``idle`` before any call; else the call's ``CallRecovery.status``."""
BoardAt = tuple[tuple[str, BreakerState, int, float | None], ...]
"""The board as a turn ended: each breaker's name, state, failures and cooldown left."""


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
    simulated: bool = False
    """The run ran on a simulated clock (a ``FakeClock``): its times are simulated, not waited."""


@dataclass(frozen=True, slots=True)
class Gauge:
    """The recovery gauge of one turn: its call's retries against the ceiling, and the loop detector.

    Made by ``gauge_of`` from the ``CallRecovery`` that ``loopnb.recovery_attempts`` shows for
    the turn (``turn_call`` picks it). ``attempt`` is the call's retries (0 for the original
    call), or 6 when recovery asked for a sixth retry and hit the wall (``ToolRecoveryExhausted``).
    ``strategy`` is the run's recovery strategy (None: none configured); ``recovered_by`` says
    whether it ran on this call; ``loop`` is the loop detector's count in this turn, if it acted.
    """

    tool: str | None = None
    call_id: str | None = None
    turn: int = 0
    attempt: int = 0
    status: GaugeStatus = "idle"
    decision: str | None = None
    producer: str | None = None
    max_attempts: int = MAX_RECOVERY_ATTEMPTS
    strategy: str | None = None
    recovered_by: bool = False
    loop: LoopCount | None = None
    calls: int = 0

    @property
    def at_wall(self) -> bool:
        return self.attempt > self.max_attempts

    @property
    def greyed(self) -> bool:
        """Nothing to count: no tool call, or no recovery strategy configured."""
        return self.tool is None or self.strategy is None

    def lines(self) -> tuple[str, ...]:
        """The gauge in words, unescaped: its title (naming the turn), then what it shows."""
        head = f"turn {self.turn} · recovery" if self.turn else "recovery"
        if self.tool is None:
            words = "no call dispatched this turn" if self.turn else "no tool call yet"
            return (head, words, *self._loop_line())
        tool = self.tool if len(self.tool) <= 40 else self.tool[:39] + "…"
        more = f" (1 of {self.calls} calls)" if self.calls > 1 else ""
        failed = f"failed ({self.producer})" if self.producer else "failed"
        if self.strategy is None:
            did = "succeeded" if self.status == "ok" else failed
            words = f"{tool}{more}: {did} · no recovery strategy configured"
        elif self.at_wall:
            words = f"{tool}{more}: asked for retry {self.attempt}: the wall (ToolRecoveryExhausted)"
        elif not self.recovered_by:
            why = "no retry needed" if self.status == "ok" else "not a failure recovery retries"
            words = f"{tool}{more}: {'succeeded' if self.status == 'ok' else failed} · {why}"
        else:
            status = {
                "ok": "recovered",
                "failed": "failed again",
                "retrying": "retrying",
                "gave_up": f"recovery gave up ({self.decision})",
            }.get(self.status, self.status)
            words = f"{tool}{more}: {self.attempt} of {self.max_attempts} retries · {status}"
        return (head, words, *self._loop_line())

    def _loop_line(self) -> tuple[str, ...]:
        return (self.loop.text(),) if self.loop is not None else ()


def gauge_of(turn: int, calls: Sequence[CallRecovery], strategy: str | None, loop: LoopCount | None) -> Gauge:
    """The gauge of ``turn`` from its calls (as ``RecoveryFold`` has them): ``turn_call``'s."""
    call = turn_call(calls)
    if call is None:
        return Gauge(turn=turn, strategy=strategy, loop=loop)
    exhausted = call.status == "exhausted"
    return Gauge(
        call.tool,
        call.call_id,
        turn,
        MAX_RECOVERY_ATTEMPTS + 1 if exhausted else call.retries,
        call.status,
        call.decision,
        call.producer if call.is_error else None,
        MAX_RECOVERY_ATTEMPTS,
        strategy,
        call.decision is not None,
        loop if loop is not None else call.loop,
        len(calls),
    )


@dataclass(frozen=True, slots=True)
class BreakerView:
    """One breaker on the board. ``cooldown_left`` is seconds left while open (None if unknown);
    ``history`` the states it moved to, each with its turn (it starts closed)."""

    name: str
    scope: Literal["tool", "model"]
    state: BreakerState = "closed"
    failures: int = 0
    cooldown: float = 0.0
    cooldown_left: float | None = None
    history: tuple[tuple[int, BreakerState], ...] = ()


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


@dataclass(slots=True)
class TurnView:
    """One turn for the timeline and the inspector: the request and exactly what the model read.

    It keeps only what the timeline draws of every turn, as plain values (strings, numbers and
    tuples of them, which CPython's cyclic garbage collector does not walk: a live view of a long
    run keeps thousands); the inspector's detail is its ``Turn`` (``event``), put back together
    from ``source`` when asked for. Made once, as its turn ends, and never written to after: not
    frozen only because a frozen dataclass sets each field through ``object.__setattr__``, which
    cost more than the rest of the turn's fold (the live view makes one per turn on the engine's
    thread). Two views are equal when their values and their turns' events are.
    """

    turn: int
    channel: Literal["ok", "soft", "hard"]
    producer: str | None
    model: str | None
    tools: tuple[str, ...]
    dropped: bool
    error: str | None
    latency_ms: float | None
    """Wall time of the whole turn (``Turn.latency_ms``)."""
    injected: str | None
    """The faults ``loopnb.inject`` put into this turn (``Turn.injected``)."""
    source: TurnSource = field(repr=False, compare=False)
    begin: int = field(default=0, repr=False, compare=False)
    end: int = field(default=0, repr=False, compare=False)
    """Where ``source`` keeps the turn's events."""
    calls_at_end: tuple[Any, ...] = field(default=(), repr=False)
    """The turn's calls as ``RecoveryFold`` folded them (``recovery_attempts``' rows): each call's
    fields, one call after the other (a flat tuple: one the collector stops tracking at once)."""
    strategy: str | None = field(default=None, repr=False)
    loop: LoopCount | None = field(default=None, repr=False)
    lit: tuple[str, ...] = field(default=(), repr=False)
    """The flow's path as this turn lit it (the counting rule knows the turn before it)."""
    counts: tuple[int, ...] = field(default=(), repr=False)
    """The flow's edge counts up to and with this turn."""
    board: BoardAt = field(default=(), repr=False)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TurnView):
            return NotImplemented
        return _compared(self) == _compared(other) and self.event == other.event

    @property
    def event(self) -> Turn:
        """The turn's events, and what follows from them (put back together when asked for)."""
        return self.source.turn_at(self.begin, self.end)

    @property
    def recovery(self) -> tuple[CallRecovery, ...]:
        """The turn's calls, as ``RecoveryFold`` folded them (``recovery_attempts``' rows)."""
        return calls_of(self.calls_at_end)

    @property
    def gauge(self) -> Gauge:
        """The recovery gauge as the turn ended (made when asked for: only a drawn one is)."""
        return gauge_of(self.turn, self.recovery, self.strategy, self.loop)

    @property
    def calls(self) -> tuple[CallView, ...]:
        """The tool calls the model asked for (the request)."""
        reply = self.event.reply
        calls = reply.tool_calls if reply else ()
        return tuple(CallView(c.id, c.name, arguments_text(c.arguments)) for c in calls)

    @property
    def read(self) -> tuple[ReadView, ...]:
        """Exactly what the model read after its reply: tool results, then engine feedback."""
        e = self.event
        return tuple(
            ReadView("tool", r.name, r.content, r.is_error, r.producer, r.note) for r in e.results
        ) + tuple(ReadView("engine", m.role, m.content, m.is_error, m.producer) for m in e.feedback)

    @property
    def reply_text(self) -> str | None:
        reply = self.event.reply
        return reply.text if reply is not None else None

    @property
    def error_text(self) -> str | None:
        return self.event.error_text

    @property
    def recovery_attempts(self) -> int:
        return self.event.recovery_attempts

    @property
    def breakers(self) -> tuple[tuple[str, str], ...]:
        return tuple(sorted(self.event.breakers.items()))


_compared = attrgetter(*(f.name for f in fields(TurnView) if f.compare))


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
    start_board: BoardAt = ()
    """The board as the run started (what turn 0 shows)."""
    selected: int | None = None
    """The turn the panes show (``at_turn``); None: the state as it stands."""
    usage: UsageTotals = field(default_factory=UsageTotals)
    """The tokens and cost of the turns up to the selected one (all of them when none is), by
    ``Audit.usage``'s rule."""
    ledger: UsageLedger | None = field(default=None, compare=False, repr=False)
    """The run's turns priced, for ``at_turn`` to add up the first k (``usage`` is its answer)."""

    @property
    def newest(self) -> int:
        """The number of the last finished turn (0 before any)."""
        return self.turns[-1].turn if self.turns else 0

    def later(self, turn: int) -> bool:
        """Whether ``turn`` comes after the selected one (the timeline greys it)."""
        return self.selected is not None and turn > self.selected

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


def turn_view(
    t: Turn,
    error: str | None = None,
    recovery: Sequence[CallRecovery] = (),
    strategy: str | None = None,
    loop: LoopCount | None = None,
    flow: tuple[tuple[str, ...], tuple[int, ...]] = ((), ()),
    board: BoardAt = (),
    source: TurnSource | None = None,
    begin: int = 0,
    end: int = 0,
) -> TurnView:
    """The timeline/inspector view of one finished turn (a pure function of its events);
    ``flow`` is the path it lit and the edge counts after it, ``board`` the board as it ended,
    ``source`` where its events are kept, from place ``begin`` to ``end`` (none: the view holds
    ``t`` itself)."""
    verdict, replied = t.finished, t.replied  # what Turn.channel, .producer, .model, .calls read
    if verdict is None:
        raise ValueError(f"turn_view: turn {t.turn} of run {t.run_id} has not finished")
    model, calls = (replied.reply.model, replied.reply.tool_calls) if replied is not None else (None, ())
    tools = (calls[0].name,) if len(calls) == 1 else tuple(c.name for c in calls)
    return TurnView(
        t.turn, verdict.channel, verdict.producer, model, tools, verdict.dropped, error, t.latency_ms,
        t.injected, Held(t) if source is None else source, begin, end,
        calls_kept(recovery), strategy, loop, flow[0], flow[1], board,
    )  # fmt: skip


def at_turn(state: ViewState, selected: int | None) -> ViewState:
    """What the four panes show with turn ``selected`` picked: the one rule of the live view and
    the replay alike (a pure function, no widgets).

    The flow lights that turn's path with the counts up to it, the gauge is that turn's, the
    board shows each breaker as that turn ended (its history up to it); ``selected`` is set, and
    the timeline keeps every turn (``ViewState.later`` says which to grey), and the usage is
    that of the turns up to it (from ``ledger``; kept as it is without one). Turn 0 is the run
    as it started. The newest turn, or None, is the state as it stands (``selected`` None), with
    the newest turn's gauge; while a run goes on, the turn in progress once it has dispatched a
    call.
    """
    newest = state.newest
    last = state.turns[-1] if state.turns else None
    if selected is None or selected >= newest or last is None:
        gauge = state.gauge
        if last is not None and not (state.run.phase == "running" and gauge.turn > newest):
            gauge = last.gauge
        return state if gauge == state.gauge else replace(state, gauge=gauge)
    turn = state.turn(selected) if selected > 0 else None
    if turn is None:
        shown = replace(
            state, lit=(), lit_turn=None, lit_channel=None, lit_producer=None,
            edge_counts=(0,) * len(state.edge_counts), gauge=Gauge(),
        )  # fmt: skip
        board = state.start_board
    else:
        shown = replace(
            state, lit=turn.lit, lit_turn=turn.turn, lit_channel=turn.channel,
            lit_producer=turn.producer, edge_counts=turn.counts or state.edge_counts,
            gauge=turn.gauge,
        )  # fmt: skip
        board = turn.board
    at = {name: (st, failures, left) for name, st, failures, left in board}
    breakers = []
    for b in state.breakers:
        st, failures, left = at.get(b.name, ("closed", 0, None))
        history = tuple(move for move in b.history if move[0] <= selected)
        breakers.append(replace(b, state=st, failures=failures, cooldown_left=left, history=history))
    usage = state.usage if state.ledger is None else state.ledger.upto(_count_upto(state.turns, selected))
    return replace(shown, breakers=tuple(breakers), selected=max(selected, 0), usage=usage)


def _count_upto(turns: Sequence[TurnView], selected: int) -> int:
    """How many of ``turns`` (in order) are numbered ``selected`` or less."""
    if 1 <= selected <= len(turns) and turns[selected - 1].turn == selected:
        return selected
    return sum(1 for t in turns if t.turn <= selected)
