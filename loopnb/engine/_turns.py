"""A turn put back together from its events: the one answer to "what did the model read".

Each fact of a turn is in one event (the reply in ``ModelReplied``, each attempt's result in
``ToolDispatched``, each decision in ``RecoveryDecided``, each error the model read in
``SoftErrorReturned``, the verdict in ``TurnFinished``). ``Turn`` holds a turn's events and
derives the rest; ``turns_of`` and ``TurnAssembler`` group a stream of events into turns. The
turns frame, the live view, the HTML report and the command line all read turns through these.

What the model read for one call, derived from its events (``Turn.results``):

- no recovery decision: the call's one dispatched result;
- the last decision a retry: the retried result, with that decision's note beside it;
- the last decision Skip / AskUser / Fail: attempt 0's result verbatim, marked
  ``recovery_gave_up``, with the decision's note beside it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import assert_never

from loopnb.engine._errors import Channel, HardProducer, SoftProducer, SourceProducer
from loopnb.engine._events import (
    BreakerState,
    Event,
    HardErrorRaised,
    ModelReplied,
    RecoveryDecided,
    SoftErrorReturned,
    ToolDispatched,
    TurnFinished,
)
from loopnb.engine._messages import Message, ModelReply, ToolCall, ToolResult


@dataclass(slots=True)
class Turn:
    """One turn's events, and what follows from them."""

    run_id: str
    turn: int
    """The turn's 1-based number within its run."""
    started_at: float | None = None
    """When the turn started (epoch seconds), from its ``TurnStarted``."""
    replied: ModelReplied | None = None
    dispatched: list[ToolDispatched] = field(default_factory=list)
    decisions: list[RecoveryDecided] = field(default_factory=list)
    soft_errors: list[SoftErrorReturned] = field(default_factory=list)
    """The errors the model read, in the order it read them."""
    hard: HardErrorRaised | None = None
    finished: TurnFinished | None = None
    run_breakers: tuple[str, ...] = ()
    """Every breaker of the run, from its ``RunStarted``."""
    model_injected: list[str] = field(default_factory=list)
    """The labels of the faults ``loopnb.inject`` made this turn's model requests fail with."""

    @property
    def channel(self) -> Channel:
        """ok, soft or hard: the engine's verdict, from ``TurnFinished``."""
        return self._finished.channel

    @property
    def producer(self) -> SoftProducer | HardProducer | SourceProducer | None:
        """The first non-ok producer of the turn (the LoopError variant's on a hard turn)."""
        return self._finished.producer

    @property
    def dropped(self) -> bool:
        """True when the turn never reached the scratchpad (the turn a run ended on)."""
        return self._finished.dropped

    @property
    def latency_ms(self) -> float | None:
        """Wall time of the whole turn, in milliseconds (from its start to its end)."""
        if self.started_at is None or self.finished is None:
            return None
        return round((self.finished.at - self.started_at) * 1000.0, 3)

    @property
    def breakers(self) -> dict[str, BreakerState]:
        """Every breaker's state as the turn ended."""
        states: dict[str, BreakerState] = dict.fromkeys(self.run_breakers, "closed")
        states.update(self._finished.breakers)
        return states

    @property
    def _finished(self) -> TurnFinished:
        if self.finished is None:
            raise ValueError(f"turn {self.turn} of run {self.run_id} has not finished")
        return self.finished

    @property
    def reply(self) -> ModelReply | None:
        """What the model answered (``None`` when no model answered: the run ended first)."""
        return self.replied.reply if self.replied is not None else None

    @property
    def model(self) -> str | None:
        """The model that answered this turn."""
        return self.replied.reply.model if self.replied is not None else None

    @property
    def calls(self) -> tuple[ToolCall, ...]:
        """The tool calls the model asked for, in order."""
        return self.replied.reply.tool_calls if self.replied is not None else ()

    def sent(self, attempt: ToolDispatched) -> ToolCall | None:
        """The call one dispatch attempt sent: the model's call, with the arguments of the last
        correction a recovery decision made before it (``None`` for a call the reply lacks)."""
        call_id = attempt.result.call_id
        call = next((c for c in self.calls if c.id == call_id), None)
        if call is None:
            return None
        arguments = call.arguments
        for d in self.decisions:
            if d.call_id == call_id and d.attempt < attempt.attempt and d.corrected_input is not None:
                arguments = d.corrected_input
        return call if arguments is call.arguments else replace(call, arguments=arguments)

    @property
    def results(self) -> tuple[ToolResult, ...]:
        """The tool results the model read, one per dispatched call, in call order (none on the
        turn a run ended on: it never reached the model)."""
        dispatched = self.dispatched
        if self.hard is not None:
            return ()
        if not self.decisions and (len(dispatched) == 1 or all(d.attempt == 0 for d in dispatched)):
            return tuple(d.result for d in dispatched)
        by_call: dict[str, list[ToolDispatched]] = {}
        for d in dispatched:
            by_call.setdefault(d.result.call_id, []).append(d)
        last_decision = {d.call_id: d for d in self.decisions}
        out = []
        for call_id, attempts in by_call.items():
            decision = last_decision.get(call_id)
            if decision is None:
                out.append(attempts[-1].result)
            elif decision.decision == "retry":
                out.append(replace(attempts[-1].result, note=decision.note))
            else:
                first = attempts[0].result
                out.append(
                    replace(
                        first, producer="recovery_gave_up", note=decision.note, attempts=decision.attempt + 1
                    )
                )
        return tuple(out)

    @property
    def feedback(self) -> tuple[Message, ...]:
        """The engine's own messages the model read (a rejected answer, a convergence warning)."""
        return tuple(
            Message(role="user", content=e.text, is_error=True, producer=e.producer)
            for e in self.soft_errors
            if e.call_id is None
        )

    @property
    def error_text(self) -> str | None:
        """Exactly what the model read as errors, one text per line; the LoopError's message on
        the turn a run ended on; ``None`` when the model read no error."""
        if self.hard is not None:
            return self.hard.message
        if not self.soft_errors:
            return None
        return "\n".join([e.text for e in self.soft_errors])

    @property
    def n_errors(self) -> int:
        """How many tool calls the model read an error for."""
        soft = self.soft_errors
        return sum(1 for e in soft if e.call_id is not None) if soft else 0

    @property
    def notes(self) -> str | None:
        """The recovery notes riding beside this turn's results, one per line."""
        notes = [r.note for r in self.results if r.note is not None] if self.decisions else []
        return "\n".join(notes) if notes else None

    @property
    def injected(self) -> str | None:
        """The labels of the faults injected into this turn (its model requests', then its calls'
        in dispatch order), each once, joined by ``"; "``; ``None`` when nothing was injected."""
        labels = [*self.model_injected, *(d.injected for d in self.dispatched if d.injected is not None)]
        return "; ".join(dict.fromkeys(labels)) if labels else None

    @property
    def recovery_attempts(self) -> int:
        """The most retries any one call of this turn was given (0 without recovery)."""
        dispatched = self.dispatched
        if len(dispatched) == 1:
            return dispatched[0].attempt
        return max((d.attempt for d in dispatched), default=0)


