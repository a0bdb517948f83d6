"""Hooks, done-checks, strategies, tools, models and observers that raise anything or hand back
values that cannot be printed: none of it escapes ``run()`` but as a ``LoopError``."""

from __future__ import annotations

import asyncio
import math

import pytest

from loopnb import (
    MAX_RETRY_DELAY,
    Cancelled,
    Engine,
    FakeClock,
    FunctionModel,
    LoopError,
    ModelUnavailable,
    Retry,
    ScriptedModel,
    ToolCall,
    ToolError,
    tool,
)
from loopnb.engine._messages import ModelReply, Usage, reply_problem
from loopnb.engine._safety import call_key

from .conftest import Events


class Custom(BaseException):
    """A BaseException of the user's own."""


RAISED = [SystemExit, GeneratorExit, Custom, asyncio.CancelledError, ValueError]


class Unprintable:
    """A value whose ``__str__`` and ``__repr__`` both raise."""

    def __str__(self) -> str:
        raise ValueError("no str")

    __repr__ = __str__


def _raiser(kind: type[BaseException]):
    def fail(*args: object) -> None:
        raise kind("from the plug-in")

    return fail


@tool
def echo(x: int = 0) -> str:
    """Echo."""
    return f"x={x}"


@tool
def failing() -> str:
    """Always fails softly."""
    raise ToolError("failing failed")


def test_a_hook_verdict_whose_str_raises_vetoes_softly():
    engine = Engine(ScriptedModel([ToolCall("echo"), "done"]), [echo], hooks=[lambda c, ctx: Unprintable()])
    result = engine.run("task")
    assert result.tool_results[0].producer == "hook_veto"
    assert result.tool_results[0].content == "blocked by policy: <unprintable Unprintable>"


def test_a_done_check_verdict_whose_str_raises_rejects():
    answers = iter([Unprintable(), None])
    events = Events()
    engine = Engine(ScriptedModel(["first", "second"]), done=lambda t: next(answers), observers=[events])
    assert engine.run("task").output == "second"
    assert [e.reason for e in events.of("completion_rejected")] == ["<unprintable Unprintable>"]


@pytest.mark.parametrize("kind", RAISED, ids=lambda k: k.__name__)
def test_a_hook_that_raises_anything_vetoes_softly(kind):
    engine = Engine(ScriptedModel([ToolCall("echo"), "done"]), [echo], hooks=[_raiser(kind)])
    result = engine.run("task")
    assert result.output == "done"
    assert result.tool_results[0].producer == "hook_veto"
    assert f"raised {kind.__name__}: from the plug-in" in result.tool_results[0].content


@pytest.mark.parametrize("kind", RAISED, ids=lambda k: k.__name__)
def test_a_done_check_that_raises_anything_rejects(kind):
    events = Events()
    engine = Engine(ScriptedModel(["first"]), done=_raiser(kind), observers=[events], max_turns=1)
    with pytest.raises(LoopError):  # every answer rejected: the run ends at max_turns
        engine.run("task")
    reasons = [e.reason for e in events.of("completion_rejected")]
    assert reasons == [f"the completion check raised {kind.__name__}: from the plug-in"]


@pytest.mark.parametrize("kind", RAISED, ids=lambda k: k.__name__)
def test_a_strategy_that_raises_anything_counts_as_fail(kind):
    class Raises:
        decide = staticmethod(_raiser(kind))

    events = Events()
    engine = Engine(
        ScriptedModel([ToolCall("failing"), "done"]), [failing], recovery=Raises(), observers=[events]
    )
    result = engine.run("task")
    assert result.tool_results[0].producer == "recovery_gave_up"
    assert result.tool_results[0].content == "failing failed"
    (decided,) = events.of("recovery_decided")
    assert decided.decision == "fail" and not decided.valid
    assert decided.note == f"recovery strategy raised {kind.__name__}: from the plug-in"


