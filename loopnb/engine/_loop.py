"""One run of an engine: the turn loop and ``finalize``.

``RunLoop`` is the async core every entry point drives (see ``_drivers`` for the synchronous ones).
On every hard error ``_finalize`` runs: completed turns commit, the in-flight turn is dropped
(``ContextExceeded`` discards the scratchpad whole), the run is reported to observers, and the
error carries the salvaged run.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any

from loopnb.engine._cancel import INTERRUPTED, wake_task_on_cancel
from loopnb.engine._compaction import Compaction
from loopnb.engine._errors import (
    ContextExceeded,
    LoopError,
    ModelContextOverflow,
    SoftProducer,
    channel_of,
    shown,
    text_of,
)
from loopnb.engine._events import (
    CompletionRejected,
    HardErrorRaised,
    RunFinished,
    RunStarted,
    SoftErrorReturned,
    TurnFinished,
    TurnStarted,
)
from loopnb.engine._messages import Message, ToolResult, Transcript
from loopnb.engine._recovery import MAX_RECOVERY_ATTEMPTS
from loopnb.engine._result import RunResult
from loopnb.engine._state import RunState
from loopnb.engine._texts import CHECK_SAID_NO, check_raised_text, rejection_text
from loopnb.engine._watch import RunSafety

if TYPE_CHECKING:
    from loopnb.engine._engine import DoneCheck, Engine


class RunLoop(Compaction):
    """One run of an engine: the turn loop and ``finalize``."""

    def __init__(self, engine: Engine, state: RunState, task: str) -> None:
        self.engine = engine
        self.state = state
        self.task = task
        self.result: RunResult | None = None
        self.error: LoopError | None = None
        self.safety = RunSafety(engine.safety_systems(), state, engine.dispatcher.refused)
        self.tokens: list[int] | None = None  # per-item token counts, kept only with a budget
        self.head = 0  # items never compacted: the system prompt and the task
        self.models_used: dict[str, None] = {}  # in order of first use
        self.started = False

    async def complete(self) -> RunResult:
        """Every remaining turn, to the end (what ``arun`` does)."""
        release = wake_task_on_cancel(self.state.cancel)
        try:
            if not self.started:
                self._start()
            while self.result is None:
                await self._turn()
        except BaseException as exc:
            self._ended_by(exc)
            raise
        finally:
            release()
        return self.result

    async def steps(self) -> AsyncGenerator[TurnFinished | None, None]:
        """Turn by turn (what ``iter`` and ``aiter`` do). Closing it early cancels the run."""
        try:
            while self.result is None:
                yield await self.turn()
        finally:
            if self.result is None and self.error is None:  # the caller stopped iterating
                self.state.cancel.cancel("the caller stopped the run")
                self._finalize(self._closed_error())

    async def turn(self) -> TurnFinished | None:
        """One turn, with the hard-error handling every driver shares."""
        release = wake_task_on_cancel(self.state.cancel)
        try:
            if not self.started:
                self._start()
            return await self._turn()
        except BaseException as exc:
            self._ended_by(exc)
            raise
        finally:
            release()

    def _ended_by(self, exc: BaseException) -> None:
        """A turn raised: finalise a hard error; an interrupt becomes ``Cancelled`` (raised here)."""
        if isinstance(exc, LoopError):
            self._finalize(exc)
        elif isinstance(exc, KeyboardInterrupt | asyncio.CancelledError):
            self.state.cancel.cancel(INTERRUPTED)
            try:
                self.state.checkpoint()
            except LoopError as err:
                self._finalize(err)
                raise err from None

    def _closed_error(self) -> LoopError:
        try:
            self.state.checkpoint()
        except LoopError as err:
            return err
        raise AssertionError("unreachable: the token was fired")

    def _start(self) -> None:
        self.started = True
        s, e = self.state, self.engine
        if e.system:
            self._append(Message(role="system", content=e.system))
        self._append(Message(role="user", content=self.task))
        self.head = len(s.messages)
        s.committed_messages = self.head
        self.transcript = Transcript(s.messages)  # one read-only view of the list, for every request
        if s.observing:
            s.emit(
                RunStarted(
                    seq=s.next_seq(),
                    run_id=s.run_id,
                    at=s.clock.time(),
                    task=self.task,
                    system=e.system,
                    models=tuple(e.chain.names),
                    tools=tuple(e.registry.names),
                    advertised=tuple(spec.name for spec in e.specs),
                    breakers=tuple(e.breaker_states()),
                    settings=self._settings(),
                )
            )

    def _settings(self) -> dict[str, Any]:
        e = self.engine
        return {
            "max_recovery_attempts": MAX_RECOVERY_ATTEMPTS,
            "recovery": repr(e.dispatcher.recovery) if e.dispatcher.recovery else None,
            "loop_detector": repr(e.loop_detector) if e.loop_detector else None,
            "convergence": repr(e.convergence) if e.convergence else None,
            "tool_breakers": sorted(e.tool_breakers),
            "timeout": e.dispatcher.timeout,
            "max_tokens": e.context.max_tokens if e.context else None,
            "max_turns": e.max_turns,
            "done_check": e.done is not None,
            # a FakeClock's time is simulated: reports keep its latencies apart from wall time
            "clock": "simulated" if getattr(self.state.clock, "simulated", False) is True else "wall",
            **({"safety": [shown(system) for system in e.safety]} if e.safety else {}),
        }

    async def _turn(self) -> TurnFinished | None:
        s, e, safety = self.state, self.engine, self.safety
        s.turn += 1
        if s.observing:
            s.emit(TurnStarted(seq=s.next_seq(), run_id=s.run_id, at=s.clock.time(), turn=s.turn))
        if safety.turn:
            safety.ask(safety.turn, None, s.turn)
        if s.cancel.cancelled:
            s.checkpoint()
        if e.context is not None:
            self._fit(e.context.max_tokens)
        try:
            reply, model = await e.chain.ask(self.transcript, e.specs, s)
        except ModelContextOverflow as overflow:
            reply, model = await self._ask_after_overflow(overflow)
        calls = reply.tool_calls
        if model not in self.models_used:
            self.models_used[model] = None
        append = s.messages.append if self.tokens is None else self._append
        append(reply)
        results: list[ToolResult] = []
        feedback: list[Message] = []
        if calls:
            dispatch, token = e.dispatcher.dispatch, s.cancel
            for call in calls:
                if token.cancelled:
                    s.checkpoint()
                # stage 1 of the dispatch: a safety system may refuse the call before it is dispatched
                if safety.armed and (refusal := safety.ask(safety.before, call, call)) is not None:
                    result = refusal
                else:
                    answer = dispatch(call, s)
                    # it has to wait: an async tool, a timeout, recovery
                    result = answer if isinstance(answer, ToolResult) else await answer
                    if safety.busy or result.is_error:  # an idle watch learns nothing from a success
                        safety.ask(safety.after, None, call, result)
                results.append(result)
                append(result)
            s.tool_results += results
            if safety.notes:  # the safety systems' warnings, read after the results
                feedback = self._read(safety.take_notes())
        else:
            feedback = self._read(self._judge(reply.text or ""))
        s.committed_messages = len(s.messages)
        s.committed_results = len(s.tool_results)
        return self._report(results, feedback) if s.observing else None

    def _read(self, feedback: list[Message]) -> list[Message]:
        """Put the engine's own messages for the model (``feedback``) on the scratchpad."""
        for message in feedback:
            self._append(message)
        return feedback

    def _report(self, results: list[ToolResult], feedback: list[Message]) -> TurnFinished:
        """Report the soft errors the model read this turn, then the turn itself (and the run's end,
        when the turn ended it)."""
        s = self.state
        producer: SoftProducer | None = None
        for result in results:
            if result.is_error:
                self._soft(result.producer, result.content, result.name, result.call_id)
                producer = producer or result.producer
        for message in feedback:
            if message.is_error:
                self._soft(message.producer, message.content, None, None)
                producer = producer or message.producer
        event = TurnFinished(
            seq=s.next_seq(),
            run_id=s.run_id,
            at=s.clock.time(),
            turn=s.turn,
            channel=channel_of(producer),
            producer=producer,
            breakers=self.engine.breakers_not_closed(),
        )
        s.emit(event)
        if self.result is not None:
            s.emit(
                RunFinished(
                    seq=s.next_seq(),
                    run_id=s.run_id,
                    at=s.clock.time(),
                    outcome="ok",
                    turns=s.turn,
                    output=self.result.output,
                )
            )
        return event

    def _soft(self, producer: SoftProducer | None, text: str, tool: str | None, call_id: str | None) -> None:
        s = self.state
        assert producer is not None
        s.emit(
            SoftErrorReturned(
                seq=s.next_seq(),
                run_id=s.run_id,
                at=s.clock.time(),
                turn=s.turn,
                producer=producer,
                text=text,
                tool=tool,
                call_id=call_id,
            )
        )

    def _judge(self, text: str) -> list[Message]:
        """A final reply: accept it (the run is done) or reject it and let the model go on."""
        s, e = self.state, self.engine
        reason = _verdict(e.done, text)
        if reason is None:
            self.result = RunResult(
                run_id=s.run_id,
                output=text,
                messages=s.messages,
                tool_results=s.tool_results,
                turns=s.turn,
                models=tuple(self.models_used),
            )
            return []
        if s.observing:
            s.emit(
                CompletionRejected(
                    seq=s.next_seq(),
                    run_id=s.run_id,
                    at=s.clock.time(),
                    turn=s.turn,
                    reply=text,
                    reason=reason,
                )
            )
        rejection = Message(
            role="user",
            content=rejection_text(reason),
            is_error=True,
            producer="completion_rejected",
        )
        safety = self.safety
        if safety.rejected:
            safety.ask(safety.rejected, None, text)  # convergence: a warning for the model, or the run ends
        return [rejection, *safety.take_notes()]

    def _finalize(self, err: LoopError) -> None:
        """Salvage the run, report the hard ending, attach the run to the error."""
        s = self.state
        self.error = err
        discard = isinstance(err, ContextExceeded)
        keep = self.head if discard else s.committed_messages
        messages = s.messages[:keep]
        results = [] if discard else s.tool_results[: s.committed_results]
        err.run = RunResult(
            run_id=s.run_id,
            output=None,
            messages=messages,
            tool_results=results,
            turns=s.turn,
            models=tuple(self.models_used),
        )
        if not s.observing:
            return
        channel = channel_of(err.producer)  # "hard": what every LoopError's producer is
        now = s.clock.time()
        s.emit(
            HardErrorRaised(
                seq=s.next_seq(),
                run_id=s.run_id,
                at=now,
                turn=s.turn,
                producer=err.producer,
                error=type(err).__name__,
                message=err.message,
            )
        )
        if s.turn > 0:
            s.emit(
                TurnFinished(
                    seq=s.next_seq(),
                    run_id=s.run_id,
                    at=now,
                    turn=s.turn,
                    channel=channel,
                    producer=err.producer,
                    breakers=self.engine.breakers_not_closed(),
                    dropped=True,
                )
            )
        s.emit(
            RunFinished(
                seq=s.next_seq(),
                run_id=s.run_id,
                at=now,
                outcome="hard",
                turns=s.turn,
                output=None,
                error=type(err).__name__,
                producer=err.producer,
                message=err.message,
                scratchpad_discarded=discard,
            )
        )


def _verdict(done: DoneCheck | None, text: str) -> str | None:
    """``None`` when the reply is accepted, else the reason it was rejected."""
    if done is None:
        return None
    try:
        verdict = done(text)
    except KeyboardInterrupt:  # Ctrl-C landing in the check: the run ends as Cancelled
        raise
    except BaseException as exc:  # a broken check rejects, and says why (SystemExit too)
        return check_raised_text(exc)
    if verdict is None or verdict is True:
        return None
    if verdict is False:
        return CHECK_SAID_NO
    return text_of(verdict)
