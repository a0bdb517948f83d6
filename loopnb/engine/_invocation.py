"""Stage 7 of the dispatcher, whole: calling an admitted tool, and recovery's retries of the call.

Each attempt validates the call's arguments against the tool's schema (at every attempt: a retry
may correct them), then calls the tool: a sync tool with no timeout inline, right here (no thread
hop, no await), anything else awaited under the timeout middleware. Whatever the tool does
(returns, raises, hangs, hands back an awaitable) becomes the text the model reads and the
producer of a soft error, or ``None`` on success; an exception is caught as a panic. Both ways
share one attempt body (``_attempt``) and one exception ladder (``_outcome.failure``). A failed call goes
to the recovery driver (stage 8), and its outcome is counted on its tool's breaker.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Coroutine
from typing import Any

from pydantic import ValidationError

from loopnb.engine._breakers import CircuitBreaker
from loopnb.engine._clock import Clock
from loopnb.engine._deadline import in_thread, with_timeout
from loopnb.engine._errors import SoftProducer
from loopnb.engine._events import RecoveryDecided, ToolDispatched
from loopnb.engine._messages import ToolCall, ToolResult
from loopnb.engine._outcome import called, content_of, failure
from loopnb.engine._recovery import (
    MAX_RECOVERY_ATTEMPTS,
    RECOVERABLE,
    Decision,
    Failure,
    RecoveryStrategy,
    Retry,
    decision_name,
    drive,
)
from loopnb.engine._state import RunState
from loopnb.engine._texts import invalid_arguments_text, timeout_text, unchecked_arguments_text
from loopnb.engine._tools import StandIn, Tool, parse_arguments

BREAKER_FAILURES: frozenset[str] = frozenset({"tool_error", "tool_panic", "timeout"})
"""Outcomes that count against a tool's health. Invalid arguments are the model's, not the tool's."""


