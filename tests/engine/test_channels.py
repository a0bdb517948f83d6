"""One test per row of the channel table: the channel and the exact text the model reads."""

from __future__ import annotations

import asyncio
import enum
import threading
import time
from typing import Literal

import pytest
from pydantic import BaseModel

from loopnb import (
    CircuitBreaker,
    Engine,
    Fail,
    FakeClock,
    LoopDetected,
    ScriptedModel,
    ToolCall,
    ToolResult,
    tool,
)
from tests.dependency_words import extra_message, missing_message, pydantic_message

from .conftest import Events, add, explode, read_file


def run_one(call: ToolCall, *, tools=(read_file,), **options) -> tuple[ToolResult, Events]:
    """Run a model that makes ``call`` once and then answers "done"."""
    events = Events()
    engine = Engine(ScriptedModel([call, "done"]), tools=list(tools), observers=[events], **options)
    result = engine.run("task")
    assert result.output == "done"
    assert len(result.tool_results) == 1
    return result.tool_results[0], events


def test_tool_error_is_soft_with_the_tools_own_text():
    result, events = run_one(ToolCall("read_file", {"path": "src/mian.rs"}))
    assert (result.is_error, result.producer, result.content) == (
        True,
        "tool_error",
        "file src/mian.rs not found",
    )
    assert events.of("turn_finished")[0].channel == "soft"


def test_tool_returning_an_error_result_is_soft():
    @tool
    def lookup(key: str) -> ToolResult:
        """Look a key up."""
        return ToolResult(f"no key {key}; known keys: a, b", is_error=True)

    result, _ = run_one(ToolCall("lookup", {"key": "c"}), tools=[lookup])
    assert (result.is_error, result.producer, result.content) == (
        True,
        "tool_error",
        "no key c; known keys: a, b",
    )


@pytest.mark.parametrize(
    ("exc", "text"),
    [
        (RuntimeError("disk on fire"), 'Tool "explode" panicked: disk on fire'),
        (ValueError(42), 'Tool "explode" panicked: (unknown payload)'),
        (KeyError(), 'Tool "explode" panicked: (unknown payload)'),
        (SystemExit("bye"), 'Tool "explode" panicked: bye'),
    ],
)
def test_a_panic_is_soft_and_reports_the_string_payload(exc, text):
    @tool
    def explode() -> str:
        """Crash."""
        raise exc

    result, _ = run_one(ToolCall("explode"), tools=[explode])
    assert (result.is_error, result.producer, result.content) == (True, "tool_panic", text)


def test_a_name_never_advertised_is_pre_answered_and_nothing_runs():
    ran = []

    @tool
    def secret() -> str:
        """Hidden."""
        ran.append(1)
        return "x"

    result, events = run_one(ToolCall("secret"), tools=[read_file, secret], advertise=["read_file"])
    assert (result.is_error, result.producer, result.content) == (
        True,
        "not_advertised",
        "tool 'secret' is not available",
    )
    assert ran == []
    assert events.of("tool_dispatched")[0].executed is False


def test_a_hallucinated_name_is_pre_answered():
    result, _ = run_one(ToolCall("open_file", {"path": "src/main.rs"}))
    assert result.content == "tool 'open_file' is not available"
    assert result.producer == "not_advertised"


def test_registry_miss_lists_what_is_available_and_suggests():
    result, _ = run_one(
        ToolCall("read_fil", {"path": "x"}), tools=[read_file, add], advertise=["read_fil", "add"]
    )
    assert result.producer == "registry_miss"
    assert result.content == "Tool not found: read_fil. Available: read_file, add Did you mean 'read_file'?"


def test_registry_miss_without_the_suggestion_layer():
    result, _ = run_one(
        ToolCall("read_fil"), tools=[read_file, add], advertise=["read_fil"], suggestions=False
    )
    assert result.content == "Tool not found: read_fil. Available: read_file, add"


def test_registry_miss_cuts_the_list_after_eight_names():
    tools = []
    for i in range(10):

        def f(x: int) -> int:
            return x

        tools.append(tool(f, name=f"tool_{i}"))
    result, _ = run_one(ToolCall("zzz"), tools=tools, advertise=["zzz"], suggestions=False)
    names = ", ".join(f"tool_{i}" for i in range(8))
    assert result.content == f"Tool not found: zzz. Available: {names}..."