class TurnAssembler:
    """Groups events into turns as they arrive: ``add(event)`` returns the ``Turn`` a
    ``TurnFinished`` completes, else ``None``. Runs may interleave; each is followed by id."""

    __slots__ = ("_breakers", "_open")

    def __init__(self) -> None:
        self._open: dict[str, Turn] = {}
        self._breakers: dict[str, tuple[str, ...]] = {}

    def add(self, event: Event) -> Turn | None:
        match event.kind:
            case "turn_started":
                started = Turn(event.run_id, event.turn, event.at)
                started.run_breakers = self._breakers.get(event.run_id, ())
                self._open[event.run_id] = started
                return None
            case "run_started":
                self._breakers[event.run_id] = event.breakers
                return None
            case "run_finished":
                return None
        number = event.turn
        turn = self._open.get(event.run_id)
        if turn is None or turn.turn != number:
            if event.kind != "turn_finished" and event.kind != "hard_error_raised":
                return None  # an event outside any turn (a breaker moving before turn 1)
            turn = self._open[event.run_id] = Turn(event.run_id, number)
            turn.run_breakers = self._breakers.get(event.run_id, ())
        match event.kind:
            case "tool_dispatched":
                turn.dispatched.append(event)
            case "model_replied":
                turn.replied = event
            case "soft_error_returned":
                turn.soft_errors.append(event)
            case "recovery_decided":
                turn.decisions.append(event)
            case "hard_error_raised":
                turn.hard = event
            case "turn_finished":
                turn.finished = event
                del self._open[event.run_id]
                return turn
            case "model_failed":
                if event.injected is not None:
                    turn.model_injected.append(event.injected)
            case "breaker_transitioned" | "detector_fired" | "completion_rejected" | "context_compacted":
                pass  # none of a turn's own facts
            case _:
                assert_never(event)
        return None


def turns_of(events: Iterable[Event]) -> list[Turn]:
    """The finished turns of an event stream, in the order they finished."""
    add = TurnAssembler().add
    return [turn for turn in map(add, events) if turn is not None]
