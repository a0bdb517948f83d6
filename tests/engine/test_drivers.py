"""The one synchronous driver (``Engine.run``): where the run goes, interrupts, and clean errors.

A run driven from a script stays in the calling thread; inside a running loop (a Jupyter cell) it
goes to a worker thread; on a worker thread of your own it runs there. Ctrl-C or a kernel
interrupt ends it as ``Cancelled``, and no error it raises carries the driver's own probing
(``RuntimeError: no running event loop``) as its context.
"""

from __future__ import annotations

import _thread
import asyncio
import signal
import socket
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from loopnb import (
    Cancelled,
    CancelToken,
    Engine,
    FakeClock,
    FallbackExhausted,
    LoopDetected,
    LoopError,
    ScriptedModel,
    ToolCall,
    tool,
)
from loopnb.engine._cancel import INTERRUPTED
from loopnb.engine.models import OpenAIChatModel

from .conftest import read_file

DEADLINE = 10.0  # seconds a test waits for something that should happen at once


def chain(err: BaseException) -> Iterator[BaseException]:
    """The error and everything it carries as cause or context, suppressed or not."""
    seen: set[int] = set()
    item: BaseException | None = err
    while item is not None and id(item) not in seen:
        seen.add(id(item))
        yield item
        item = item.__cause__ or item.__context__


def assert_clean(err: BaseException) -> None:
    """Nothing the driver did shows in the error, and its printed traceback has no chained part."""
    assert [repr(e) for e in chain(err) if isinstance(e, RuntimeError)] == []
    printed = "".join(traceback.format_exception(err))
    assert "During handling of the above exception" not in printed, printed
    assert "direct cause" not in printed, printed


def in_thread(fn: Callable[[], Any]) -> Any:
    """``fn()`` on a plain thread of ours (no loop there); returns what it returned or raised."""
    box: list[Any] = []
    worker = threading.Thread(target=lambda: box.append(_outcome(fn)))
    worker.start()
    worker.join(DEADLINE)
    assert box, "the run on the worker thread did not end"
    return box[0]