def test_a_hook_veto_is_soft_with_its_reason():
    def no_secrets(call, ctx):
        if "secret" in str(call.arguments):
            return "reading secrets is not allowed"
        return None

    result, _ = run_one(ToolCall("read_file", {"path": "secret.txt"}), hooks=[no_secrets])
    assert (result.producer, result.content) == (
        "hook_veto",
        "blocked by policy: reading secrets is not allowed",
    )


def test_a_hook_that_raises_fails_closed_and_says_so():
    def broken(call, ctx):
        raise RuntimeError("policy server down")

    result, _ = run_one(ToolCall("read_file", {"path": "src/main.rs"}), hooks=[broken])
    assert result.producer == "hook_veto"
    assert result.content.startswith("blocked by policy: hook 'broken' raised RuntimeError")


def test_an_open_breaker_refuses_without_calling_the_tool():
    calls = []

    @tool
    def flaky() -> str:
        """Always fails."""
        calls.append(1)
        raise RuntimeError("503")

    clock = FakeClock()
    engine = Engine(
        ScriptedModel([ToolCall("flaky"), ToolCall("flaky"), ToolCall("flaky"), "done"]),
        tools=[flaky],
        breakers=CircuitBreaker(failure_threshold=2, cooldown=10),
        clock=clock,
        loop_detector=None,
    )
    result = engine.run("task")
    assert len(calls) == 2
    third = result.tool_results[2]
    assert (third.producer, third.content, third.is_error) == (
        "breaker_open",
        "tool temporarily unavailable: circuit breaker open",
        True,
    )


def test_a_hanging_sync_tool_times_out_and_the_run_goes_on():
    release = threading.Event()

    @tool
    def hang() -> str:
        """Never returns (until released)."""
        release.wait(10)
        return "late"

    started = time.perf_counter()
    try:
        result, _ = run_one(ToolCall("hang"), tools=[hang], timeout=0.05)
    finally:
        release.set()
    assert time.perf_counter() - started < 5
    assert (result.producer, result.content) == ("timeout", "Tool 'hang' timed out after 0.05s")


def test_a_hanging_async_tool_times_out():
    @tool
    async def slow() -> str:
        """Sleeps for a long time."""
        await asyncio.sleep(10)
        return "late"

    result, _ = run_one(ToolCall("slow"), tools=[slow], timeout=0.05)
    assert result.content == "Tool 'slow' timed out after 0.05s"


def test_timeout_text_uses_g_formatting():
    @tool
    async def slow() -> str:
        """Sleeps."""
        await asyncio.sleep(10)
        return "late"

    result, _ = run_one(ToolCall("slow"), tools=[slow], timeout=1)
    assert result.content == "Tool 'slow' timed out after 1s"


def test_a_tool_raising_its_own_timeout_error_is_a_panic_not_a_timeout():
    @tool
    def net() -> str:
        """Raises TimeoutError itself."""
        raise TimeoutError("socket timed out")

    result, _ = run_one(ToolCall("net"), tools=[net], timeout=5)
    assert (result.producer, result.content) == ("tool_panic", 'Tool "net" panicked: socket timed out')


def test_loop_refusal_is_soft_and_prefixed():
    model = ScriptedModel([ToolCall("read_file", {"path": "nope"})] * 4 + ["done"])
    result = Engine(model, tools=[read_file]).run("task")
    fourth = result.tool_results[3]
    assert fourth.producer == "loop_refusal"
    assert fourth.content.startswith("dispatch refused before execution: loop detected: ")
    assert "file nope not found" in fourth.content


def test_recovery_giving_up_returns_the_original_result_verbatim_with_the_note_beside_it():
    class GiveUp:
        def decide(self, failure, attempt, max_attempts):
            return Fail(note="analysis: no such file anywhere")

    result, _ = run_one(ToolCall("read_file", {"path": "src/mian.rs"}), recovery=GiveUp())
    assert (result.producer, result.content, result.note) == (
        "recovery_gave_up",
        "file src/mian.rs not found",
        "analysis: no such file anywhere",
    )


