"""Stage 7 of the dispatcher, whole: calling an admitted tool, and recovery's retries of the call.

Each attempt validates the call's arguments against the tool's schema (at every attempt: a retry
may correct them), then calls the tool: a sync tool with no timeout inline, right here (no thread
hop, no await), anything else awaited under the timeout middleware. Whatever the tool does
(returns, raises, hangs, hands back an awaitable) becomes the text the model reads and the
producer of a soft error, or ``None`` on success; an exception is caught as a panic. Both ways
share one attempt body (``_attempt``) and one exception ladder (``_failure``). A failed call goes
to the recovery driver (stage 8), and its outcome is counted on its tool's breaker.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import threading
from collections.abc import Callable, Coroutine
from typing import Any

from pydantic import ValidationError

from loopnb.engine._breakers import CircuitBreaker
from loopnb.engine._cancel import task_cancelling
from loopnb.engine._clock import Clock
from loopnb.engine._errors import SoftProducer, ToolError
from loopnb.engine._events import RecoveryDecided, ToolDispatched
from loopnb.engine._messages import ToolCall, ToolResult
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
from loopnb.engine._texts import invalid_arguments_text, panic_text, timeout_text, unchecked_arguments_text
from loopnb.engine._tools import FaultMark, Tool, parse_arguments

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
        mark = FaultMark() if tool.marks_faults else None  # a tool loopnb.inject wrapped
        fn = tool.fn if mark is None else tool.marked(mark)
        if tool.is_async or self.timeout is not None:
            return self._awaited(tool, fn, call, attempt, state, t0, kwargs, None, mark)
        try:
            value = fn(**kwargs)
        except BaseException as exc:  # a ToolError, or the analogue of a panic
            content, producer = _failure(tool.name, exc, None, run_cancellable=False)
        else:
            if type(value) is str:  # the common case, without a call
                content, producer = value, None
            elif inspect.isawaitable(value):
                return self._awaited(tool, fn, call, attempt, state, t0, {}, value, mark)
            else:
                content, producer = _content(tool.name, value)
        if mark is not None and mark.wait:  # an injected hang or slow call: it waits on the run's clock
            return self._late(tool, call, attempt, state, t0, content, producer, mark)
        return self._result(tool, call, attempt, state, t0, content, producer, True, mark)

    async def _late(
        self, tool: Tool, call: ToolCall, attempt: int, state: RunState, t0: float, *outcome: Any
    ) -> ToolResult:
        content, producer, mark = outcome
        content, producer = await self._waited(tool.name, mark.wait, content, producer)
        return self._result(tool, call, attempt, state, t0, content, producer, True, mark)

    async def _waited(self, name: str, wait: float, content: str, producer: SoftProducer | None) -> Outcome:
        """What an attempt that takes ``wait`` seconds more says: waited on the run's clock, or the
        timeout's answer when the timeout is shorter (``content`` and ``producer`` are what the
        call said)."""
        timeout = self.timeout
        if timeout is not None and wait >= timeout:
            await self.clock.sleep(timeout)
            return timeout_text(name, timeout), "timeout"
        await self.clock.sleep(wait)
        return content, producer

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
        mark: FaultMark | None = None,
    ) -> ToolResult:
        """The attempt's result as the model reads it, reported when the run is observed (with the
        label of the fault a wrapped tool injected, where it did)."""
        result = ToolResult(
            content,
            is_error=producer is not None,
            name=tool.name,
            call_id=call.id,
            producer=producer,
            attempts=attempt + 1,
        )
        if state.observing:
            injected = None if mark is None else mark.label
            report_dispatch(
                state, self.clock, result, attempt=attempt, executed=executed, t0=t0, injected=injected
            )
        return result

    async def _awaited(
        self,
        tool: Tool,
        fn: Callable[..., Any],
        call: ToolCall,
        attempt: int,
        state: RunState,
        t0: float,
        kwargs: dict[str, Any],
        pending: Any,
        mark: FaultMark | None,
    ) -> ToolResult:
        """The rest of an attempt that has to wait: an async tool, or a sync one under the timeout
        (on a thread of its own).

        An awaitable the tool returns (a sync function wrapping a coroutine) is awaited, within the
        same deadline; ``pending`` is one a sync tool already returned.
        """
        timeout = self.timeout
        try:
            if pending is not None:
                value = pending
            elif not tool.is_async:
                assert timeout is not None
                deadline = asyncio.get_running_loop().time() + timeout
                ok, value = await _in_thread(fn, kwargs, timeout)
                if not ok:
                    raise value  # what the tool raised on its thread, classified below like any other
                if type(value) is not str and inspect.isawaitable(value):
                    left = deadline - asyncio.get_running_loop().time()
                    value = await _with_timeout(value, max(left, 0.0))
            elif timeout is None:
                value = await fn(**kwargs)
            else:
                value = await _with_timeout(fn(**kwargs), timeout)
            if type(value) is not str and inspect.isawaitable(value):
                value = await (value if timeout is None else _with_timeout(value, timeout))
        except BaseException as exc:  # a ToolError, the deadline, the run's cancellation, or a panic
            content, producer = _failure(tool.name, exc, timeout, run_cancellable=True)
        else:
            content, producer = _content(tool.name, value)
        if mark is not None and mark.wait and producer != "timeout":  # an injected hang or slow call
            content, producer = await self._waited(tool.name, mark.wait, content, producer)
        return self._result(tool, call, attempt, state, t0, content, producer, True, mark)


Outcome = tuple[str, SoftProducer | None]
"""What the model reads of an attempt, and the producer of its soft error (``None``: success)."""
Attempted = Coroutine[Any, Any, ToolResult]
"""An attempt that has begun and has to wait for its result."""


def _failure(name: str, exc: BaseException, timeout: float | None, *, run_cancellable: bool) -> Outcome:
    """What the model reads when a tool's call raised ``exc``: the one exception ladder.

    A ``ToolError`` is the tool's own text; our deadline (``_TimedOut``) the timeout's; anything
    else the analogue of a panic. Re-raised, as not the tool's failure: ``KeyboardInterrupt``
    (Ctrl-C, the run ends as ``Cancelled``) and, where the attempt awaited (``run_cancellable``),
    a ``CancelledError`` while the run's own task is being cancelled. Inline, a ``CancelledError``
    is always the tool's own: no task is cancelled inside a sync call.
    """
    if isinstance(exc, ToolError):
        return _error_text(name, exc)
    if isinstance(exc, _TimedOut):
        assert timeout is not None
        return timeout_text(name, timeout), "timeout"
    if isinstance(exc, KeyboardInterrupt) or (
        run_cancellable and isinstance(exc, asyncio.CancelledError) and task_cancelling()
    ):
        raise exc
    return panic_text(name, exc), "tool_panic"


def report_dispatch(
    state: RunState,
    clock: Clock,
    result: ToolResult,
    *,
    attempt: int,
    executed: bool,
    t0: float | None,
    injected: str | None = None,
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
            injected=injected,
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


def _error_text(name: str, exc: ToolError) -> Outcome:
    """A ``ToolError``'s own text; one whose ``__str__`` fails is reported as the panic it is."""
    try:
        text = str(exc)
    except KeyboardInterrupt:
        raise
    except BaseException:
        return panic_text(name, exc), "tool_panic"
    return str.__str__(text), "tool_error"