def _outcome(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except BaseException as exc:
        return exc


def in_cell(fn: Callable[[], Any]) -> Any:
    """``fn()`` inside a running event loop with SIGINT raising KeyboardInterrupt, as in a kernel."""

    async def cell() -> Any:
        previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # what ipykernel does
        try:
            return _outcome(fn)
        finally:
            signal.signal(signal.SIGINT, previous)

    return asyncio.run(cell())


PLACES = {"script": _outcome, "cell": in_cell, "thread": in_thread}


# -- where the run goes ---------------------------------------------------------------------------


@pytest.mark.parametrize(("place", "here"), [("script", True), ("cell", False), ("thread", True)])
def test_a_run_stays_in_the_calling_thread_unless_its_loop_is_busy(place, here):
    seen: list[tuple[threading.Thread, threading.Thread]] = []

    @tool
    def where() -> str:
        """Notes the thread it runs on."""
        seen.append((threading.current_thread(), caller[0]))
        return "noted"

    caller: list[threading.Thread] = []

    def go() -> Any:
        caller.append(threading.current_thread())
        return Engine(ScriptedModel([ToolCall("where"), "done"]), tools=[where]).run("t")

    result = PLACES[place](go)
    assert result.output == "done"
    ran_on, called_from = seen[0]
    assert (ran_on is called_from) is here


# -- no exception context from the driver ---------------------------------------------------------


ENDINGS = {
    "loop_detected": (LoopDetected, lambda: ScriptedModel([ToolCall("read_file", {"path": "x"})] * 2)),
    "fallback_exhausted": (FallbackExhausted, lambda: ScriptedModel([])),
}


@pytest.mark.parametrize("place", sorted(PLACES))
@pytest.mark.parametrize("ending", sorted(ENDINGS))
def test_no_hard_error_carries_the_drivers_probe_for_a_loop(place, ending):
    error, model = ENDINGS[ending]
    err = PLACES[place](lambda: Engine(model(), tools=[read_file], max_turns=1).run("t"))
    assert type(err) is error
    assert_clean(err)


def test_a_refused_connection_reads_as_refused_through_the_engine():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = OpenAIChatModel("m", base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-test")
    with pytest.raises(FallbackExhausted) as info:
        Engine(model).run("t")
    message = info.value.message
    assert "no running event loop" not in message
    assert "refused" in message.lower(), message
    assert_clean(info.value)


# -- interrupts ------------------------------------------------------------------------------------


def _busy_until_interrupted() -> None:
    """Spin in Python code (where a pending KeyboardInterrupt is raised) until it is, or give up."""
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        pass


def test_ctrl_c_inside_a_tool_in_a_script_is_a_clean_cancelled():
    @tool
    def press() -> str:
        """Presses Ctrl-C in the thread the run is on."""
        _thread.interrupt_main()
        _busy_until_interrupted()
        return "not interrupted"

    with pytest.raises(Cancelled) as info:
        Engine(ScriptedModel([ToolCall("press"), "done"]), tools=[press]).run("t")
    assert info.value.message == INTERRUPTED
    assert [r.name for r in info.value.run.tool_results] == []  # the interrupted turn is dropped
    assert_clean(info.value)


def test_ctrl_c_landing_in_the_event_loop_is_a_clean_cancelled():
    @tool
    async def wait_for_ever() -> str:
        """Has Ctrl-C pressed by the loop itself, between two steps of the run, then waits."""
        asyncio.get_running_loop().call_soon(_thread.interrupt_main)
        await asyncio.Event().wait()
        return "never"

    with pytest.raises(Cancelled) as info:
        Engine(ScriptedModel([ToolCall("wait_for_ever"), "done"]), tools=[wait_for_ever]).run("t")
    assert info.value.message == INTERRUPTED
    assert_clean(info.value)


def test_a_kernel_interrupt_during_a_cell_is_a_clean_cancelled():
    token = CancelToken()
    fired = threading.Event()
    token.on_cancel(fired.set)

    @tool
    def press(i: int) -> str:
        """On its second call interrupts the main thread (the kernel's stop button), then waits for
        the interrupt to reach the run's token."""
        if i == 2:
            _thread.interrupt_main()
            assert fired.wait(DEADLINE), "the interrupt never fired the run's token"
        return "ok"

    model = ScriptedModel([ToolCall("press", {"i": i}) for i in (1, 2, 3)] + ["done"])
    engine = Engine(model, tools=[press], clock=FakeClock())
    err = in_cell(lambda: engine.run("go", cancel=token))
    assert isinstance(err, Cancelled), "".join(traceback.format_exception(err))
    assert err.message == INTERRUPTED
    assert [r.content for r in err.run.tool_results] == ["ok", "ok"]  # turn 3 never began
    assert_clean(err)
    last = traceback.format_exception_only(err)[-1].strip()
    assert last == f"loopnb.Cancelled: {INTERRUPTED}"


def test_a_run_on_a_thread_of_its_own_is_cancelled_by_its_token():
    token = CancelToken()
    started = threading.Event()

    @tool
    def wait(n: int) -> str:
        """Says it started, then waits for the token."""
        started.set()
        released = threading.Event()
        token.on_cancel(released.set)
        released.wait(DEADLINE)
        return "waited"

    engine = Engine(ScriptedModel([ToolCall("wait", {"n": 1}), "done"]), tools=[wait])
    box: list[Any] = []
    worker = threading.Thread(target=lambda: box.append(_outcome(lambda: engine.run("t", cancel=token))))
    worker.start()
    assert started.wait(DEADLINE)
    token.cancel("stopped from the main thread")
    worker.join(DEADLINE)
    err = box[0]
    assert isinstance(err, Cancelled) and err.message == "stopped from the main thread"
    assert_clean(err)


def test_every_hard_error_is_a_loop_error_the_driver_leaves_alone():
    """The worker thread's error reaches the caller as the same object, with the salvaged run."""
    err = in_cell(lambda: Engine(ScriptedModel([]), tools=[read_file]).run("t"))
    assert isinstance(err, LoopError) and err.run is not None and err.run.turns == 1
