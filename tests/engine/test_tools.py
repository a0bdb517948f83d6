"""Tools, schemas, the registry, the context budget and the clock, unit by unit."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from loopnb import ContextBudget, FakeClock, ToolResult, ToolSpec, tool
from loopnb.engine import Message, ModelReply, ToolCall, ToolRegistry
from loopnb.engine._context import drop_oldest_turns, item_tokens
from loopnb.engine._texts import registry_miss_text, suggest_name


def test_the_schema_comes_from_the_type_hints_and_the_docstring():
    @tool
    def search(query: str, limit: int = 10, exact: bool = False) -> list[str]:
        """Search the notes.

        Longer explanation that the model does not need.
        """
        return []

    spec = search.spec
    assert isinstance(spec, ToolSpec)
    assert spec.name == "search" and spec.description == "Search the notes."
    assert spec.parameters["required"] == ["query"]
    assert spec.parameters["properties"]["limit"] == {"default": 10, "type": "integer"}
    assert spec.parameters["additionalProperties"] is False


def test_tool_options_rename_and_describe():
    @tool(name="fs-read", description="Read a file from the sandbox.")
    def read(path: str) -> str:
        return path

    assert (read.name, read.description) == ("fs-read", "Read a file from the sandbox.")
    assert read("x") == "x"  # a Tool still calls like the function


def test_an_unusable_tool_name_is_refused():
    with pytest.raises(ValueError, match="not usable"):
        tool(lambda x: x, name="has space")


def test_fast_validation_matches_pydantic_exactly():
    @tool
    def mix(a: int, b: str, c: float = 1.5, d: bool = False) -> str:
        """Mix."""
        return ""

    fast = mix.validate({"a": 1, "b": "x"})
    assert fast == {"a": 1, "b": "x"}
    assert mix.validate({"a": 1, "b": "x", "c": 2}) == {"a": 1, "b": "x", "c": 2.0, "d": False}
    assert mix.validate({"a": "7", "b": "x"})["a"] == 7  # lax coercion still goes through pydantic
    with pytest.raises(ValidationError):
        mix.validate({"a": 1})
    with pytest.raises(ValidationError):
        mix.validate({"a": 1, "b": "x", "zzz": 1})
    # a bool sent for an int is not an exact type: pydantic decides (lax mode makes it 1)
    assert (
        mix.validate({"a": True, "b": "x"}) == mix.args_model.model_validate({"a": True, "b": "x"}).__dict__
    )


def test_fast_validation_defers_to_pydantic_for_anything_but_exact_types():
    @tool
    def f(a: int) -> int:
        """F."""
        return a

    assert f.validate({"a": 3.0}) == f.args_model.model_validate({"a": 3.0}).__dict__


def test_registry_keeps_registration_order_and_refuses_duplicates():
    def a(x: int) -> int:
        return x

    def b(x: int) -> int:
        return x

    registry = ToolRegistry([b, a])
    assert registry.names == ["b", "a"]
    with pytest.raises(ValueError, match="two tools are named 'a'"):
        registry.register(a)


def test_suggestions_use_a_fuzzy_matcher():
    assert suggest_name("raed_file", ["read_file", "write_file"]) == "read_file"
    assert suggest_name("zzz", ["read_file"]) is None
    assert registry_miss_text("zzz", ["a"], suggestions=True) == "Tool not found: zzz. Available: a"


def test_token_counting_counts_each_item_once_by_kind():
    counter = len
    assert item_tokens(Message(role="user", content="abcd"), counter) == 4 + 4
    reply = ModelReply(text="hi", tool_calls=(ToolCall("f", {"a": 1}),))
    assert item_tokens(reply, counter) == 2 + 1 + len("{'a': 1}") + 3 + 4


def test_compaction_drops_whole_turns_and_never_the_latest():
    tail = [
        ModelReply(tool_calls=(ToolCall("f"),)),
        ToolResult("a" * 10),
        ModelReply(tool_calls=(ToolCall("f"),)),
        ToolResult("b" * 10),
        ModelReply(tool_calls=(ToolCall("f"),)),
        ToolResult("c" * 10),
    ]
    tokens = [5, 10, 5, 10, 5, 10]
    assert drop_oldest_turns(tail, tokens, target=30) == 2  # the oldest turn goes, whole
    assert drop_oldest_turns(tail, tokens, target=29) == 4  # then the next
    assert drop_oldest_turns(tail, tokens, target=0) == 4  # the latest turn always stays
    assert drop_oldest_turns(tail, tokens, target=100) == 0


@pytest.mark.parametrize("bad", [0, -5, 1.5, True])
def test_a_bad_budget_is_refused(bad):
    with pytest.raises((ValueError, TypeError), match="ContextBudget"):
        ContextBudget(max_tokens=bad)


def test_the_fake_clock_moves_only_when_told():
    import asyncio

    clock = FakeClock(start=10)
    assert clock.monotonic() == 10
    asyncio.run(clock.sleep(2.5))
    assert clock.monotonic() == 12.5 and clock.slept == [2.5]
    with pytest.raises(ValueError):
        clock.advance(-1)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["a", "b", "c", "d", "zzz"]),
        st.one_of(st.integers(), st.text(max_size=3), st.floats(allow_nan=False), st.booleans(), st.none()),
    )
)
def test_fast_validation_agrees_with_pydantic_on_any_arguments(arguments):
    @tool
    def mix(a: int, b: str, c: float = 1.5, d: bool = False) -> str:
        """Mix."""
        return ""

    defaults = {"c": 1.5, "d": False}
    try:
        slow = mix.args_model.model_validate(arguments).__dict__
    except ValidationError:
        with pytest.raises(ValidationError):
            mix.validate(arguments)
        return
    fast = mix.validate(arguments)
    assert {**defaults, **fast} == slow
    assert {k: type(v) for k, v in {**defaults, **fast}.items()} == {k: type(v) for k, v in slow.items()}


def test_validated_calls_and_results_equal_constructed_ones():
    # Loading a recording validates these by the hundred thousand, through the same dataclasses.
    call = TypeAdapter(ToolCall)
    result = TypeAdapter(ToolResult)
    assert call.validate_python({"name": "read", "arguments": {"p": 1}, "id": "c1"}) == ToolCall(
        "read", {"p": 1}, id="c1"
    )
    assert call.validate_python({"name": "read"}) == ToolCall("read")
    assert call.validate_json('{"name": "read", "arguments": "not json"}').arguments == "not json"
    assert result.validate_python({"content": "text", "is_error": True}) == ToolResult("text", is_error=True)
    nested = TypeAdapter(ModelReply).validate_python(
        {"tool_calls": [{"name": "read", "arguments": {"p": 1}}]}
    )
    assert nested.tool_calls == (ToolCall("read", {"p": 1}),)
    with pytest.raises(ValidationError, match="content"):
        result.validate_python({"is_error": True})
    with pytest.raises(TypeError):
        ToolResult("a", content="b")  # the positional form still names what it sets once
