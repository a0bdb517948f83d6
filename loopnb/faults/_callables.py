"""Injecting into a plain function: a function with the same signature that fails as planned.

The wrapper keeps the original's name, docstring, annotations and signature
(``inspect.signature`` gives the same), is async when the original is, and has ``.injections``,
the plan's log. Each call asks the plan, and acts a fired fault out itself (``perform``): an
``error`` raises ``loopnb.ToolError``, so the wrapper is a loopnb tool's function like any other.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from loopnb.engine import Clock
from loopnb.faults._fault import KINDS, FaultKind
from loopnb.faults._perform import aperform, perform
from loopnb.faults._plan import FaultPlan

TOOL_KINDS: frozenset[FaultKind] = frozenset(k for k in KINDS if k != "unavailable")
"""The faults a tool takes (``unavailable`` is a model's)."""


def name_of(fn: Callable[..., Any]) -> str:
    """The name a function is called by (its ``__name__``; its type's for an object that has none)."""
    name = getattr(fn, "__name__", None)
    return name if isinstance(name, str) and name else type(fn).__name__


class Callables:
    """``inject``'s target: a plain function (or any callable that is not a class)."""

    name = "a function"
    kinds = TOOL_KINDS
    single = False

    def accepts(self, target: object) -> bool:
        return callable(target) and not isinstance(target, type)

    def tools(self, target: Any) -> list[str]:
        return [name_of(target)]

    def wrap(self, target: Any, plan: FaultPlan, *, clock: Clock | None) -> Any:
        return injected_function(target, name_of(target), plan, clock)


def injected_function(fn: Callable[..., Any], name: str, plan: FaultPlan, clock: Clock | None) -> Any:
    """``fn`` wrapped: each call asks ``plan`` about ``name``, and fails as it says."""
    fault = plan.faults.get(name)
    positional = _positional(fn) if fault is not None and fault.match else None
    decide = plan.decide

    def arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any] | None:
        if positional is None:  # no .when to check: the call's arguments are not needed
            return None
        if not args:
            return kwargs
        named = dict(zip(positional, args, strict=False))
        named.update(kwargs)
        return named

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def injected_async(*args: Any, **kwargs: Any) -> Any:
            fired = decide(name, arguments(args, kwargs))
            if fired is None:
                return await fn(*args, **kwargs)
            return await aperform(fired, lambda: fn(*args, **kwargs), clock=clock)

        injected_async.injections = plan.injections  # type: ignore[attr-defined]
        return injected_async

    @functools.wraps(fn)
    def injected(*args: Any, **kwargs: Any) -> Any:
        fired = decide(name, arguments(args, kwargs))
        if fired is None:
            return fn(*args, **kwargs)
        return perform(fired, lambda: fn(*args, **kwargs), clock=clock)

    injected.injections = plan.injections  # type: ignore[attr-defined]
    return injected


def _positional(fn: Callable[..., Any]) -> list[str]:
    """The names a call's positional arguments bind to."""
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # a builtin with no signature: only named arguments are matched
        return []
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in parameters if p.kind in kinds]