class Invocation:
    """Calls admitted tools for a dispatcher: attempts under the timeout, and recovery's retries."""

    def __init__(self, *, timeout: float | None, recovery: RecoveryStrategy | None, clock: Clock) -> None:
        self.timeout = timeout
        self.recovery = recovery
        self.clock = clock
        self._waits = timeout is not None or recovery is not None  # every call is awaited

    def call(
        self,
        tool: Tool,
        breaker: CircuitBreaker | None,
        call: ToolCall,
        state: RunState,
    ) -> ToolResult | Coroutine[Any, Any, ToolResult]:
        """The one result of an admitted call, its outcome counted on ``breaker``.

        A sync tool with no timeout and no recovery strategy is called right here and its result
        comes back as is; anything that has to wait comes back as a coroutine to await.
        """
        if tool.is_async or self._waits:
            return self._call_waiting(tool, breaker, call, state, None)
        result = self._attempt(tool, call, 0, state)
        if not isinstance(result, ToolResult):  # the sync tool returned an awaitable: it waits after all
            return self._call_waiting(tool, breaker, call, state, result)
        if breaker is not None:
            _settle(breaker, result, result, state)
        return result

    async def _call_waiting(
        self,
        tool: Tool,
        breaker: CircuitBreaker | None,
        call: ToolCall,
        state: RunState,
        attempted: Attempted | None,
    ) -> ToolResult:
        """A call that has to wait: an async tool, the timeout middleware, or recovery.

        ``attempted`` is attempt 0 already begun by ``call`` (a sync tool that returned an awaitable).
        """
        first = self._attempt(tool, call, 0, state) if attempted is None else attempted
        if not isinstance(first, ToolResult):
            first = await first
        result = first
        if first.is_error and self.recovery is not None and first.producer in RECOVERABLE:
            result = await self._recover(tool, call, first, state)
        if breaker is not None:
            _settle(breaker, first, result, state)
        return result

    async def _recover(self, tool: Tool, call: ToolCall, first: ToolResult, state: RunState) -> ToolResult:
        assert self.recovery is not None

        def on_decision(failure: Failure, attempt: int, decision: Decision, valid: bool) -> None:
            if state.observing:
                retry = isinstance(decision, Retry)
                state.emit(
                    RecoveryDecided(
                        seq=state.next_seq(),
                        run_id=state.run_id,
                        at=self.clock.time(),
                        turn=state.turn,
                        call_id=call.id,
                        tool=call.name,
                        attempt=attempt,
                        max_attempts=MAX_RECOVERY_ATTEMPTS,
                        decision=decision_name(decision),  # type: ignore[arg-type]
                        corrected_input=decision.corrected_input if retry else None,  # type: ignore[union-attr]
                        delay=decision.delay if retry else 0.0,  # type: ignore[union-attr]
                        note=decision.note,
                        valid=valid,
                    )
                )

        async def execute(retry_call: ToolCall, attempt: int) -> ToolResult:
            result = self._attempt(tool, retry_call, attempt, state)
            return result if isinstance(result, ToolResult) else await result

        return await drive(
            self.recovery,
            call=call,
            first=first,
            tool=tool.spec,
            execute=execute,
            sleep=self.clock.sleep,
            on_decision=on_decision,
            before_retry=state.checkpoint,
        )

    def _attempt(self, tool: Tool, call: ToolCall, attempt: int, state: RunState) -> ToolResult | Attempted:
        """One attempt: check the arguments, call the tool, word what it did, report the result.

        A sync tool with no timeout is called right here and its result given back as is: the hot
        path, with no thread hop and no await. An async tool, a sync one under the timeout or one
        that returned an awaitable has to wait: the coroutine finishing the attempt (``_awaited``)
        comes back. Either way ``_result`` words the result, and ``_failure`` any exception.
        """
        t0 = self.clock.monotonic() if state.observing else 0.0
        kwargs = _arguments(tool, call)
        if isinstance(kwargs, str):
            return self._result(tool, call, attempt, state, t0, kwargs, "invalid_arguments", False)
        if tool.stand_in is not None:
            stand_in = tool.stand_in(kwargs, call.id, state.run_id)
            if stand_in is not None:
                return self._stood_in(tool, call, attempt, state, t0, kwargs, stand_in)
        if tool.is_async or self.timeout is not None:
            return self._awaited(tool, call, attempt, state, t0, kwargs, None, wait=self.timeout)
        try:
            value = tool.fn(**kwargs)
        except BaseException as exc:  # a ToolError, or the analogue of a panic
            content, producer = failure(tool.name, exc, None, run_cancellable=False)
        else:
            if type(value) is str:  # the common case, without a call
                content, producer = value, None
            elif inspect.isawaitable(value):
                return self._awaited(tool, call, attempt, state, t0, {}, value, wait=self.timeout)
            else:
                content, producer = content_of(tool.name, value)
        return self._result(tool, call, attempt, state, t0, content, producer, True)

    def _stood_in(
        self,
        tool: Tool,
        call: ToolCall,
        attempt: int,
        state: RunState,
        t0: float,
        kwargs: dict[str, Any],
        stand_in: StandIn,
    ) -> ToolResult | Attempted:
        """An attempt a fault took the place of (``loopnb.inject``): what it does, marked as injected.

        With no delay the fault's function is called right here; a delay is waited on the run's
        clock, where a timeout shorter than it fires first (a slow call's remaining time under the
        timeout is the tool's own).
        """
        if stand_in.delay > 0 or (stand_in.fn is None and (tool.is_async or self.timeout is not None)):
            return self._delayed(tool, call, attempt, state, t0, kwargs, stand_in)
        content, producer = called(tool.name, stand_in.fn or tool.fn, kwargs)
        return self._result(tool, call, attempt, state, t0, content, producer, True, stand_in.label)

    async def _delayed(
        self,
        tool: Tool,
        call: ToolCall,
        attempt: int,
        state: RunState,
        t0: float,
        kwargs: dict[str, Any],
        stand_in: StandIn,
    ) -> ToolResult:
        timeout, label = self.timeout, stand_in.label
        if timeout is not None and stand_in.delay >= timeout:
            await self.clock.sleep(timeout)
            return self._result(
                tool, call, attempt, state, t0, timeout_text(tool.name, timeout), "timeout", True, label
            )
        await self.clock.sleep(stand_in.delay)
        if stand_in.fn is None and (tool.is_async or timeout is not None):
            left = None if timeout is None else timeout - stand_in.delay
            return await self._awaited(
                tool, call, attempt, state, t0, kwargs, None, wait=left, injected=label
            )
        content, producer = called(tool.name, stand_in.fn or tool.fn, kwargs)
        return self._result(tool, call, attempt, state, t0, content, producer, True, label)

    def _result(
        self,
        tool: Tool,
        call: ToolCall,
        attempt: int,
        state: RunState,
        t0: float,
        content: str,
        producer: SoftProducer | None,
        executed: bool,
        injected: str | None = None,
    ) -> ToolResult:
        """The attempt's result as the model reads it, reported when the run is observed."""
        result = ToolResult(
            content,
            is_error=producer is not None,
            name=tool.name,
            call_id=call.id,
            producer=producer,
            attempts=attempt + 1,
            injected=injected,
        )
        if state.observing:
            report_dispatch(state, self.clock, result, attempt=attempt, executed=executed, t0=t0)
        return result

    async def _awaited(
        self,
        tool: Tool,
        call: ToolCall,
        attempt: int,
        state: RunState,
        t0: float,
        kwargs: dict[str, Any],
        pending: Any,
        *,
        wait: float | None,
        injected: str | None = None,
    ) -> ToolResult:
        """The rest of an attempt that has to wait: an async tool, or a sync one under the timeout
        (on a thread of its own).

        An awaitable the tool returns (a sync function wrapping a coroutine) is awaited, within the
        same deadline; ``pending`` is one a sync tool already returned. ``wait`` is how long the
        call may take (the timeout, less what a slow fault took before it); ``injected`` the label
        of that fault.
        """
        timeout = wait
        try:
            if pending is not None:
                value = pending
            elif not tool.is_async:
                assert timeout is not None
                deadline = asyncio.get_running_loop().time() + timeout
                ok, value = await in_thread(tool.fn, kwargs, timeout)
                if not ok:
                    raise value  # what the tool raised on its thread, classified below like any other
                if type(value) is not str and inspect.isawaitable(value):
                    left = deadline - asyncio.get_running_loop().time()
                    value = await with_timeout(value, max(left, 0.0))
            elif timeout is None:
                value = await tool.fn(**kwargs)
            else:
                value = await with_timeout(tool.fn(**kwargs), timeout)
            if type(value) is not str and inspect.isawaitable(value):
                value = await (value if timeout is None else with_timeout(value, timeout))
        except BaseException as exc:  # a ToolError, the deadline, the run's cancellation, or a panic
            content, producer = failure(tool.name, exc, self.timeout, run_cancellable=True)
        else:
            content, producer = content_of(tool.name, value)
        return self._result(tool, call, attempt, state, t0, content, producer, True, injected)


