"""The live view shows a call whose arguments cannot be printed (issue 24, item 13): a value whose
``__str__`` and ``__repr__`` raise ``SystemExit`` reads ``<unprintable X>`` in the turn's calls, and
folding the run's events goes on (the view's fold runs on its painter's thread, where a
``SystemExit`` would end the painting without a word)."""

from __future__ import annotations

from loopnb import Engine, ScriptedModel, ToolCall, ToolError, tool
from loopnb.notebook._viewmodel import ViewModel


class Hostile:
    def __repr__(self) -> str:
        raise SystemExit("from the value")

    __str__ = __repr__


@tool
def anything(x: object) -> str:
    """Takes anything, and fails."""
    raise ToolError("not today")


def test_the_view_shows_an_unprintable_argument_as_its_placeholder():
    events: list[object] = []
    script = ScriptedModel([ToolCall("anything", {"x": Hostile(), "n": 1}), "done"])
    Engine(script, [anything], observers=[events.append]).run("task")
    view = ViewModel()
    for event in events:
        view.apply(event)
    first = view.snapshot().turns[0]
    assert [(c.name, c.arguments) for c in first.calls] == [
        ("anything", '{"x": "<unprintable Hostile>", "n": 1}')
    ]
