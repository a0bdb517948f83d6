"""``Engine``: the agent loop. One async core; ``run``, ``arun`` and ``iter`` all drive it.

A turn is one model request and the dispatch of all its tool calls. The run ends with the
model's final reply (``RunResult``) or with a ``LoopError``. One run is a ``RunLoop`` (``_loop``:
the turn loop and ``finalize``, with its context fitting in ``_compaction``); the synchronous
entry points drive it through ``_drivers``.
"""

from __future__ import annotations

import base64
import os
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from loopnb.engine._breakers import CircuitBreaker
from loopnb.engine._cancel import CancelToken
from loopnb.engine._clock import Clock, SystemClock
from loopnb.engine._context import ContextBudget
from loopnb.engine._dispatch import Dispatcher, Hook
from loopnb.engine._drivers import RunSteps, run_sync
from loopnb.engine._errors import shown
from loopnb.engine._events import BreakerState, TurnFinished
from loopnb.engine._loop import RunLoop
from loopnb.engine._messages import ToolSpec
from loopnb.engine._recovery import RecoveryStrategy
from loopnb.engine._result import RunResult
from loopnb.engine._safety import ConvergenceDetector, LoopDetector, MaxTurns
from loopnb.engine._state import Observer, RunState
from loopnb.engine._tools import Tool, ToolRegistry
from loopnb.engine._watch import SafetySystem
from loopnb.engine.models import FallbackChain, Model


def new_run_id() -> str:
    """A fresh run id: 48 random bits as 8 URL-safe characters (letters, digits, ``-``, ``_``)."""
    return base64.urlsafe_b64encode(os.urandom(6)).decode()


DoneCheck = Callable[[str], "bool | str | None"]
"""``done(reply_text)``: ``None``/``True`` accepts, ``False`` or a reason string rejects."""

_DEFAULT: Any = object()