def test_invalid_arguments_name_the_field_what_was_expected_and_what_came():
    result, _ = run_one(ToolCall("add", {"a": "one", "b": 2}), tools=[add])
    assert result.producer == "invalid_arguments"
    assert result.content.splitlines()[0] == "invalid arguments for tool 'add':"
    assert f"- a: {pydantic_message(int, 'one')}; got 'one' (str)" in result.content.splitlines()
    assert result.content.splitlines()[-1] == "expected arguments: {a: integer, b: integer}"


class Colour(enum.Enum):
    RED = "red"
    GREEN = "green"


class Point(BaseModel):
    x: int
    y: int


@tool
def paint(
    colour: Colour,
    at: Point,
    tags: list[str],
    mode: Literal["fill", "line"] = "fill",
    note: str | None = None,
) -> str:
    """Paint a point."""
    return "painted"


def test_the_expected_shape_names_enum_choices_nested_models_and_item_types():
    result, _ = run_one(
        ToolCall("paint", {"colour": ["red"], "at": {"x": 1, "y": 2}, "tags": []}), tools=[paint]
    )
    assert result.content.splitlines()[-1] == (
        "expected arguments: {colour: 'red' | 'green', at: object (Point), tags: array of string, "
        "mode: 'fill' | 'line' (optional), note: string | null (optional)}"
    )


def test_missing_and_unexpected_arguments_are_named():
    result, _ = run_one(ToolCall("read_file", {"file": "src/main.rs"}))
    lines = result.content.splitlines()
    assert f"- path: {missing_message()}; got nothing" in lines
    assert f"- file: {extra_message()}; got 'src/main.rs' (str)" in lines


@pytest.mark.parametrize("garbage", ["{path: src", "[1, 2]", "42", "null"])
def test_garbage_json_arguments_are_soft(garbage):
    result, _ = run_one(ToolCall("read_file", garbage))
    assert result.producer == "invalid_arguments"
    assert result.content.startswith("invalid arguments for tool 'read_file': ")


def test_json_string_arguments_are_accepted():
    result, _ = run_one(ToolCall("read_file", '{"path": "src/main.rs"}'))
    assert (result.is_error, result.content) == (False, "fn main() {}")


def test_odd_return_values_become_text():
    class Weird:
        def __str__(self):
            raise ValueError("cannot show myself")

    values = {"none": None, "dict": {"a": [1, 2]}, "bytes": b"hi", "weird": Weird()}

    @tool
    def odd(kind: str) -> object:
        """Return odd values."""
        return values[kind]

    contents = {}
    for kind in values:
        result, _ = run_one(ToolCall("odd", {"kind": kind}), tools=[odd])
        contents[kind] = (result.producer, result.content)
    assert contents["none"] == (None, "")
    assert contents["dict"] == (None, '{"a": [1, 2]}')
    assert contents["bytes"] == (None, "hi")
    assert contents["weird"] == ("tool_panic", 'Tool "odd" panicked: cannot show myself')


def test_a_failing_tool_never_ends_the_run():
    model = ScriptedModel([ToolCall("explode", {"reason": "boom"}), "I could not do it."])
    result = Engine(model, tools=[explode]).run("task")
    assert result.output == "I could not do it."
    assert result.tool_results[0].content == 'Tool "explode" panicked: boom'


def test_the_engine_decides_every_channel_through_channel_of(monkeypatch):
    """The one decision function is the one the engine calls, for soft, ok and hard turns alike."""
    from loopnb.engine import _errors as errors
    from loopnb.engine import _loop as run

    asked: list[str | None] = []

    def recording(producer):
        asked.append(producer)
        return errors.channel_of(producer)

    monkeypatch.setattr(run, "channel_of", recording)
    events = Events()
    misses = [ToolCall("read_file", {"path": "src/mian.rs"}), ToolCall("read_file", {"path": "y"})]
    engine = Engine(ScriptedModel(misses), tools=[read_file], observers=[events], max_turns=2)
    with pytest.raises(LoopDetected):
        engine.run("task")
    turns = events.of("turn_finished")
    assert asked == ["tool_error", "tool_error", "loop_detected"]
    assert [t.channel for t in turns] == ["soft", "soft", "hard"]
