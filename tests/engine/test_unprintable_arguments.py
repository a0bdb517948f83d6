"""Call arguments whose ``__str__``, ``__repr__``, ``__eq__`` or ``__hash__`` raise (issue 24, item 13).

Whatever such a value raises, ``SystemExit`` and ``BaseException`` subclasses of the user's own
included, it is contained wherever the engine shows or fingerprints arguments (the invalid-arguments
text, the loop detector's key, the context budget's count, the recording): the model reads
``<unprintable X>`` in its place and the run goes on.

``KeyboardInterrupt`` is the one exception: raised from a value's method it cannot be told from
Ctrl-C landing there, and swallowing a real Ctrl-C would leave the user unable to stop the run. So
it ends the run as ``Cancelled``, as Ctrl-C does anywhere else in the engine.
"""

from __future__ import annotations

import asyncio
import enum

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import loopnb
from loopnb import (
    Cancelled,
    ContextBudget,
    Engine,
    LoopDetected,
    Recorder,
    ScriptedModel,
    ToolCall,
    ToolError,
    tool,
)
from loopnb.engine._errors import arguments_text
from loopnb.engine._safety import call_key


class Custom(BaseException):
    """A BaseException of the user's own."""


RAISED = [SystemExit, ValueError, RuntimeError, RecursionError, GeneratorExit, Custom, asyncio.CancelledError]


def hostile(kind: type[BaseException]) -> object:
    """A value whose ``__str__``, ``__repr__``, ``__eq__`` and ``__hash__`` all raise ``kind``."""

    def fail(*args: object) -> None:
        raise kind("from the value")

    return type("Hostile", (), {"__str__": fail, "__repr__": fail, "__eq__": fail, "__hash__": fail})()


@tool
def takes(x: int) -> str:
    """Takes an int."""
    return f"x={x}"


@tool
def anything(x: object) -> str:
    """Takes anything, and always fails the same way."""
    raise ToolError("not today")


class Choice(enum.Enum):
    A = "a"
    B = "b"


@tool
def pick(x: Choice) -> str:
    """Takes a choice."""
    return x.value


@pytest.mark.parametrize("kind", RAISED, ids=lambda k: k.__name__)
@pytest.mark.parametrize("timeout", [None, 5.0], ids=["inline", "timeout"])
def test_an_unprintable_argument_is_answered_softly_and_the_run_goes_on(kind, timeout):
    engine = Engine(
        ScriptedModel([ToolCall("takes", {"x": hostile(kind)}), "done"]), [takes], timeout=timeout
    )
    result = engine.run("task")
    assert result.output == "done"
    [answer] = result.tool_results
    assert answer.producer == "invalid_arguments"
    assert answer.content.startswith("invalid arguments for tool 'takes':\n- x: ")
    assert answer.content.endswith("; got <unprintable Hostile> (Hostile)\nexpected arguments: {x: integer}")


@pytest.mark.parametrize("kind", [k for k in RAISED if k is not ValueError], ids=lambda k: k.__name__)
def test_an_argument_whose_hash_raises_inside_the_check_is_invalid_arguments(kind):
    """An enum's lookup may hash what the model sent (pydantic's newer releases do; 2.7 compares
    without hashing): what that raises is named, not raised; without the hash, the value is a wrong
    field shown as unprintable. Either way the model reads an invalid-arguments text."""
    engine = Engine(ScriptedModel([ToolCall("pick", {"x": hostile(kind)}), "done"]), [pick])
    result = engine.run("task")
    assert result.output == "done"
    assert result.tool_results[0].producer == "invalid_arguments"
    raised = f"invalid arguments for tool 'pick': checking them raised {kind.__name__}: from the value\n"
    wrong_field = "invalid arguments for tool 'pick':\n- x: "
    content = result.tool_results[0].content
    assert content.startswith(raised) or (
        content.startswith(wrong_field) and "; got <unprintable Hostile> (Hostile)\n" in content
    ), content
    assert content.endswith("\nexpected arguments: {x: 'a' | 'b'}")


def test_the_context_budget_counts_an_unprintable_argument_and_the_run_goes_on():
    calls = [ToolCall("anything", {"x": hostile(SystemExit)}) for _ in range(2)]
    engine = Engine(ScriptedModel([*calls, "done"]), [anything], context=ContextBudget(max_tokens=10_000))
    assert engine.run("task").output == "done"


