"""Nothing a model, a tool or an observer does crashes a run: each failure lands on its channel."""

from __future__ import annotations

import asyncio
import functools
import warnings

import pytest

from loopnb import (
    Cancelled,
    Engine,
    FakeClock,
    FallbackExhausted,
    LoopnbWarning,
    ModelReply,
    ScriptedModel,
    ToolCall,
    ToolError,
    ToolResult,
    tool,
)


def run_one(fn, *, timeout=None, arguments=None) -> ToolResult:
    """Run ``fn`` as the tool ``t``, called once with ``arguments``; the model then answers "done"."""
    engine = Engine(
        ScriptedModel([ToolCall("t", arguments or {}), "done"]), tools=[tool(fn, name="t")], timeout=timeout
    )
    result = engine.run("task")
    assert result.output == "done"
    assert len(result.tool_results) == 1
    return result.tool_results[0]


def sync_and_async(raise_or_return):
    """The same tool body as a sync function and as a coroutine function."""

    def sync_tool() -> str:
        return raise_or_return()

    async def async_tool() -> str:
        return raise_or_return()

    return [sync_tool, async_tool]


def raising(exc):
    def body():
        raise exc

    return body


PATHS = [(kind, timeout) for kind in (0, 1) for timeout in (None, 5.0)]
"""Sync inline, sync on a thread under the timeout, async, async under ``asyncio`` waiting."""


class UnprintableError(Exception):
    def __str__(self) -> str:
        raise ValueError("no text")


class UnprintableToolError(ToolError):
    def __str__(self) -> str:
        raise ValueError("no text")


@pytest.mark.parametrize(("kind", "timeout"), PATHS)
@pytest.mark.parametrize(
    ("exc", "text"),
    [
        (SystemExit(3), "(unknown payload)"),
        (SystemExit("bye"), "bye"),
        (GeneratorExit(), "(unknown payload)"),
        (StopAsyncIteration(), "(unknown payload)"),
        (MemoryError(), "(unknown payload)"),
        (RecursionError("maximum recursion depth exceeded"), "maximum recursion depth exceeded"),
        (asyncio.CancelledError(), "(unknown payload)"),  # the tool's own: nothing cancels the run
        (UnprintableError(), "(unknown payload)"),
        (UnprintableError("still a payload"), "still a payload"),
        (UnprintableToolError("its args"), "its args"),  # a ToolError with no text is a panic
        (ExceptionGroup("several failed", [ValueError("a")]), "several failed"),
    ],
    ids=repr,
)
def test_whatever_a_tool_raises_is_a_soft_panic_on_every_path(exc, text, kind, timeout):
    result = run_one(sync_and_async(raising(exc))[kind], timeout=timeout)
    assert (result.is_error, result.producer, result.content) == (
        True,
        "tool_panic",
        f'Tool "t" panicked: {text}',
    )


@pytest.mark.parametrize("timeout", [None, 5.0])
def test_stop_iteration_from_a_sync_tool_reads_the_same_with_and_without_the_timeout(timeout):
    result = run_one(sync_and_async(raising(StopIteration("stop")))[0], timeout=timeout)
    assert result.content == 'Tool "t" panicked: stop'


@pytest.mark.parametrize(("kind", "timeout"), PATHS)
def test_keyboard_interrupt_in_a_tool_is_cancelled_on_every_path(kind, timeout):
    engine = Engine(
        ScriptedModel([ToolCall("t"), "done"]),
        tools=[tool(sync_and_async(raising(KeyboardInterrupt()))[kind], name="t")],
        timeout=timeout,
    )
    with pytest.raises(Cancelled):
        engine.run("task")


def test_a_real_cancellation_during_an_async_tool_is_still_cancelled():
    @tool
    async def t() -> str:
        """Cancel the run's own task (as Ctrl-C does), then wait."""
        asyncio.current_task().cancel()
        await asyncio.sleep(0)
        return "never"

    with pytest.raises(Cancelled):
        Engine(ScriptedModel([ToolCall("t"), "done"]), tools=[t]).run("task")


