"""What the live view shows, as immutable values: ``ViewState`` and the pane views it is made of.

``ViewModel`` (in ``viewmodel``) builds these from events; ``render`` and ``markup`` draw them.
Plain frozen dataclasses, comparable, with no widgets, no plotly and no clock: a view rebuilt
from a recording equals the live one. ``turn_view`` makes a turn's view from its ``TurnFinished``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Literal

from loopnb.engine._events import BreakerState
from loopnb.engine._messages import ToolCall
from loopnb.engine._recovery import MAX_RECOVERY_ATTEMPTS
from loopnb.engine._turns import Turn
from loopnb.notebook._flow import EDGE_INDEX, EDGES, path_of

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
    max_attempts: int = MAX_RECOVERY_ATTEMPTS

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

    The timeline needs only the first fields; the inspector's detail is read from the ``Turn``
    (the turn's events, ``loopnb.engine._turns``) when asked for, so that folding stays cheap.
    """

    turn: int
    channel: Literal["ok", "soft", "hard"]
    producer: str | None
    model: str | None
    tools: tuple[str, ...]
    dropped: bool
    error: str | None
    event: Turn = field(repr=False)

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
        reply = self.event.reply
        return reply.text if reply is not None else None

    @property
    def error_text(self) -> str | None:
        return self.event.error_text

    @property
    def recovery_attempts(self) -> int:
        return self.event.recovery_attempts

    @property
    def latency_ms(self) -> float | None:
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


def _arguments(call: ToolCall) -> str:
    if isinstance(call.arguments, str):
        return call.arguments
    try:
        return json.dumps(call.arguments, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(call.arguments)


def turn_view(t: Turn, error: str | None = None) -> TurnView:
    """The timeline/inspector view of one finished turn (a pure function of its events)."""
    calls = t.calls
    tools = (calls[0].name,) if len(calls) == 1 else tuple(c.name for c in calls)
    return TurnView(t.turn, t.channel, t.producer, t.model, tools, t.dropped, error, t)
