"""One attempt body and one exception ladder: every way a tool is called reads the same to the model."""

from __future__ import annotations

import asyncio
import threading

import pytest

from loopnb import Engine, ScriptedModel, ToolCall, ToolError, ToolResult, tool

PATHS = ("inline", "timeout", "async", "async_timeout", "awaitable")
"""A sync tool called inline; the same under the timeout (a thread); an async tool, with and without
the timeout; a sync tool handing back an awaitable."""


def _tool(path: str, exc: BaseException):
    """A tool named ``t`` that raises ``exc``, called the ``path`` way; and the engine options for it."""

    async def coroutine() -> str:
        raise exc

    def sync() -> str:
        """Fails."""
        raise exc

    async def asynchronous() -> str:
        """Fails."""
        raise exc

    def hands_back() -> str:
        """Fails, once awaited."""
        return coroutine()  # type: ignore[return-value]

    fn = {"async": asynchronous, "async_timeout": asynchronous, "awaitable": hands_back}.get(path, sync)
    options = {"timeout": 5.0} if path.endswith("timeout") else {}
    return tool(fn, name="t"), options


def _result(path: str, exc: BaseException) -> ToolResult:
    t, options = _tool(path, exc)
    result = Engine(ScriptedModel([ToolCall("t"), "done"]), tools=[t], **options).run("task")
    assert result.output == "done"
    return result.tool_results[0]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(
    ("exc", "producer", "content"),
    [
        (ToolError("no such row"), "tool_error", "no such row"),
        (RuntimeError("disk on fire"), "tool_panic", 'Tool "t" panicked: disk on fire'),
        (KeyError(), "tool_panic", 'Tool "t" panicked: (unknown payload)'),
        (SystemExit("bye"), "tool_panic", 'Tool "t" panicked: bye'),
        (asyncio.CancelledError("mine"), "tool_panic", 'Tool "t" panicked: mine'),
    ],
)
def test_every_way_of_calling_a_tool_words_its_failure_alike(path, exc, producer, content):
    result = _result(path, exc)
    assert (result.is_error, result.producer, result.content) == (True, producer, content)


@pytest.mark.parametrize("path", ["inline", "timeout"])
def test_a_sync_tools_stop_iteration_reads_the_same_with_and_without_the_timeout(path):
    result = _result(path, StopIteration("spent"))
    assert (result.producer, result.content) == ("tool_panic", 'Tool "t" panicked: spent')


def test_a_sync_tool_with_no_timeout_runs_inline_and_with_one_on_a_thread_of_its_own():
    seen: dict[str, threading.Thread] = {}

    @tool
    def where() -> str:
        """Says nothing; notes the thread it ran on."""
        seen["tool"] = threading.current_thread()
        return "here"

    def hook(call, ctx):  # hooks run in the dispatcher, on the run's own thread
        seen["run"] = threading.current_thread()

    for timeout, inline in ((None, True), (5.0, False)):
        model = ScriptedModel([ToolCall("where"), "done"])
        result = Engine(model, tools=[where], hooks=[hook], timeout=timeout).run("task")
        assert result.tool_results[0].content == "here"
        assert (seen["tool"] is seen["run"]) is inline
        assert inline or seen["tool"].name == "loopnb-tool-where"