async def coroutine_value() -> str:
    await asyncio.sleep(0)
    return "from the coroutine"


class Awaitable:
    def __await__(self):
        yield from asyncio.sleep(0).__await__()
        return "awaited"


@pytest.mark.parametrize(("kind", "timeout"), PATHS)
@pytest.mark.parametrize(("value", "text"), [(coroutine_value, "from the coroutine"), (Awaitable, "awaited")])
def test_an_awaitable_a_tool_returns_is_awaited(value, text, kind, timeout):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "coroutine was never awaited"
        result = run_one(sync_and_async(value)[kind], timeout=timeout)
    assert (result.is_error, result.content) == (False, text)


def test_a_decorated_async_function_works_as_a_tool():
    def logged(fn):
        @functools.wraps(fn)
        def wrapper(**kwargs):  # a plain function returning the coroutine
            return fn(**kwargs)

        return wrapper

    @logged
    async def t(path: str) -> str:
        return f"read {path}"

    assert run_one(t, arguments={"path": "a"}).content == "read a"


def test_an_awaitable_that_never_completes_times_out():
    async def forever() -> str:
        await asyncio.Event().wait()
        return "never"

    def t() -> object:
        return forever()

    result = run_one(t, timeout=0.05)
    assert (result.producer, result.content) == ("timeout", "Tool 't' timed out after 0.05s")


def test_a_sync_tool_returning_an_awaitable_under_recovery_is_awaited():
    from loopnb import Skip

    class Never:
        def decide(self, failure, attempt, max_attempts):
            return Skip()

    engine = Engine(
        ScriptedModel([ToolCall("t"), "done"]),
        tools=[tool(lambda: coroutine_value(), name="t")],
        recovery=Never(),
    )
    assert engine.run("task").tool_results[0].content == "from the coroutine"


class UnprintableStr(str):
    def __str__(self) -> str:
        raise ValueError("no text")


@pytest.mark.parametrize(
    ("value", "producer", "text"),
    [
        (UnprintableStr("hi"), None, "hi"),
        (10**5000, "tool_panic", 'Tool "t" panicked: Exceeds the limit (4300 digits)'),
    ],
    ids=["str subclass with a broken __str__", "int too long for str"],
)
def test_odd_return_values_never_crash(value, producer, text):
    result = run_one(lambda: value)
    assert result.producer == producer
    assert result.content.startswith(text)


@pytest.mark.parametrize(
    ("arguments", "got"),
    [([1, 2], "list [1, 2]"), (None, "NoneType None"), (5, "int 5")],
)
def test_arguments_that_are_neither_a_dict_nor_a_string_are_invalid_arguments(arguments, got):
    call = ToolCall("t", arguments, id="c")  # nothing validates a dataclass at construction
    engine = Engine(ScriptedModel([call, "done"]), tools=[tool(lambda: "ran", name="t")])
    result = engine.run("task").tool_results[0]
    assert (result.producer, result.content) == (
        "invalid_arguments",
        f"invalid arguments for tool 't': expected a JSON object of named arguments, got {got}",
    )


def test_arguments_nested_too_deep_to_encode_fail_softly_and_are_watched():
    deep = functools.reduce(lambda inner, _: [inner], range(5000), [])
    call = ToolCall("t", {"text": deep}, id="c")

    def t(text: str) -> str:
        return text

    engine = Engine(ScriptedModel([call, call, "done"]), tools=[tool(t, name="t")])
    results = engine.run("task").tool_results
    assert [r.producer for r in results] == ["invalid_arguments", "invalid_arguments"]


class FailingModel:
    """A model that raises ``exc`` on every request."""

    name = "m"

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    async def complete(self, messages, tools) -> ModelReply:
        raise self.exc


