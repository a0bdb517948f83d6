"""What each what-if change takes, checked one keyword at a time (the checks as one table)."""

from __future__ import annotations

import pytest

from loopnb import (
    CircuitBreaker,
    ContextBudget,
    ConvergenceDetector,
    LoopDetector,
    RetryWithBackoff,
    ToolError,
    tool,
)
from loopnb.analysis._whatif_policy import CHANGES, checked_changes


@tool
def read(path: str) -> str:
    """Read."""
    return path


TAKEN = {
    "loop_detector": [None, LoopDetector()],
    "recovery": [None, RetryWithBackoff()],
    "convergence": [None, ConvergenceDetector()],
    "breakers": [None, CircuitBreaker(), {"read": CircuitBreaker()}],
    "max_turns": [None, 1, 40],
    "timeout": [None, 0.5, 3],
    "context": [None, ContextBudget(max_tokens=100)],
    "done": [None, lambda text: True],
    "hooks": [[], [lambda call, ctx: None]],
    "suggestions": [True, False],
    "tools": [{"read": "ok"}, {"read": ToolError("no")}, {"read": read}, {"read": lambda path: path}, [read]],
    "error_text": [{}, {"tool_error": "{error}"}],
}
REFUSED = {
    "loop_detector": [ConvergenceDetector(), "on"],
    "recovery": [object(), "retry"],
    "convergence": [LoopDetector()],
    "breakers": [{"read": "open"}, 3],
    "max_turns": [0, 2.0, True, "5"],
    "timeout": [0, -1.0, float("nan"), True],
    "context": [100],
    "done": ["yes"],
    "hooks": ["hook", [1], 5],
    "suggestions": [1, None],
    "tools": ["read", [1], 7],
    "error_text": ["{error}", {"read": 1}],
}


def test_every_change_is_covered_here():
    assert TAKEN.keys() == REFUSED.keys() == CHANGES.keys()


@pytest.mark.parametrize(("key", "value"), [(k, v) for k, values in TAKEN.items() for v in values])
def test_a_value_a_change_takes_is_kept(key, value):
    assert checked_changes({key: value}) == {key: value}


@pytest.mark.parametrize(("key", "value"), [(k, v) for k, values in REFUSED.items() for v in values])
def test_any_other_value_is_refused_naming_what_the_change_takes(key, value):
    with pytest.raises(TypeError) as info:
        checked_changes({key: value})
    assert str(info.value).startswith(
        f"what_if({key}=...): expected {CHANGES[key]}; got {type(value).__name__} "
    )
