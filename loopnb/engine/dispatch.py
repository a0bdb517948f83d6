"""The dispatcher: every tool call the model makes gets exactly one result, soft or ok.

The stages, in order (the first that answers wins):

1. loop detector: refuse a call that keeps failing the same way (soft), or stop the run (hard);
2. pre-answer: a name never advertised is answered ``tool 'x' is not available``; nothing runs;
3. hooks: a veto is answered ``blocked by policy: <reason>``;
4. registry: a name advertised but missing is answered ``Tool not found: ...``;
5. breaker: an open tool breaker is answered ``tool temporarily unavailable: circuit breaker open``;
6. arguments: validated against the tool's schema, each wrong field named;
7. the call itself, under the timeout middleware, with any exception caught ("panic");
8. recovery: a strategy may retry a failed call within the ceiling of 5.

Nothing a tool does escapes this module as an exception, except ``KeyboardInterrupt`` and the
cancellation of the run's own task, which the loop turns into ``Cancelled``. A ``CancelledError``
the tool raises by itself (nothing is cancelling the run) is a panic like any other. The call
itself, the timeout middleware and the panic catch (stage 7) live in ``invocation``.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from loopnb.engine.breakers import CircuitBreaker
from loopnb.engine.cancel import CancelToken, task_cancelling
from loopnb.engine.clock import Clock
from loopnb.engine.errors import SoftProducer, ToolError, exception_text
from loopnb.engine.events import RecoveryDecided, ToolDispatched
from loopnb.engine.invocation import (
    _call_inline,
    _content,
    _error_text,
    _in_thread,
    _Pending,
    _TimedOut,
    _with_timeout,
    panic_text,
)
from loopnb.engine.invocation import _captured as _captured
from loopnb.engine.messages import ToolCall, ToolResult
from loopnb.engine.recovery import (
    RECOVERABLE,
    Decision,
    Failure,
    RecoveryStrategy,
    Retry,
    decision_name,
    drive,
)
from loopnb.engine.safety import LoopWatch
from loopnb.engine.state import RunState
from loopnb.engine.tools import (
    Tool,
    ToolRegistry,
    invalid_arguments_text,
    parse_arguments,
    registry_miss_text,
)

__all__ = ["BREAKER_FAILURES", "Dispatcher", "Hook", "HookContext", "panic_text"]

BREAKER_FAILURES: frozenset[str] = frozenset({"tool_error", "tool_panic", "timeout"})
"""Outcomes that count against a tool's health. Invalid arguments are the model's, not the tool's."""


@dataclass(frozen=True, slots=True)
class HookContext:
    """What a hook sees besides the call: the run, the turn, and the token to cancel it."""

    run_id: str
    turn: int
    cancel: CancelToken


Hook = Callable[[ToolCall, HookContext], "str | bool | None"]
"""``hook(call, ctx)`` returns ``None`` to allow the call or a reason string to veto it."""