Attempted = Coroutine[Any, Any, ToolResult]
"""An attempt that has begun and has to wait for its result."""


def report_dispatch(
    state: RunState, clock: Clock, result: ToolResult, *, attempt: int, executed: bool, t0: float | None
) -> None:
    """Emit the ``ToolDispatched`` of one attempt (or of a refusal: no ``t0``, nothing ran)."""
    latency = 0.0 if t0 is None else round((clock.monotonic() - t0) * 1000.0, 3)  # to the microsecond
    state.emit(
        ToolDispatched(
            seq=state.next_seq(),
            run_id=state.run_id,
            at=clock.time(),
            turn=state.turn,
            result=result,
            attempt=attempt,
            executed=executed,
            latency_ms=latency,
        )
    )


def _settle(breaker: CircuitBreaker, first: ToolResult, result: ToolResult, state: RunState) -> None:
    """Count the call's outcome on its tool's breaker (invalid arguments do not count)."""
    before = breaker.state
    if not result.is_error:
        breaker.record_success()
    elif (result.producer if result.producer != "recovery_gave_up" else first.producer) in (BREAKER_FAILURES):
        breaker.record_failure()
    state.note_breaker(breaker, before, "tool")


def _arguments(tool: Tool, call: ToolCall) -> dict[str, Any] | str:
    """Validated keyword arguments, or the text that tells the model why they do not fit."""
    args = call.arguments
    if type(args) is not dict:
        args = parse_arguments(tool.name, args)
        if isinstance(args, str):
            return args
    try:
        return tool.validate(args)
    except ValidationError as exc:
        return invalid_arguments_text(tool, exc)
    except KeyboardInterrupt:  # Ctrl-C landing in the check: the run ends as Cancelled
        raise
    except BaseException as exc:  # an argument's own __hash__ or __eq__ raised inside the check
        return unchecked_arguments_text(tool, exc)
