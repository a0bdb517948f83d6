"""Event streams built by hand, with no engine: for tests, benchmarks and teaching.

``RunBuilder`` emits the events a run would, in the engine's order (``RunStarted``, per turn
``TurnStarted`` ... ``TurnFinished``, one ``RunFinished``), with an injected clock so the
timestamps are exact::

    b = RunBuilder("r1")
    b.tool_turn(Call("read_file", content="file src/mian.rs not found", error="tool_error"))
    b.tool_turn(Call("read_file", content="fn main() {}"))
    b.final("It prints nothing.")
    b.events  # 11 events
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from loopnb.engine.errors import HardProducer, SoftProducer, channel_of
from loopnb.engine.events import (
    BreakerState,
    BreakerTransitioned,
    DetectorFired,
    Event,
    HardErrorRaised,
    ModelReplied,
    RecoveryDecided,
    RunFinished,
    RunStarted,
    SoftErrorReturned,
    ToolDispatched,
    TurnFinished,
    TurnStarted,
)
from loopnb.engine.messages import Message, ModelReply, ToolCall, ToolResult, Usage
from loopnb.engine.recovery import MAX_RECOVERY_ATTEMPTS

__all__ = ["Call", "RunBuilder"]

_CLASS_OF: dict[str, str] = {
    "cancelled": "Cancelled",
    "context_exceeded": "ContextExceeded",
    "loop_detected": "LoopDetected",
    "user_input_required": "UserInputRequired",
    "tool_recovery_exhausted": "ToolRecoveryExhausted",
    "fallback_exhausted": "FallbackExhausted",
}


@dataclass(frozen=True)
class Call:
    """One tool call of a turn and how it ends.

    ``error`` is the producer when the result the model reads is an error. ``retries`` recovery
    retries are granted first (each a failed attempt followed by a ``retry`` decision, numbered
    like the engine's: the decision after attempt k carries ``attempt=k``); with ``gave_up``
    set, the strategy then answered that decision and the model reads attempt 0's result as
    ``recovery_gave_up``.
    """

    name: str
    content: str = "ok"
    error: SoftProducer | None = None
    arguments: dict[str, Any] = field(default_factory=dict)
    retries: int = 0
    gave_up: str | None = None
    note: str | None = None
    executed: bool = True


class RunBuilder:
    """Builds one run's events; every timestamp comes from a clock that ``step`` seconds a tick."""

    def __init__(
        self,
        run_id: str = "run-1",
        *,
        task: str = "What does src/main.rs do?",
        model: str = "scripted",
        tools: tuple[str, ...] = ("read_file",),
        start: float = 1_767_225_600.0,
        step: float = 0.001,
    ) -> None:
        self.run_id = run_id
        self.model = model
        self.events: list[Event] = []
        self.breakers: dict[str, BreakerState] = {}
        self._now = start
        self._step = step
        self._seq = 0
        self._turn = 0
        self._emit(
            RunStarted,
            task=task,
            system=None,
            models=(model,),
            tools=tools,
            advertised=tools,
        )

    def _tick(self) -> float:
        self._now += self._step
        return self._now

    def _emit(self, cls: Any, **fields: Any) -> Any:
        event = cls(seq=self._seq, run_id=self.run_id, at=self._tick(), **fields)
        self._seq += 1
        self.events.append(event)
        return event

    def _begin(self) -> float:
        self._turn += 1
        started = self._emit(TurnStarted, turn=self._turn)
        return float(started.at)

    def breaker(self, target: str, state: BreakerState, *, scope: str = "tool") -> None:
        """Emit a breaker transition inside the current turn."""
        previous = self.breakers.get(target, "closed")
        self.breakers[target] = state
        self._emit(
            BreakerTransitioned,
            turn=max(self._turn, 1),
            target=target,
            scope=scope,
            previous=previous,
            state=state,
            failures=3 if state == "open" else 0,
            cooldown=30.0,
        )

    def tool_turn(
        self,
        *calls: Call,
        text: str | None = None,
        usage: tuple[int, int] | None = None,
        detector: tuple[str, str, int] | None = None,
        feedback: tuple[Message, ...] = (),
        model: str | None = None,
    ) -> None:
        """One turn in which the model calls ``calls``; the channel follows their results."""
        started = self._begin()
        model = model or self.model
        tool_calls = tuple(
            ToolCall(c.name, c.arguments, id=f"c{self._turn}_{i}") for i, c in enumerate(calls)
        )
        reply = ModelReply(
            text=text,
            tool_calls=tool_calls,
            model=model,
            usage=Usage(input_tokens=usage[0], output_tokens=usage[1]) if usage else None,
        )
        self._emit(ModelReplied, turn=self._turn, model=model, reply=reply, latency_ms=1.0)
        if detector is not None:
            name, action, count = detector
            self._emit(
                DetectorFired,
                turn=self._turn,
                detector=name,
                action=action,
                text=f"{name} detector: {action}",
                count=count,
            )
        results: list[ToolResult] = []
        for call, tc in zip(calls, tool_calls, strict=True):
            results.append(self._dispatch(call, tc))
        retries = max((r.attempts - 1 for r in results), default=0)
        errors = self._soft_errors(results, feedback)
        producer: SoftProducer | None = next((p for p, _ in errors), None)
        self._emit(
            TurnFinished,
            turn=self._turn,
            started_at=started,
            latency_ms=2.0,
            channel=channel_of(producer),
            producer=producer,
            model=model,
            reply=reply,
            results=tuple(results),
            feedback=feedback,
            recovery_attempts=retries,
            breakers=dict(self.breakers),
            error_text="\n".join(text for _, text in errors) or None,
        )

    def _soft_errors(
        self, results: list[ToolResult], feedback: tuple[Message, ...]
    ) -> list[tuple[SoftProducer | None, str]]:
        """Report what the model read as errors, as the engine does when a turn ends: the error
        results in call order, then the engine's feedback; returns (producer, text) pairs."""
        read = [(r.producer, r.content, r.name, r.call_id) for r in results if r.is_error]
        read += [(m.producer, m.content, None, None) for m in feedback if m.is_error]
        for producer, text, tool, call_id in read:
            self._emit(
                SoftErrorReturned, turn=self._turn, producer=producer, text=text, tool=tool, call_id=call_id
            )
        return [(producer, text) for producer, text, _, _ in read]

    def _dispatch(self, call: Call, tc: ToolCall, *, exhaust: bool = False) -> ToolResult:
        def result(content: str, producer: SoftProducer | None, attempts: int) -> ToolResult:
            return ToolResult(
                content,
                is_error=producer is not None,
                name=call.name,
                call_id=tc.id,
                producer=producer,
                note=call.note,
                attempts=attempts,
            )

        first = result(
            call.content if call.retries == 0 or call.gave_up else f"{call.name} failed",
            call.error if call.retries == 0 or call.gave_up else "tool_error",
            1 if call.executed else 0,
        )
        dispatched = [first]
        self._emit(
            ToolDispatched,
            turn=self._turn,
            call=tc,
            attempt=0,
            result=first,
            executed=call.executed,
            latency_ms=0.5,
        )
        for attempt in range(1, call.retries + 1):
            self._decide(call, tc, attempt - 1, "retry")
            last = attempt == call.retries and not call.gave_up
            res = result(
                call.content if last else f"{call.name} failed",
                call.error if last else "tool_error",
                attempt + 1,
            )
            dispatched.append(res)
            self._emit(
                ToolDispatched,
                turn=self._turn,
                call=tc,
                attempt=attempt,
                result=res,
                executed=True,
                latency_ms=0.5,
            )
        final = dispatched[-1]
        if exhaust:
            self._decide(call, tc, call.retries, "retry")
            return final
        if call.gave_up:
            self._decide(call, tc, call.retries, call.gave_up)
            final = first.model_copy(update={"producer": "recovery_gave_up", "attempts": call.retries + 1})
        return final

    def _decide(self, call: Call, tc: ToolCall, attempt: int, decision: str) -> None:
        self._emit(
            RecoveryDecided,
            turn=self._turn,
            call_id=tc.id,
            tool=call.name,
            attempt=attempt,
            max_attempts=MAX_RECOVERY_ATTEMPTS,
            decision=decision,
            corrected_input=None,
            delay=0.0,
            note=call.note,
        )

    def final(self, text: str, *, model: str | None = None) -> None:
        """The model's final reply; the run ends ok."""
        started = self._begin()
        model = model or self.model
        reply = ModelReply(text=text, model=model)
        self._emit(ModelReplied, turn=self._turn, model=model, reply=reply, latency_ms=1.0)
        self._emit(
            TurnFinished,
            turn=self._turn,
            started_at=started,
            latency_ms=2.0,
            channel="ok",
            producer=None,
            model=model,
            reply=reply,
            results=(),
            feedback=(),
            recovery_attempts=0,
            breakers=dict(self.breakers),
        )
        self._emit(RunFinished, outcome="ok", turns=self._turn, output=text, error=None, message=None)

    def hard(self, producer: HardProducer, message: str, *calls: Call) -> None:
        """The turn the run ends on, with ``producer``'s LoopError; the run ends hard."""
        started = self._begin()
        reply = None
        if calls:
            tool_calls = tuple(
                ToolCall(c.name, c.arguments, id=f"c{self._turn}_{i}") for i, c in enumerate(calls)
            )
            reply = ModelReply(tool_calls=tool_calls, model=self.model)
            self._emit(ModelReplied, turn=self._turn, model=self.model, reply=reply, latency_ms=1.0)
            exhaust = producer == "tool_recovery_exhausted"
            for c, tc in zip(calls, tool_calls, strict=True):
                self._dispatch(c, tc, exhaust=exhaust)
        if producer == "loop_detected":
            self._emit(
                DetectorFired,
                turn=self._turn,
                detector="loop",
                action="stop",
                text=message,
                count=6,
            )
        error = _CLASS_OF[producer]
        self._emit(HardErrorRaised, turn=self._turn, producer=producer, error=error, message=message)
        self._emit(
            TurnFinished,
            turn=self._turn,
            started_at=started,
            latency_ms=2.0,
            channel="hard",
            producer=producer,
            model=self.model if reply is not None else None,
            reply=reply,
            results=(),
            feedback=(),
            recovery_attempts=max((c.retries for c in calls), default=0),
            breakers=dict(self.breakers),
            dropped=True,
            error_text=message,
        )
        self._emit(
            RunFinished,
            outcome="hard",
            turns=self._turn,
            output=None,
            error=error,
            message=message,
            scratchpad_discarded=producer == "context_exceeded",
        )