class Dispatcher:
    """Dispatches tool calls for an engine; per-run state arrives with each call."""

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        advertised: Iterable[str],
        hooks: Iterable[Hook] = (),
        breakers: dict[str, CircuitBreaker] | None = None,
        timeout: float | None = None,
        suggestions: bool = True,
        recovery: RecoveryStrategy | None = None,
        clock: Clock,
    ) -> None:
        self.registry = registry
        self.advertised = frozenset(advertised)
        self.hooks = tuple(hooks)
        self.breakers = breakers or {}
        self.timeout = timeout
        self.suggestions = suggestions
        self.recovery = recovery
        self.clock = clock

    def dispatch(
        self, call: ToolCall, state: RunState, watch: LoopWatch | None
    ) -> ToolResult | Coroutine[Any, Any, ToolResult]:
        """The one result the model reads for ``call``.

        A sync tool with no timeout and no recovery strategy is answered right here, and so is
        every refusal: the result comes back as is. Anything that has to wait (an async tool,
        the timeout middleware, recovery) comes back as a coroutine for the caller to await.
        """
        if watch is not None and watch.streaks:
            signal = watch.check(call)
            if signal is not None:
                if signal.action == "stop":
                    state.stop("loop", signal.text, signal.count)
                state.signal("loop", "refuse", signal.text, signal.count)
                text = f"dispatch refused before execution: {signal.text}"
                return self._refused(call, state, text, "loop_refusal")
        name = call.name
        tool = self.registry.lookup(name)
        breaker: CircuitBreaker | None = None
        if tool is None or name not in self.advertised or self.hooks or self.breakers:
            admitted = self._admit(call, state)
            if isinstance(admitted, ToolResult):
                if watch is not None:
                    watch.record(call, admitted)
                return admitted
            tool, breaker = admitted
        if tool.is_async or self.timeout is not None or self.recovery is not None:
            return self._dispatch_async(tool, breaker, call, state, watch)
        try:
            result = self._attempt(tool, call, 0, state)
        except _Pending as pending:  # a sync tool returned an awaitable: it has to wait after all
            return self._dispatch_async(tool, breaker, call, state, watch, pending.awaitable)
        if breaker is not None:
            self._settle(breaker, result, result, state)
        if watch is not None and (result.is_error or watch.streaks):
            watch.record(call, result)
        return result

    def _admit(self, call: ToolCall, state: RunState) -> ToolResult | tuple[Tool, CircuitBreaker | None]:
        """Stages 2-5: a refusal, or the tool to run and its breaker."""
        name = call.name
        if name not in self.advertised:
            return self._refused(call, state, f"tool '{name}' is not available", "not_advertised")
        if self.hooks:
            reason = self._veto(call, state)
            if reason is not None:
                return self._refused(call, state, f"blocked by policy: {reason}", "hook_veto")
            state.checkpoint()
        tool = self.registry.get(name)
        if tool is None:
            text = registry_miss_text(name, self.registry.names, suggestions=self.suggestions)
            return self._refused(call, state, text, "registry_miss")
        breaker = self.breakers.get(name)
        if breaker is not None:
            before = breaker.state
            allowed = breaker.allow()
            state.note_breaker(breaker, before, "tool")
            if not allowed:
                text = "tool temporarily unavailable: circuit breaker open"
                return self._refused(call, state, text, "breaker_open")
        return tool, breaker

    async def _dispatch_async(
        self,
        tool: Tool,
        breaker: CircuitBreaker | None,
        call: ToolCall,
        state: RunState,
        watch: LoopWatch | None,
        pending: Any = None,
    ) -> ToolResult:
        """Stages 7-8 for a call that has to wait: an async tool, a timeout, or recovery.

        ``pending`` is the awaitable a sync tool already returned for attempt 0, if it did.
        """
        first = await self._attempt_async(tool, call, 0, state, pending)
        result = first
        if first.is_error and self.recovery is not None and first.producer in RECOVERABLE:
            result = await self._recover(tool, call, first, state)
        if breaker is not None:
            self._settle(breaker, first, result, state)
        if watch is not None and (result.is_error or watch.streaks):
            watch.record(call, result)
        return result

    def _settle(
        self, breaker: CircuitBreaker, first: ToolResult, result: ToolResult, state: RunState
    ) -> None:
        """Count the call's outcome on its tool's breaker (invalid arguments do not count)."""
        before = breaker.state
        if not result.is_error:
            breaker.record_success()
        elif (result.producer if result.producer != "recovery_gave_up" else first.producer) in (
            BREAKER_FAILURES
        ):
            breaker.record_failure()
        state.note_breaker(breaker, before, "tool")

    def _veto(self, call: ToolCall, state: RunState) -> str | None:
        ctx = HookContext(state.run_id, state.turn, state.cancel)
        for hook in self.hooks:
            try:
                reason = hook(call, ctx)
            except Exception as exc:  # a broken hook fails closed, and says so
                name = getattr(hook, "__name__", hook)
                return f"hook {name!r} raised {type(exc).__name__}: {exception_text(exc)}"
            if reason is not None and reason is not True:
                return str(reason) if reason is not False else "vetoed by a hook"
        return None

    def _refused(self, call: ToolCall, state: RunState, text: str, producer: SoftProducer) -> ToolResult:
        result = ToolResult(
            text, is_error=True, name=call.name, call_id=call.id, producer=producer, attempts=0
        )
        if state.observing:
            state.emit(
                ToolDispatched(
                    seq=state.next_seq(),
                    run_id=state.run_id,
                    at=self.clock.time(),
                    turn=state.turn,
                    result=result,
                    executed=False,
                )
            )
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
                        max_attempts=5,
                        decision=decision_name(decision),  # type: ignore[arg-type]
                        corrected_input=decision.corrected_input if retry else None,  # type: ignore[union-attr]
                        delay=decision.delay if retry else 0.0,  # type: ignore[union-attr]
                        note=decision.note,
                        valid=valid,
                    )
                )

        async def execute(retry_call: ToolCall, attempt: int) -> ToolResult:
            return await self._attempt_async(tool, retry_call, attempt, state)

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

    def _attempt(self, tool: Tool, call: ToolCall, attempt: int, state: RunState) -> ToolResult:
        """Validate and run one attempt of a sync tool, here and now (no timeout)."""
        observing = state.observing
        t0 = self.clock.monotonic() if observing else 0.0
        kwargs = _arguments(tool, call)
        producer: SoftProducer | None
        if isinstance(kwargs, str):
            content, producer, executed = kwargs, "invalid_arguments", False
        else:
            content, producer = _call_inline(tool, kwargs)
            executed = True
        result = ToolResult(
            content,
            is_error=producer is not None,
            name=tool.name,
            call_id=call.id,
            producer=producer,
            attempts=attempt + 1,
        )
        if observing:
            self._report(call, attempt, result, executed, t0, state)
        return result

    async def _attempt_async(
        self, tool: Tool, call: ToolCall, attempt: int, state: RunState, pending: Any = None
    ) -> ToolResult:
        """One attempt that may have to wait: an async tool, a sync one under the timeout, or a
        sync one that returned an awaitable (``pending``: the attempt's call already happened)."""
        if pending is None and not tool.is_async and self.timeout is None:
            try:
                return self._attempt(tool, call, attempt, state)
            except _Pending as caught:
                pending = caught.awaitable
        t0 = self.clock.monotonic() if state.observing else 0.0
        kwargs = _arguments(tool, call) if pending is None else {}
        producer: SoftProducer | None
        if isinstance(kwargs, str):
            content, producer, executed = kwargs, "invalid_arguments", False
        else:
            content, producer = await self._run(tool, kwargs, pending)
            executed = True
        result = ToolResult(
            content,
            is_error=producer is not None,
            name=tool.name,
            call_id=call.id,
            producer=producer,
            attempts=attempt + 1,
        )
        if state.observing:
            self._report(call, attempt, result, executed, t0, state)
        return result

    def _report(
        self, call: ToolCall, attempt: int, result: ToolResult, executed: bool, t0: float, state: RunState
    ) -> None:
        latency_ms = round((self.clock.monotonic() - t0) * 1000.0, 3)  # to the microsecond
        state.emit(
            ToolDispatched(
                seq=state.next_seq(),
                run_id=state.run_id,
                at=self.clock.time(),
                turn=state.turn,
                result=result,
                attempt=attempt,
                executed=executed,
                latency_ms=latency_ms,
            )
        )

    async def _run(
        self, tool: Tool, kwargs: dict[str, Any], pending: Any = None
    ) -> tuple[str, SoftProducer | None]:
        """Call an async tool, or a sync one under the timeout; producer None on success.

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
                ok, value = await _in_thread(tool.fn, kwargs, timeout)
                if not ok:  # raised here, a StopIteration would turn into "coroutine raised ..."
                    if isinstance(value, StopIteration):
                        return panic_text(tool.name, value), "tool_panic"
                    raise value
                if type(value) is not str and inspect.isawaitable(value):
                    left = deadline - asyncio.get_running_loop().time()
                    value = await _with_timeout(value, max(left, 0.0))
            elif timeout is None:
                value = await tool.fn(**kwargs)
            else:
                value = await _with_timeout(tool.fn(**kwargs), timeout)
            if type(value) is not str and inspect.isawaitable(value):
                value = await (value if timeout is None else _with_timeout(value, timeout))
        except ToolError as exc:
            return _error_text(tool.name, exc)
        except _TimedOut:
            return f"Tool '{tool.name}' timed out after {timeout:g}s", "timeout"
        except KeyboardInterrupt:
            raise
        except asyncio.CancelledError as exc:
            if task_cancelling():  # the run is being cancelled: not the tool's failure
                raise
            return panic_text(tool.name, exc), "tool_panic"
        except BaseException as exc:  # the Python analogue of a panic: caught, reported softly
            return panic_text(tool.name, exc), "tool_panic"
        return _content(tool.name, value)


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
