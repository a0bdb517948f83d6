"""Injecting into a model: a model of the same name whose requests fail as planned.

One fault per model: ``unavailable`` raises ``ModelUnavailable`` (its status and ``Retry-After``),
as a server's 503 or 429 would; ``error`` a ``ModelUnavailable`` with its text; ``crash`` the
exception; ``hang`` waits its seconds, then fails as a timed-out request does; ``slow`` waits, then
asks the model. The engine's fallback chain takes each failure as it would a real one (breaker,
back-off, the next model), and its ``model_failed`` event carries the fault's label (``injected``).
Waits are on ``inject``'s ``clock`` (real seconds without one).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from loopnb.engine import Clock, FallbackChain, ModelReply, ModelUnavailable, Tool, ToolSpec
from loopnb.engine._messages import Transcript
from loopnb.faults._fault import Fault, FaultKind
from loopnb.faults._perform import await_wait, failure
from loopnb.faults._plan import FaultPlan, Injection

MODEL_KINDS: frozenset[FaultKind] = frozenset({"unavailable", "error", "crash", "hang", "slow"})


def model_failure(fault: Fault) -> Exception | None:
    """What a model's request raises when ``fault`` fires, marked with its label (``injected``)."""
    exc: Exception | None
    if fault.kind == "error":
        exc = ModelUnavailable(fault.text)
    elif fault.kind == "hang":
        exc = ModelUnavailable(fault.text, reason="timed_out")
    else:
        exc = failure(fault)
    if exc is not None:
        with contextlib.suppress(AttributeError):  # an exception with slots of its own goes unmarked
            exc.injected = fault.label  # type: ignore[attr-defined]
    return exc


class InjectedModel:
    """A model whose requests ask the plan first; ``injections`` is the plan's log."""

    def __init__(self, model: Any, plan: FaultPlan, clock: Clock | None) -> None:
        self.model = model
        self.name: str = str(model.name)
        self.plan = plan
        self.injections: list[Injection] = plan.injections
        self.clock = clock

    async def complete(self, messages: Transcript, tools: Sequence[ToolSpec]) -> ModelReply:
        fired = self.plan.decide(self.name, None)
        if fired is not None:
            await await_wait(self.clock, fired.seconds)
            exc = model_failure(fired)
            if exc is not None:
                raise exc
        reply: ModelReply = await self.model.complete(messages, tools)
        return reply

    def __repr__(self) -> str:
        return f"<{self.model!r} with {self.plan.faults[self.name].label}>"


class Models:
    """``inject``'s target: a model (any object with ``name`` and ``async complete``)."""

    name = "a model"
    kinds = MODEL_KINDS
    single = True

    def accepts(self, target: object) -> bool:
        if isinstance(target, Tool | type):
            return False
        return hasattr(target, "name") and callable(getattr(target, "complete", None))

    def tools(self, target: Any) -> list[str]:
        if isinstance(target, FallbackChain):
            raise TypeError(
                "inject: a FallbackChain is several models: inject into each one you mean, "
                "FallbackChain([inject(model, fault), ...])"
            )
        return [str(target.name)]

    def wrap(self, target: Any, plan: FaultPlan, *, clock: Clock | None) -> InjectedModel:
        return InjectedModel(target, plan, clock)
