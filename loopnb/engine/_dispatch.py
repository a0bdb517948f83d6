"""The dispatcher: every tool call the model makes gets exactly one result, soft or ok.

The stages, in order (the first that answers wins):

1. safety systems, asked by the loop (``_loop.RunLoop._turn``) before it dispatches: the loop
   detector refuses a call that keeps failing the same way (soft), or stops the run (hard);
2. pre-answer: a name never advertised is answered ``tool 'x' is not available``; nothing runs;
3. hooks: a veto is answered ``blocked by policy: <reason>``;
4. registry: a name advertised but missing is answered ``Tool not found: ...``;
5. breaker: an open tool breaker is answered ``tool temporarily unavailable: circuit breaker open``;
6. arguments: validated against the tool's schema, each wrong field named;
7. the call itself, under the timeout middleware, with any exception caught ("panic");
8. recovery: a strategy may retry a failed call within the ceiling (``MAX_RECOVERY_ATTEMPTS``).

This module holds the entry (``Dispatcher.dispatch``) and stages 2-5, which answer before
anything runs; ``invocation`` holds the rest whole: each attempt's argument check (stage 6, made
again when a retry corrects the arguments), the call (7) and recovery's retries (8). Every text
the model reads is worded in ``_texts``.

Nothing a tool does escapes the dispatcher as an exception, except ``KeyboardInterrupt`` and the
cancellation of the run's own task, which the loop turns into ``Cancelled``. A ``CancelledError``
the tool raises by itself (nothing is cancelling the run) is a panic like any other.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass
from typing import Any

from loopnb.engine._breakers import CircuitBreaker
from loopnb.engine._cancel import CancelToken
from loopnb.engine._clock import Clock
from loopnb.engine._errors import SoftProducer, text_of
from loopnb.engine._invocation import Invocation, report_dispatch
from loopnb.engine._messages import ToolCall, ToolResult
from loopnb.engine._recovery import RecoveryStrategy
from loopnb.engine._state import RunState
from loopnb.engine._texts import (
    BREAKER_OPEN_TEXT,
    HOOK_SAID_NO,
    hook_raised_text,
    not_available_text,
    registry_miss_text,
    veto_text,
)
from loopnb.engine._tools import Tool, ToolRegistry


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
        self._call = Invocation(timeout=timeout, recovery=recovery, clock=clock).call  # stage 7

    def dispatch(self, call: ToolCall, state: RunState) -> ToolResult | Coroutine[Any, Any, ToolResult]:
        """The one result the model reads for ``call``: stages 2-5 here, then the call (``invocation``).

        Every refusal, and a sync tool with no timeout and no recovery strategy, is answered at
        once: the result comes back as is. Anything that has to wait (an async tool, the timeout
        middleware, recovery) comes back as a coroutine for the caller to await.
        """
        name = call.name
        tool = self.registry.lookup(name)
        breaker: CircuitBreaker | None = None
        if tool is None or name not in self.advertised or self.hooks or self.breakers:
            admitted = self._admit(call, state)
            if isinstance(admitted, ToolResult):
                return admitted
            tool, breaker = admitted
        return self._call(tool, breaker, call, state)

    def _admit(self, call: ToolCall, state: RunState) -> ToolResult | tuple[Tool, CircuitBreaker | None]:
        """Stages 2-5: a refusal, or the tool to run and its breaker."""
        name = call.name
        if name not in self.advertised:
            return self.refused(call, state, not_available_text(name), "not_advertised")
        if self.hooks:
            reason = self._veto(call, state)
            if reason is not None:
                return self.refused(call, state, veto_text(reason), "hook_veto")
            state.checkpoint()
        tool = self.registry.get(name)
        if tool is None:
            text = registry_miss_text(name, self.registry.names, suggestions=self.suggestions)
            return self.refused(call, state, text, "registry_miss")
        breaker = self.breakers.get(name)
        if breaker is not None:
            before = breaker.state
            allowed = breaker.allow()
            state.note_breaker(breaker, before, "tool")
            if not allowed:
                return self.refused(call, state, BREAKER_OPEN_TEXT, "breaker_open")
        return tool, breaker

    def _veto(self, call: ToolCall, state: RunState) -> str | None:
        ctx = HookContext(state.run_id, state.turn, state.cancel)
        for hook in self.hooks:
            try:
                reason = hook(call, ctx)
            except KeyboardInterrupt:  # Ctrl-C landing in the hook: the run ends as Cancelled
                raise
            except BaseException as exc:  # a broken hook fails closed, and says so (SystemExit too)
                return hook_raised_text(hook, exc)
            if reason is not None and reason is not True:
                return text_of(reason) if reason is not False else HOOK_SAID_NO
        return None

    def refused(self, call: ToolCall, state: RunState, text: str, producer: SoftProducer) -> ToolResult:
        """A call answered before anything ran (``executed=False``), with ``text`` as ``producer``."""
        result = ToolResult(
            text, is_error=True, name=call.name, call_id=call.id, producer=producer, attempts=0
        )
        if state.observing:
            report_dispatch(state, self.clock, result, attempt=0, executed=False, t0=None)
        return result