@pytest.mark.parametrize("where", ["hook", "done", "strategy"])
def test_keyboard_interrupt_from_a_plug_in_ends_the_run_as_cancelled(where):
    class Raises:
        decide = staticmethod(_raiser(KeyboardInterrupt))

    options: dict[str, object] = {
        "hook": {"hooks": [_raiser(KeyboardInterrupt)]},
        "done": {"done": _raiser(KeyboardInterrupt)},
        "strategy": {"recovery": Raises()},
    }[where]
    script = ["done"] if where == "done" else [ToolCall("failing"), "done"]
    engine = Engine(ScriptedModel(script), [failing], **options)  # type: ignore[arg-type]
    with pytest.raises(Cancelled):
        engine.run("task")


@pytest.mark.parametrize("delay", [MAX_RETRY_DELAY + 0.001, 1e300, 10**400, math.inf])
def test_a_retry_delay_past_the_maximum_is_an_invalid_decision_and_nothing_is_slept(delay):
    class Patient:
        def decide(self, failure, attempt, max_attempts):
            return Retry(delay=delay)

    clock, events = FakeClock(), Events()
    engine = Engine(
        ScriptedModel([ToolCall("failing"), "done"]),
        [failing],
        recovery=Patient(),
        clock=clock,
        observers=[events],
    )
    start = clock.monotonic()
    result = engine.run("task")
    assert clock.monotonic() == start  # nothing slept
    assert result.tool_results[0].content == "failing failed"  # the original result, verbatim
    (decided,) = events.of("recovery_decided")
    assert decided.decision == "fail" and not decided.valid


def test_a_retry_delay_of_exactly_the_maximum_is_slept():
    class Patient:
        def decide(self, failure, attempt, max_attempts):
            return Retry(delay=MAX_RETRY_DELAY) if attempt == 0 else Retry()

    clock = FakeClock()
    engine = Engine(ScriptedModel([ToolCall("failing"), "done"]), [failing], recovery=Patient(), clock=clock)
    with pytest.raises(LoopError):  # retries past the ceiling
        engine.run("task")
    assert clock.monotonic() == MAX_RETRY_DELAY


@tool
def returns_unprintable() -> object:
    """Returns a value that cannot be shown."""
    return Unprintable()


class UnprintableToolError(ToolError):
    def __str__(self) -> str:
        raise SystemExit("no str")

    __repr__ = __str__


@tool
def raises_unprintable() -> str:
    """Raises a ToolError that cannot say what it is."""
    raise UnprintableToolError("hidden")


class StrSubclass(str):
    def __str__(self) -> str:
        raise ValueError("no str")


@tool
def returns_str_subclass() -> object:
    """Returns a str subclass whose __str__ raises."""
    return StrSubclass("plain text")


@pytest.mark.parametrize(
    ("name", "content", "producer"),
    [
        ("returns_unprintable", 'Tool "returns_unprintable" panicked: no str', "tool_panic"),
        ("raises_unprintable", 'Tool "raises_unprintable" panicked: hidden', "tool_panic"),
        ("returns_str_subclass", "plain text", None),
    ],
)
def test_a_tool_value_that_cannot_be_printed_is_a_soft_error(name, content, producer):
    tools = [returns_unprintable, raises_unprintable, returns_str_subclass]
    result = Engine(ScriptedModel([ToolCall(name), "done"]), tools).run("task")
    assert (result.tool_results[0].content, result.tool_results[0].producer) == (content, producer)
    assert type(result.tool_results[0].content) is str


class ReprRaises:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def test_an_argument_whose_repr_raises_still_has_a_loop_key():
    key = call_key(ToolCall("t", {"x": ReprRaises()}))
    assert key == 't({"x":"<unprintable ReprRaises>"})'  # the same for every such call: a repeat is seen


def test_an_argument_whose_repr_raises_is_answered_softly_and_the_run_goes_on():
    @tool
    def takes(x: int) -> str:
        """Takes an int."""
        raise ToolError("no")

    calls = [ToolCall("takes", {"x": ReprRaises()}) for _ in range(3)]
    result = Engine(ScriptedModel([*calls, "done"]), [takes]).run("task")
    assert result.output == "done"
    assert [r.producer for r in result.tool_results] == ["invalid_arguments"] * 3


