"""Write down a run another framework made as loopnb events, one fact at a time.

A reader walks its source (a message history, spans, a log) in order and tells a ``RunWriter``
what happened: a turn began, the model replied, a call's result came back (and what the source
said of it), the run ended. The writer numbers the events, keeps time moving forward and applies
the channel table's bookkeeping the engine would (a soft error is also a ``SoftErrorReturned``, a
turn that read an error is ``soft``, the turn a run ended on is ``hard`` and dropped), so that the
events read back into the same turns as a loopnb run's. What a call or a turn *was* (its
producer) is the reader's judgement: the writer never guesses it.

Two checks every reader shares live here too: ``token_problem`` (a token count is a whole number
the frames' int64 columns hold; the writer refuses a reply whose usage is not, for a reader that
did not name the place first) and ``too_deep`` (the words for a value nested past Python's
recursion limit).
"""

from __future__ import annotations

import reprlib
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from loopnb.engine import ModelReply, ToolCall, ToolResult, Usage
from loopnb.engine._errors import HardProducer, SoftProducer, SourceProducer
from loopnb.engine._events import (
    Event,
    HardErrorRaised,
    ModelReplied,
    RunFinished,
    RunStarted,
    SoftErrorReturned,
    ToolDispatched,
    TurnFinished,
    TurnStarted,
)
from loopnb.record import RecordingError

MAX_TOKENS = 2**63 - 1
"""The largest token count a turns frame holds (its token columns are int64)."""

_ERROR_NAMES: dict[str, str] = {
    "cancelled": "Cancelled",
    "context_exceeded": "ContextExceeded",
    "loop_detected": "LoopDetected",
    "user_input_required": "UserInputRequired",
    "tool_recovery_exhausted": "ToolRecoveryExhausted",
    "fallback_exhausted": "FallbackExhausted",
    "source_error": "SourceError",
}


def status(source: str, said: str | None) -> str | None:
    """A ``source_status`` value: what ``source`` (a format name) said, qualified by the format
    (``"otlp:ERROR"``, ``"pydantic-ai:retried"``) so that a folder of mixed runs stays readable."""
    return None if said is None else f"{source}:{said}"


def token_problem(value: object) -> str | None:
    """What is wrong with ``value`` as a token count (``None`` when it is one): a count is an
    int from 0 to ``MAX_TOKENS`` (a bool, a float or a string is not)."""
    if type(value) is int and 0 <= value <= MAX_TOKENS:
        return None
    if type(value) is int:
        shown = str(value) if value.bit_length() <= 128 else f"an int of {value.bit_length()} bits"
    else:
        shown = reprlib.repr(value)  # bounded: a hostile value may be huge or nested deep
    return f"expected a number of tokens, found {shown}: a count is a whole number from 0 to 2**63 - 1"


def unexplained(record: str = "trace") -> str:
    """The words for an end the source does not explain (``record``: what the source keeps, a
    trace or a history): said plainly, never a guessed cause."""
    return f"the {record} does not say why the run stopped"


def too_deep(what: str) -> str:
    """The words for ``what`` (a file, a member, a value) nested past the recursion limit."""
    return f"{what} is nested deeper than loopnb reads (Python's recursion limit, {sys.getrecursionlimit()})"


class RunWriter:
    """The events of one foreign run, written in order: ``turn()``, then ``finish`` or ``end_hard``.

    Args:
        run_id: The run's id (the source's trace or run id where it has one).
        task: What the run was asked (the first user prompt), or ``""``.
        at: When the run started, epoch seconds.
        system: The system prompt, if the source kept it.
        models: The models the run used, in order of first use (more may be added as replies
            name them; only the start's list is written).
        tools: The tools the agent offered.
        settings: Anything else worth keeping from the source (its version, an agent's name).
    """

    def __init__(
        self,
        run_id: str,
        *,
        task: str = "",
        at: float = 0.0,
        system: str | None = None,
        models: Sequence[str] = (),
        tools: Sequence[str] = (),
        settings: dict[str, Any] | None = None,
    ) -> None:
        self.run_id = run_id
        self.events: list[Event] = []
        self._seq = 0
        self._at = at
        self._turn: TurnWriter | None = None
        self.turns = 0
        self.ended = False
        tools = tuple(tools)
        self._add(
            RunStarted(
                seq=0,
                run_id=run_id,
                at=at,
                task=task,
                system=system,
                models=tuple(models),
                tools=tools,
                advertised=tools,
                settings=dict(settings or {}),
            )
        )

    def _next(self) -> int:
        self._seq += 1
        return self._seq

    def when(self, at: float | None) -> float:
        """``at``, never before the last event's time (sources round, and some keep no times)."""
        if at is not None and at > self._at:
            self._at = at
        return self._at

    def _add(self, event: Event) -> None:
        self.events.append(event)

    def turn(self, *, at: float | None = None) -> TurnWriter:
        """Start the next turn (finishing an open one first)."""
        if self.ended:
            raise ValueError(f"run {self.run_id} has ended: no turn can follow")
        if self._turn is not None and not self._turn.finished:
            self._turn.finish()
        self.turns += 1
        self._turn = TurnWriter(self, self.turns)
        self._add(TurnStarted(seq=self._next(), run_id=self.run_id, at=self.when(at), turn=self.turns))
        return self._turn

    @property
    def open_turn(self) -> TurnWriter | None:
        """The turn started and not yet finished, if any."""
        return self._turn if self._turn is not None and not self._turn.finished else None

    def finish(self, output: str | None, *, at: float | None = None) -> list[Event]:
        """End the run ``ok`` with ``output`` (the model's final text); returns the events."""
        if self.open_turn is not None:
            self.open_turn.finish(at=at)
        self.ended = True
        self._add(
            RunFinished(
                seq=self._next(),
                run_id=self.run_id,
                at=self.when(at),
                outcome="ok",
                turns=self.turns,
                output=output,
            )
        )
        return self.events

    def end_hard(
        self,
        producer: HardProducer | SourceProducer,
        message: str,
        *,
        error: str | None = None,
        at: float | None = None,
        source_status: str | None = None,
    ) -> list[Event]:
        """End the run hard on the open turn (or on a new one when none is open): that turn is
        ``hard`` and dropped, ``message`` what ended it, ``error`` the source's exception class
        (default: the LoopError variant's name). Returns the events."""
        turn = self.open_turn or self.turn(at=at)
        when = self.when(at)
        name = error or _ERROR_NAMES[producer]
        self._add(
            HardErrorRaised(
                seq=self._next(),
                run_id=self.run_id,
                at=when,
                turn=turn.turn,
                producer=producer,
                error=name,
                message=message,
            )
        )
        self._add(
            TurnFinished(
                seq=self._next(),
                run_id=self.run_id,
                at=when,
                turn=turn.turn,
                channel="hard",
                producer=producer,
                dropped=True,
                source_status=source_status,
            )
        )
        turn.finished = True
        self.ended = True
        self._add(
            RunFinished(
                seq=self._next(),
                run_id=self.run_id,
                at=when,
                outcome="hard",
                turns=self.turns,
                error=name,
                producer=producer,
                message=message,
            )
        )
        return self.events