def test_a_model_repeating_an_unprintable_argument_is_caught_by_the_loop_detector():
    """Each call sends a new dict holding a new unprintable value: still the same call, so the
    detector refuses the 4th and 5th and ends the run at the 6th, naming the call readably."""
    calls = [ToolCall("anything", {"x": hostile(SystemExit)}) for _ in range(6)]
    with pytest.raises(LoopDetected) as info:
        Engine(ScriptedModel([*calls, "done"]), [anything]).run("task")
    assert 'anything({"x":"<unprintable Hostile>"}) is being repeated' in str(info.value)
    contents = [r.content for r in info.value.run.tool_results]
    assert contents[:3] == ["not today"] * 3
    assert all(c.startswith("dispatch refused before execution: ") for c in contents[3:])


@pytest.mark.parametrize("kind", RAISED, ids=lambda k: k.__name__)
def test_the_loop_key_of_an_unprintable_argument_is_its_placeholder(kind):
    assert call_key(ToolCall("t", {"x": hostile(kind), "n": 1.0})) == 't({"n":1,"x":"<unprintable Hostile>"})'


def test_the_loop_key_of_arguments_json_cannot_sort_shows_each_pair():
    key = call_key(ToolCall("t", {1: hostile(SystemExit), "a": 2}))  # type: ignore[dict-item]
    assert key == "t({'a':2,1:<unprintable Hostile>})"


def test_a_recording_of_an_unprintable_argument_loads(tmp_path):
    path = tmp_path / "run.jsonl"
    recorder = Recorder(path=path)
    script = ScriptedModel([ToolCall("takes", {"x": hostile(SystemExit)}), "done"])
    result = Engine(script, [takes], observers=[recorder]).run("task")
    assert result.output == "done"
    recorder.close()
    loaded = loopnb.load(path)
    assert loaded.turns["producer"].tolist()[0] == "invalid_arguments"
    replied = next(e for e in loaded.event_objects if e.kind == "model_replied")
    assert replied.reply.tool_calls[0].arguments == {"x": "<not JSON: <unprintable Hostile>>"}


def test_keyboard_interrupt_from_a_value_is_taken_for_ctrl_c_and_cancels_the_run():
    engine = Engine(ScriptedModel([ToolCall("takes", {"x": hostile(KeyboardInterrupt)}), "done"]), [takes])
    with pytest.raises(Cancelled) as info:
        engine.run("task")
    assert info.value.run.output is None


@pytest.mark.parametrize("kind", RAISED, ids=lambda k: k.__name__)
def test_arguments_text_shows_a_placeholder_for_what_cannot_be_printed(kind):
    assert arguments_text({"x": hostile(kind)}) == '{"x": "<unprintable Hostile>"}'
    assert arguments_text({1: hostile(kind), "a": 2}, sort_keys=True) == "{1: <unprintable Hostile>, 'a': 2}"


# -- a property: whatever the values raise, the run ends as the engine decides -----------------

JSON_LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=5)
)
HOSTILE = st.sampled_from(RAISED).map(lambda kind: ("hostile", kind))  # made inside the test: hypothesis
VALUES = st.recursive(  # prints its examples, and the values' own repr would raise there
    st.one_of(JSON_LEAVES, HOSTILE),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)
ARGUMENTS = st.dictionaries(st.sampled_from(["x", "y"]), VALUES, max_size=2)


def made(recipe: object) -> object:
    """The arguments a recipe describes, each ``("hostile", kind)`` a hostile value raising ``kind``."""
    if isinstance(recipe, tuple):
        return hostile(recipe[1])
    if isinstance(recipe, list):
        return [made(v) for v in recipe]
    if isinstance(recipe, dict):
        return {k: made(v) for k, v in recipe.items()}
    return recipe


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["takes", "anything", "pick"]), ARGUMENTS), min_size=1, max_size=7))
def test_nothing_an_argument_raises_escapes_a_run_but_a_loop_error(recipes):
    calls = [ToolCall(name, made(arguments)) for name, arguments in recipes]
    budget = ContextBudget(max_tokens=10**6)
    try:
        result = Engine(ScriptedModel([*calls, "done"]), [takes, anything, pick], context=budget).run("task")
    except LoopDetected as err:  # a model repeating itself may well be stopped
        result = err.run
    else:
        assert result.output == "done"
        assert len(result.tool_results) == len(calls)
    assert all(type(answer.content) is str for answer in result.tool_results)
    for call in calls:
        assert call_key(call) == call_key(ToolCall(call.name, call.arguments))
        assert type(arguments_text(call.arguments, sort_keys=True)) is str