class ModelError(Exception):
    """A model's own exception, hostile in every attribute the chain reads."""

    def __str__(self) -> str:
        raise ValueError("no str")

    __repr__ = __str__

    @property
    def status(self) -> int:
        raise ValueError("no status")

    @property
    def retry_after(self) -> float:
        raise ValueError("no retry_after")


class StrangeStatus(ModelUnavailable):
    status = "five hundred"  # type: ignore[assignment]


def test_an_exception_a_model_raises_that_cannot_be_read_is_its_failure():
    events = Events()
    engine = Engine(ScriptedModel([ModelError(), "done"]), observers=[events], clock=FakeClock())
    assert engine.run("task").output == "done"
    (failed,) = events.of("model_failed")
    assert failed.error == "ModelError: <unprintable ModelError>" and failed.status is None


def test_a_status_that_is_not_an_http_status_is_left_out():
    events = Events()
    engine = Engine(ScriptedModel([StrangeStatus("down"), "done"]), observers=[events], clock=FakeClock())
    assert engine.run("task").output == "done"
    assert events.of("model_failed")[0].status is None


def test_an_observer_whose_repr_raises_is_detached_with_a_warning_naming_its_type():
    class Broken:
        def __call__(self, event: object) -> None:
            raise RuntimeError("broken")

        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    engine = Engine(ScriptedModel(["done"]), observers=[Broken()])
    with pytest.warns(Warning, match="observer <Broken object> raised RuntimeError: broken"):
        assert engine.run("task").output == "done"


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        (ModelReply(tool_calls=("echo",)), "tool_calls[0] is str, not a ToolCall"),  # type: ignore[arg-type]
        (ModelReply(tool_calls=[ToolCall("echo")]), "tool_calls is list"),  # type: ignore[arg-type]
        (ModelReply(text=5), "text is int"),  # type: ignore[arg-type]
        (ModelReply(tool_calls=(ToolCall(5),)), "has a name or id that is not a str"),  # type: ignore[arg-type]
        (ModelReply(text="x", model=Unprintable()), "model is Unprintable"),  # type: ignore[arg-type]
        (ModelReply(text="x", usage="many"), "usage is str"),  # type: ignore[arg-type]
        (ModelReply(text="x", usage=Usage(input_tokens="3")), "usage.input_tokens"),  # type: ignore[arg-type]
        (ModelReply(text="x", usage=Usage(output_tokens=2**63)), "usage.output_tokens"),
        (ModelReply(text="x", usage=Usage(input_tokens=-1)), "usage.input_tokens"),
        (ModelReply(text="x", role="user"), "role is not 'assistant'"),  # type: ignore[arg-type]
        ("done", "str, not a ModelReply"),
    ],
)
def test_a_reply_built_without_validation_is_the_models_failure(reply, problem):
    assert problem in (reply_problem(reply) or "")

    class Raw:
        """A model handing back its reply as it built it (no test double normalising it)."""

        name = "raw"

        async def complete(self, messages, tools):
            return reply

    engine = Engine(Raw(), [echo], clock=FakeClock(), max_turns=3)
    with pytest.raises(LoopError) as info:
        engine.run("task")
    assert type(info.value).__name__ == "FallbackExhausted"
    assert problem in info.value.message


@pytest.mark.parametrize("arguments", [5, None, [1, 2], {1: 2}, {"x": Unprintable()}])
def test_a_reply_whose_call_arguments_are_not_a_json_object_is_answered_softly(arguments):
    reply = ModelReply(tool_calls=(ToolCall("echo", arguments, id="c"),))  # type: ignore[arg-type]
    script = iter([reply, ModelReply(text="done")])
    engine = Engine(FunctionModel(lambda messages, tools: next(script)), [echo])
    result = engine.run("task")
    assert result.tool_results[0].producer == "invalid_arguments"
    assert reply_problem(reply) is None