@pytest.mark.parametrize(
    ("exc", "text"),
    [
        (SystemExit(1), "SystemExit: 1"),
        (UnprintableError(), "UnprintableError: <unprintable UnprintableError>"),
        (asyncio.CancelledError(), "CancelledError: CancelledError"),  # its own, not the run's
    ],
    ids=repr,
)
def test_whatever_a_model_raises_is_a_model_failure(exc, text):
    with pytest.raises(FallbackExhausted) as info:
        Engine(FailingModel(exc), clock=FakeClock()).run("task")
    assert str(info.value) == f"every model in the fallback chain is spent (m: {text})"


@pytest.mark.parametrize(
    "exc", [ValueError("v"), UnprintableError(), SystemExit(2), asyncio.CancelledError()], ids=repr
)
def test_an_observer_that_raises_anything_is_detached_and_the_run_is_unchanged(exc):
    def observer(event):
        raise exc

    seen = []
    engine = Engine(ScriptedModel([ToolCall("t"), "done"]), tools=[tool(lambda: "ok", name="t")])
    engine.subscribe(observer)
    engine.subscribe(seen.append)
    with pytest.warns(LoopnbWarning, match=f"raised {type(exc).__name__}: .*it was detached"):
        result = engine.run("task")
    assert result.output == "done"
    assert seen[-1].kind == "run_finished"
    assert engine._observers == [seen.append]


def test_an_observer_whose_repr_fails_is_still_detached_with_a_warning():
    class Observer:
        def __call__(self, event):
            raise ValueError("v")

        def __repr__(self):
            raise RuntimeError("no repr")

    engine = Engine(ScriptedModel(["done"]), observers=[Observer()])
    with pytest.warns(LoopnbWarning, match="observer <Observer object> raised ValueError: v"):
        assert engine.run("task").output == "done"


def test_ctrl_c_landing_in_an_observer_at_the_start_is_cancelled():
    fired = []

    def observer(event):
        if not fired:
            fired.append(event.kind)
            raise KeyboardInterrupt

    try:
        with pytest.raises(Cancelled) as info:
            Engine(ScriptedModel(["done"]), observers=[observer]).run("task")
    except KeyboardInterrupt:
        pytest.fail("the KeyboardInterrupt escaped the run instead of ending it as Cancelled")
    assert fired == ["run_started"]
    assert info.value.run is not None


# -- user callbacks whose exceptions cannot even be printed --------------------------------------


class _Unhelpful:
    """A recovery strategy that raises an exception whose ``str`` raises."""

    def decide(self, failure, attempt, max_attempts):
        raise UnprintableError


class _UnprintableAnswer:
    """A recovery strategy whose answer cannot be shown either."""

    class Answer:
        def __repr__(self) -> str:
            raise ValueError("no repr")

    def decide(self, failure, attempt, max_attempts):
        return self.Answer()


def _failing_read() -> Engine:
    @tool
    def read(path: str) -> str:
        """Fails."""
        raise ToolError(f"no {path}")

    return read


@pytest.mark.parametrize("strategy", [_Unhelpful(), _UnprintableAnswer()], ids=["raises", "answers"])
def test_a_recovery_strategy_that_cannot_be_printed_gives_up_softly(strategy):
    engine = Engine(
        ScriptedModel([ToolCall("read", {"path": "x"}), "done"]), tools=[_failing_read()], recovery=strategy
    )
    result = engine.run("t")
    assert result.output == "done"
    assert result.tool_results[0].producer == "recovery_gave_up"
    assert "unprintable" in result.tool_results[0].note


def test_a_done_check_that_raises_unprintably_rejects_the_answer():
    calls = []

    def done(text):
        calls.append(text)
        if len(calls) == 1:
            raise UnprintableError
        return None

    result = Engine(ScriptedModel(["first", "second"]), done=done).run("t")
    assert result.output == "second"
    rejected = [m for m in result.messages if getattr(m, "producer", None) == "completion_rejected"]
    assert (
        "the completion check raised UnprintableError: <unprintable UnprintableError>" in rejected[0].content
    )
