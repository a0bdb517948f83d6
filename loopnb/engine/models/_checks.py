"""The checks ``FallibleModel`` runs on its constructor arguments.

Each returns the value as the model keeps it, or raises ``TypeError``/``ValueError`` with a text
naming the argument, what it got and what it expected.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable

from loopnb.engine._messages import ToolCall
from loopnb.engine.models import _mistakes as slips
from loopnb.engine.models._mistakes import Mistake


def checked_plan(plan: object) -> list[ToolCall]:
    if isinstance(plan, ToolCall | str | bytes) or not isinstance(plan, Iterable):
        raise TypeError(f"FallibleModel: plan must be a list of ToolCall objects, got {plan!r}")
    calls = list(plan)
    for i, call in enumerate(calls):
        if not isinstance(call, ToolCall):
            raise TypeError(
                f"FallibleModel: plan[{i}] is {call!r} ({type(call).__name__}); expected a ToolCall, "
                'e.g. ToolCall("read_file", {"path": "src/main.rs"})'
            )
    return calls


def checked_mistakes(mistakes: object) -> tuple[Mistake, ...]:
    if isinstance(mistakes, str):
        raise TypeError(
            f"FallibleModel: mistakes must be a collection of kinds, got the str {mistakes!r}: "
            f"for one kind write ({mistakes!r},)"
        )
    if not isinstance(mistakes, Iterable):
        raise TypeError(
            f"FallibleModel: mistakes must be a collection of {slips.MISTAKES} (or () for a careful "
            f"model), got {mistakes!r}"
        )
    kinds = tuple(mistakes)
    unknown = [m for m in kinds if m not in slips.MISTAKES]
    if unknown:
        raise ValueError(f"FallibleModel: unknown mistakes {unknown}; use {slips.MISTAKES}")
    return kinds


def checked_probability(label: str, p: object) -> float:
    if isinstance(p, bool) or not isinstance(p, numbers.Real):
        raise TypeError(f"FallibleModel: {label} must be a number within [0, 1], got {p!r}")
    if not 0.0 <= float(p) <= 1.0:  # NaN fails this too
        raise ValueError(f"FallibleModel: {label} must be within [0, 1], got {p}")
    return float(p)


def checked_seed(seed: object) -> int:
    # An int only: the seed is written into every choice's key, so any other object (a float, a
    # str, an object whose repr holds its address) would give choices no other run could repeat.
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"FallibleModel: seed must be an int, got {seed!r} ({type(seed).__name__})")
    return int(seed)


def checked_name(name: object) -> str:
    if not isinstance(name, str):
        raise TypeError(f"FallibleModel: name must be a str, got {name!r}")
    if not name.strip():
        raise ValueError("FallibleModel: name must not be empty")
    return name