class TurnWriter:
    """One turn of a ``RunWriter``: ``reply``, then a ``result`` per call, then ``finish``."""

    def __init__(self, run: RunWriter, turn: int) -> None:
        self._run = run
        self.turn = turn
        self.reply_: ModelReply | None = None
        self.finished = False
        self._producer: SoftProducer | None = None

    def reply(
        self,
        text: str | None = None,
        calls: Iterable[ToolCall] = (),
        *,
        model: str | None = None,
        usage: Usage | None = None,
        at: float | None = None,
        latency_ms: float = 0.0,
    ) -> ModelReply:
        """The model's answer this turn: its text and the calls it asked for (a token count
        outside ``token_problem``'s range is a ``RecordingError`` naming the run and turn)."""
        run = self._run
        for side in ("input_tokens", "output_tokens"):
            problem = None if usage is None else token_problem(getattr(usage, side))
            if problem is not None:
                raise RecordingError(f"run {run.run_id}, turn {self.turn}: usage.{side}: {problem}")
        reply = ModelReply(text=text, tool_calls=tuple(calls), model=model, usage=usage)
        self.reply_ = reply
        run._add(
            ModelReplied(
                seq=run._next(),
                run_id=run.run_id,
                at=run.when(at),
                turn=self.turn,
                reply=reply,
                latency_ms=latency_ms,
            )
        )
        return reply

    def result(
        self,
        call_id: str,
        content: str,
        *,
        name: str | None = None,
        producer: SoftProducer | None = None,
        source_status: str | None = None,
        attempt: int = 0,
        executed: bool = True,
        at: float | None = None,
        latency_ms: float = 0.0,
        injected: str | None = None,
    ) -> ToolResult:
        """What the model read for call ``call_id``: an error when ``producer`` is given (the
        channel table's row it falls in), else the tool's output; ``injected`` is the label of the
        fault ``loopnb.inject`` put into the call, where the source says so."""
        run = self._run
        if name is None:
            name = (
                next((c.name for c in self.reply_.tool_calls if c.id == call_id), "") if self.reply_ else ""
            )
        result = ToolResult(
            content, is_error=producer is not None, name=name, call_id=call_id, producer=producer
        )
        when = run.when(at)
        run._add(
            ToolDispatched(
                seq=run._next(),
                run_id=run.run_id,
                at=when,
                turn=self.turn,
                result=result,
                attempt=attempt,
                executed=executed,
                latency_ms=latency_ms,
                source_status=source_status,
                injected=injected,
            )
        )
        if producer is not None:
            self._soft(producer, content, name, call_id, when)
        return result

    def feedback(self, text: str, producer: SoftProducer, *, at: float | None = None) -> None:
        """An error the model read that no tool call produced (a rejected final answer)."""
        self._soft(producer, text, None, None, self._run.when(at))

    def _soft(
        self, producer: SoftProducer, text: str, tool: str | None, call_id: str | None, at: float
    ) -> None:
        run = self._run
        self._producer = self._producer or producer
        run._add(
            SoftErrorReturned(
                seq=run._next(),
                run_id=run.run_id,
                at=at,
                turn=self.turn,
                producer=producer,
                text=text,
                tool=tool,
                call_id=call_id,
            )
        )

    def finish(self, *, source_status: str | None = None, at: float | None = None) -> None:
        """End the turn: ``soft`` when the model read an error in it, else ``ok``."""
        if self.finished:
            return
        run = self._run
        self.finished = True
        run._add(
            TurnFinished(
                seq=run._next(),
                run_id=run.run_id,
                at=run.when(at),
                turn=self.turn,
                channel="soft" if self._producer is not None else "ok",
                producer=self._producer,
                source_status=source_status,
            )
        )