class _TimedOut(Exception):
    """Our own deadline fired (distinct from a TimeoutError a tool raises itself)."""


async def _captured(awaitable: Any) -> tuple[bool, Any]:
    """Await in a task of its own without letting ``SystemExit`` or ``KeyboardInterrupt`` escape it.

    asyncio re-raises those two out of the event loop when a task ends with them, past every
    ``except`` of the run; caught here, they are handed back to the run's own task instead.
    """
    try:
        return True, await awaitable
    except asyncio.CancelledError:
        raise
    except BaseException as exc:
        return False, exc


async def _with_timeout(awaitable: Any, seconds: float) -> Any:
    task = asyncio.ensure_future(_captured(awaitable))
    try:
        done, _ = await asyncio.wait({task}, timeout=seconds)
    finally:
        if not task.done():  # the deadline, or the run itself is being cancelled
            task.cancel()
    if not done:
        raise _TimedOut
    ok, value = task.result()
    if not ok:
        raise value
    return value


async def _in_thread(fn: Callable[..., Any], kwargs: dict[str, Any], seconds: float) -> tuple[bool, Any]:
    """Run a sync tool on a daemon thread so that a hung tool holds neither the run nor exit.

    Returns ``(True, value)`` or ``(False, the exception the tool raised)``.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[tuple[bool, Any]] = loop.create_future()

    def settle(outcome: tuple[bool, Any]) -> None:
        if not future.done():
            future.set_result(outcome)

    def work() -> None:
        try:
            outcome: tuple[bool, Any] = (True, fn(**kwargs))
        except BaseException as exc:
            outcome = (False, exc)
        with contextlib.suppress(RuntimeError):  # the loop closed: the run moved on long ago
            loop.call_soon_threadsafe(settle, outcome)

    threading.Thread(target=work, name=f"loopnb-tool-{fn.__name__}", daemon=True).start()
    done, _ = await asyncio.wait({future}, timeout=seconds)
    if not done:
        future.cancel()
        raise _TimedOut
    return future.result()


def _content(name: str, value: Any) -> Outcome:
    """What the model reads for a tool's return value. A value that cannot be shown is a panic."""
    kind = type(value)
    if kind is str:
        return value, None
    if kind is bool:
        return ("true" if value else "false"), None
    if isinstance(value, str):  # a subclass: its text, without running its own __str__
        return str.__str__(value), None
    if isinstance(value, ToolResult):
        content: object = value.content  # typed, but a tool's dataclass checks nothing at run time
        failed = value.is_error is True
        if not isinstance(content, str):  # shown like any other value
            text, producer = _content(name, content)
            return text, producer or ("tool_error" if failed else None)
        return str.__str__(content), ("tool_error" if failed else None)
    try:
        if kind is int:
            return str(value), None  # may fail: past 4300 digits, int -> str refuses
        if value is None:
            return "", None
        if isinstance(value, bytes):
            return value.decode("utf-8", errors="replace"), None
        try:
            return json.dumps(value, ensure_ascii=False, default=str), None
        except (TypeError, ValueError, RecursionError):
            return str(value), None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # a __str__ or __repr__ that raises: the value cannot be shown
        return panic_text(name, exc), "tool_panic"
