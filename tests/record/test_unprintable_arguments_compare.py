"""Comparing runs (and so ``what_if``) whose calls carry arguments that cannot be printed (issue
24, item 13): a value whose ``__str__`` and ``__repr__`` raise ``SystemExit`` reads
``<unprintable X>`` in the aligned calls, and the comparison is made."""

from __future__ import annotations

import loopnb
from loopnb import Engine, Recorder, ScriptedModel, ToolCall, ToolError, tool


class Hostile:
    def __repr__(self) -> str:
        raise SystemExit("from the value")

    __str__ = __repr__


@tool
def anything(x: object) -> str:
    """Takes anything, and fails."""
    raise ToolError("not today")


def _recorded() -> Recorder:
    recorder = Recorder()
    script = ScriptedModel([ToolCall("anything", {"x": Hostile(), "n": 1}), "done"])
    Engine(script, [anything], observers=[recorder]).run("task")
    return recorder


def test_compare_shows_an_unprintable_argument_as_its_placeholder():
    comparison = loopnb.compare(_recorded(), _recorded())
    assert comparison.divergence is None
    assert comparison.sides[0].calls[1] == 'anything({"n": 1, "x": "<unprintable Hostile>"})'


def test_what_if_replays_a_run_with_an_unprintable_argument():
    replayed = loopnb.what_if(_recorded())
    assert replayed.divergence is None