class Engine:
    """The agent loop with the soft/hard error principle built in.

    See DESIGN.md for every option. Safety defaults: the loop detector is on, the recovery
    ceiling is 5, model breakers are on inside the (implicit) fallback chain; tool breakers,
    timeouts, convergence, a context budget and ``max_turns`` are opt-in. ``safety`` adds safety
    systems of your own (``SafetySystem``), asked after loopnb's (``safety_systems()``).
    """

    def __init__(
        self,
        model: Model,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        *,
        system: str | None = None,
        hooks: Iterable[Hook] = (),
        recovery: RecoveryStrategy | None = None,
        loop_detector: LoopDetector | None = _DEFAULT,
        convergence: ConvergenceDetector | None = None,
        done: DoneCheck | None = None,
        breakers: CircuitBreaker | dict[str, CircuitBreaker] | None = None,
        timeout: float | None = None,
        context: ContextBudget | None = None,
        suggestions: bool = True,
        observers: Iterable[Observer] = (),
        clock: Clock | None = None,
        max_turns: int | None = None,
        advertise: Iterable[str | ToolSpec | Tool] | None = None,
        safety: Iterable[SafetySystem] = (),
    ) -> None:
        self.clock: Clock = clock or SystemClock()
        self.chain = model if isinstance(model, FallbackChain) else FallbackChain([model])
        self.chain.bind(self.clock)
        self.registry = ToolRegistry(tools)
        self.system = system
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
        ):
            raise ValueError(f"Engine: timeout must be seconds > 0 or None, got {timeout!r}")
        if max_turns is not None and (
            isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1
        ):
            raise ValueError(f"Engine: max_turns must be an int >= 1 or None, got {max_turns!r}")
        if recovery is not None and not callable(getattr(recovery, "decide", None)):
            raise TypeError(
                f"Engine: recovery must have decide(failure, attempt, max_attempts); got {recovery!r}"
            )
        if done is not None and not callable(done):
            raise TypeError(f"Engine: done must be a callable done(reply_text); got {done!r}")
        self.loop_detector = LoopDetector() if loop_detector is _DEFAULT else loop_detector
        self.convergence = convergence
        self.done = done
        self.context = context
        self.max_turns = max_turns
        self.safety = _own_systems(safety)
        """The safety systems of the user's own (``safety=``), in order."""
        self.specs = self._advertised(advertise)
        self.tool_breakers = self._tool_breakers(breakers)
        self.dispatcher = Dispatcher(
            self.registry,
            advertised=[s.name for s in self.specs],
            hooks=hooks,
            breakers=self.tool_breakers,
            timeout=None if timeout is None else float(timeout),
            suggestions=suggestions,
            recovery=recovery,
            clock=self.clock,
        )
        self._every_breaker = [*self.tool_breakers.items(), *self.chain.breakers.items()]
        self._observers: list[Observer] = []
        for observer in observers:
            self.subscribe(observer)

    def _advertised(self, advertise: Iterable[str | ToolSpec | Tool] | None) -> list[ToolSpec]:
        if advertise is None:
            return [t.spec for t in self.registry]
        specs: list[ToolSpec] = []
        for item in advertise:
            if isinstance(item, ToolSpec):
                specs.append(item)
            elif isinstance(item, Tool):
                specs.append(item.spec)
            elif isinstance(item, str):
                known = self.registry.get(item)
                specs.append(known.spec if known else ToolSpec(name=item))
            else:
                raise TypeError(f"Engine: advertise takes names or ToolSpecs, got {item!r:.60}")
        return specs

    def _tool_breakers(
        self, breakers: CircuitBreaker | dict[str, CircuitBreaker] | None
    ) -> dict[str, CircuitBreaker]:
        if breakers is None:
            return {}
        if isinstance(breakers, CircuitBreaker):
            return {t.name: breakers.spawn(t.name, self.clock) for t in self.registry}
        if isinstance(breakers, dict):
            out = {}
            for name, breaker in breakers.items():
                if name not in self.registry:
                    raise ValueError(
                        f"Engine: breakers names {name!r}, which is not a tool; tools are "
                        f"{self.registry.names}"
                    )
                out[name] = breaker.spawn(name, self.clock)
            return out
        raise TypeError(
            "Engine: breakers must be a CircuitBreaker (a template for every tool), a dict of "
            f"tool name -> CircuitBreaker, or None; got {breakers!r:.60}"
        )

    def safety_systems(self) -> list[SafetySystem]:
        """Every safety system that watches a run, in the order each hook asks them: the loop
        detector, ``max_turns``, convergence, then ``safety``."""
        systems: list[SafetySystem] = []
        if self.loop_detector is not None:
            systems.append(self.loop_detector)
        if self.max_turns is not None:
            systems.append(MaxTurns(self.max_turns))
        if self.convergence is not None:
            systems.append(self.convergence)
        return [*systems, *self.safety]

    @property
    def tools(self) -> list[Tool]:
        return list(self.registry)

    def breaker_states(self) -> dict[str, BreakerState]:
        """Every tool's and model's breaker state, by name."""
        return {name: breaker.state for name, breaker in self._every_breaker}

    def breakers_not_closed(self) -> dict[str, BreakerState]:
        """The state of every breaker that is not closed, by name (what a turn's end records)."""
        return {name: b.state for name, b in self._every_breaker if b.state != "closed"}

    def subscribe(self, observer: Observer) -> Callable[[], None]:
        """Deliver every event of every later run to ``observer``; returns an unsubscribe function."""
        if not callable(observer):
            raise TypeError(f"Engine.subscribe: an observer is a callable taking one event; got {observer!r}")
        self._observers.append(observer)

        def unsubscribe() -> None:
            if observer in self._observers:
                self._observers.remove(observer)

        return unsubscribe

    # -- entry points ---------------------------------------------------------------------

    async def arun(
        self, task: str, *, cancel: CancelToken | None = None, run_id: str | None = None
    ) -> RunResult:
        """Run until the final reply; a hard failure raises a ``LoopError`` carrying the salvaged run."""
        return await self._new_run(task, cancel, run_id, always_emit=False).complete()

    def run(self, task: str, *, cancel: CancelToken | None = None, run_id: str | None = None) -> RunResult:
        """``arun`` for synchronous code; works in a script and inside a running Jupyter loop.

        Ctrl-C (or a kernel interrupt) fires the cancel token: the run ends as ``Cancelled``.
        """
        cancel = cancel or CancelToken()
        return run_sync(self.arun(task, cancel=cancel, run_id=run_id), cancel)

    def iter(self, task: str, *, cancel: CancelToken | None = None, run_id: str | None = None) -> RunSteps:
        """Step through a run a turn at a time: ``for turn in engine.iter(task): ...``."""
        return RunSteps(self._new_run(task, cancel or CancelToken(), run_id, always_emit=True))

    def aiter(
        self, task: str, *, cancel: CancelToken | None = None, run_id: str | None = None
    ) -> AsyncIterator[TurnFinished | None]:
        """``async for turn in engine.aiter(task)``: each finished turn, as its event."""
        return self._new_run(task, cancel, run_id, always_emit=True).steps()

    def _new_run(
        self, task: str, cancel: CancelToken | None, run_id: str | None, *, always_emit: bool
    ) -> RunLoop:
        if not isinstance(task, str):
            raise TypeError(f"Engine.run: task must be a str, got {type(task).__name__}")
        state = RunState(
            run_id=run_id or new_run_id(),
            clock=self.clock,
            cancel=cancel or CancelToken(),
            observers=list(self._observers),
            on_detach=self._detach,
            always_emit=always_emit,
        )
        return RunLoop(self, state, task)

    def _detach(self, observer: Observer) -> None:
        if observer in self._observers:
            self._observers.remove(observer)

    def __repr__(self) -> str:
        return f"Engine(model={self.chain.name!r}, tools={self.registry.names})"


def _own_systems(safety: Iterable[SafetySystem]) -> tuple[SafetySystem, ...]:
    """The user's safety systems, each checked for a ``name`` and a ``new_run()``."""
    given: object = safety
    if isinstance(given, str) or not isinstance(given, Iterable):
        raise TypeError(f"Engine: safety must be a list of safety systems; got {shown(safety, 60)}")
    systems = tuple(safety)
    for system in systems:
        named = isinstance(getattr(system, "name", None), str)
        if not named or not callable(getattr(system, "new_run", None)):
            raise TypeError(
                "Engine: a safety system has a name (a str) and new_run() returning its watch for a "
                f"run; got {shown(system, 60)}"
            )
    return systems
