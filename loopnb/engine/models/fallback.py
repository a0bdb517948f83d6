"""``FallbackChain``: models tried in order, each behind its own circuit breaker."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import replace

from loopnb.engine.breakers import CircuitBreaker
from loopnb.engine.cancel import task_cancelling
from loopnb.engine.clock import Clock
from loopnb.engine.errors import (
    FallbackExhausted,
    ModelAuthError,
    ModelContextOverflow,
    ModelUnavailable,
    exception_text,
)
from loopnb.engine.events import ModelFailed, ModelReplied
from loopnb.engine.messages import ModelReply, ToolSpec, Transcript, reply_problem
from loopnb.engine.models.base import Model
from loopnb.engine.models.scripted import distinct_ids, with_call_ids
from loopnb.engine.state import RunState

__all__ = ["FallbackChain"]


class FallbackChain:
    """Ask each model in turn; a model whose breaker is open is skipped until its cooldown ends.

    A failure (``ModelUnavailable`` or any other exception from the model, even ``SystemExit`` or a
    ``CancelledError`` of its own) counts on that model's breaker. While the breaker stays closed
    the same model is asked again; once it opens, the next model is asked, within the same turn.
    When every breaker is open the run ends with ``FallbackExhausted``. A refused key (401) or a
    404 (no such model, or a wrong ``base_url``) opens the breaker at once: asking again cannot
    help. A single model given to ``Engine`` is a chain of one.
    """

    def __init__(self, models: Iterable[Model], *, breaker: CircuitBreaker | None = None) -> None:
        self.models: list[Model] = list(models)
        if not self.models:
            raise ValueError("FallbackChain needs at least one model; got an empty list")
        for i, model in enumerate(self.models):
            if not callable(getattr(model, "complete", None)) or not hasattr(model, "name"):
                raise TypeError(
                    f"FallbackChain: item {i} ({model!r:.60}) is not a model: expected an object "
                    "with .name and async complete(messages, tools)"
                )
        template = breaker or CircuitBreaker(failure_threshold=3, cooldown=30.0)
        self.names: list[str] = []
        for model in self.models:
            name, n = str(model.name), 2
            while name in self.names:
                name, n = f"{model.name}#{n}", n + 1
            self.names.append(name)
        self.breakers: dict[str, CircuitBreaker] = {name: template.spawn(name) for name in self.names}
        self.name = " > ".join(self.names)
        pairs = zip(self.models, self.names, strict=True)
        self._links = [(model, name, self.breakers[name]) for model, name in pairs]

    def bind(self, clock: Clock) -> None:
        """Put every breaker on the engine's clock (but those given a clock of their own)."""
        for breaker in self.breakers.values():
            if not breaker.own_clock:
                breaker.clock = clock

    async def complete(self, messages: Transcript, tools: Sequence[ToolSpec]) -> ModelReply:
        """Use the chain as a plain model (outside an engine, no events)."""
        reply, _ = await self.ask(messages, tools, None)
        return reply

    async def ask(
        self, messages: Transcript, tools: Sequence[ToolSpec], state: RunState | None
    ) -> tuple[ModelReply, str]:
        """The first reply any model gives, and the name of the model that gave it."""
        errors: dict[str, str] = {}
        env_var: str | None = None
        observing = state is not None and state.observing
        for model, name, breaker in self._links:
            clock = breaker.clock
            while True:
                if breaker.state != "closed":
                    before: str = breaker.state
                    allowed = breaker.allow()
                    if state is not None:
                        state.note_breaker(breaker, before, "model")
                    if not allowed:
                        left = breaker.cooldown_left()
                        errors.setdefault(name, f"breaker open, {left:.3g}s of cooldown left")
                        break
                t0 = clock.monotonic() if observing else 0.0
                try:
                    reply = await model.complete(messages, tools)
                    problem = reply_problem(reply)
                    if problem is not None:
                        raise ModelUnavailable(f"{name} returned {problem}")
                    if reply.model != name:  # one name for the model that answered
                        reply = replace(reply, model=name)
                    if reply.tool_calls and not distinct_ids(reply.tool_calls):
                        reply = with_call_ids(
                            reply, f"t{state.turn if state else 0}"
                        )  # results name their call
                except (ModelContextOverflow, KeyboardInterrupt):
                    raise
                except BaseException as exc:  # whatever a model raises is its failure, not the run's
                    if isinstance(exc, asyncio.CancelledError) and task_cancelling():
                        raise
                    text = exception_text(exc) or type(exc).__name__
                    if not isinstance(exc, ModelUnavailable):
                        text = f"{type(exc).__name__}: {text}"
                    elif text.startswith(f"{name}: "):  # adapters name themselves; the chain does too
                        text = text[len(name) + 2 :]
                    if isinstance(exc, ModelAuthError) and exc.env_var:
                        env_var = exc.env_var
                    errors[name] = text
                    before = breaker.state
                    if isinstance(exc, ModelAuthError) or getattr(exc, "status", None) == 404:
                        breaker.trip()  # asking again with a refused key, or for no such model, cannot help
                    else:
                        breaker.record_failure()
                    if state is not None:
                        if state.observing:
                            state.emit(
                                ModelFailed(
                                    seq=state.next_seq(),
                                    run_id=state.run_id,
                                    at=clock.time(),
                                    turn=state.turn,
                                    model=name,
                                    error=text,
                                    status=getattr(exc, "status", None),
                                    latency_ms=round((clock.monotonic() - t0) * 1000.0, 3),
                                )
                            )
                        state.note_breaker(breaker, before, "model")
                    if breaker.state == "open":
                        break
                    continue
                if breaker.failures or breaker.state != "closed":
                    before = breaker.state
                    breaker.record_success()
                    if state is not None:
                        state.note_breaker(breaker, before, "model")
                if observing:
                    assert state is not None
                    latency_ms = (clock.monotonic() - t0) * 1000.0
                    state.emit(
                        ModelReplied(
                            seq=state.next_seq(),
                            run_id=state.run_id,
                            at=clock.time(),
                            turn=state.turn,
                            reply=reply,
                            latency_ms=round(latency_ms, 3),
                        )
                    )
                return reply, name
        detail = "; ".join(f"{name}: {text}" for name, text in errors.items())
        message = f"every model in the fallback chain is spent ({detail})"
        if env_var and env_var not in message:
            message += f"; set {env_var} to a valid API key"
        raise FallbackExhausted(message, env_var=env_var)

    def __repr__(self) -> str:
        return f"FallbackChain({self.names})"
