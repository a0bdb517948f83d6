"""How runs are driven: sync, async, inside a running loop, stepping; bad input; the public API."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import json
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import threading
import warnings

import pytest

from loopnb import (
    EVENT_ADAPTER,
    Cancelled,
    CancelToken,
    Engine,
    FakeClock,
    FallbackExhausted,
    FunctionModel,
    LoopnbWarning,
    ScriptedModel,
    ToolCall,
    tool,
)
from loopnb.engine import ModelReply
from loopnb.engine.models._scripted import with_call_ids

from .conftest import Events, read_file

SCRIPT = [
    ToolCall("read_file", {"path": "src/mian.rs"}),
    ToolCall("read_file", {"path": "src/main.rs"}),
    "It prints nothing.",
]


def test_the_smallest_program():
    engine = Engine(model=ScriptedModel(SCRIPT), tools=[read_file])
    result = engine.run("What does src/main.rs do?")
    assert result.output == "It prints nothing."
    assert [(r.is_error, r.content) for r in result.tool_results] == [
        (True, "file src/mian.rs not found"),
        (False, "fn main() {}"),
    ]
    assert [m.role for m in result.messages] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    assert result.turns == 3


def test_arun_inside_an_event_loop():
    async def main():
        return await Engine(ScriptedModel(SCRIPT), tools=[read_file]).arun("task")

    assert asyncio.run(main()).output == "It prints nothing."


def test_run_works_while_a_loop_is_running_as_in_jupyter():
    async def cell():
        # a Jupyter cell runs with the kernel's loop already running in this thread
        return Engine(ScriptedModel(SCRIPT), tools=[read_file]).run("task")

    assert asyncio.run(cell()).output == "It prints nothing."


def test_a_hard_error_inside_a_running_loop_still_raises_with_the_run():
    async def cell():
        return Engine(ScriptedModel(SCRIPT[:1]), tools=[read_file]).run("task")

    with pytest.raises(FallbackExhausted) as info:
        asyncio.run(cell())
    assert len(info.value.run.tool_results) == 1


def test_async_tools_run_on_the_runs_loop():
    @tool
    async def fetch(url: str) -> str:
        """Fetch."""
        await asyncio.sleep(0)
        return f"<html>{url}</html>"

    result = Engine(ScriptedModel([ToolCall("fetch", {"url": "a"}), "ok"]), tools=[fetch]).run("t")
    assert result.tool_results[0].content == "<html>a</html>"


def test_several_calls_in_one_turn_each_get_one_result_in_order():
    model = ScriptedModel([[ToolCall("read_file", {"path": p}) for p in ("a", "src/main.rs", "b")], "done"])
    events = Events()
    result = Engine(model, tools=[read_file], observers=[events]).run("t")
    assert [r.content for r in result.tool_results] == [
        "file a not found",
        "fn main() {}",
        "file b not found",
    ]
    turn = events.turns()[0]
    assert (turn.channel, turn.producer, len(turn.results)) == ("soft", "tool_error", 3)


class _RepeatingIds:
    """A model of its own (no loopnb helper in between) that gives two calls one id."""

    name = "repeater"

    def __init__(self) -> None:
        self.asked = 0

    async def complete(self, messages, tools):
        self.asked += 1
        if self.asked > 1:
            return ModelReply(text="done")
        calls = (
            ToolCall("read_file", {"path": "a"}, id="c"),
            ToolCall("read_file", {"path": "src/main.rs"}, id="c"),
        )
        return ModelReply(tool_calls=calls)


def test_calls_sharing_an_id_are_told_apart_so_each_result_answers_one_call():
    events = Events()
    result = Engine(_RepeatingIds(), tools=[read_file], observers=[events]).run("t")
    calls = events.turns()[0].reply.tool_calls
    assert [c.id for c in calls] == ["c", "c_1"]
    assert [(r.call_id, r.content) for r in result.tool_results] == [
        ("c", "file a not found"),
        ("c_1", "fn main() {}"),
    ]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (["", ""], ["t_0", "t_1"]),
        (["x", "x", "x"], ["x", "x_1", "x_2"]),
        (["", "t_0"], ["t_0", "t_0_1"]),
        (["a", "b"], ["a", "b"]),
    ],
)
def test_every_call_gets_an_id_of_its_own(given, expected):
    reply = ModelReply(tool_calls=tuple(ToolCall("read_file", {}, id=i) for i in given))
    assert [c.id for c in with_call_ids(reply, "t").tool_calls] == expected


def test_stepping_a_run_a_turn_at_a_time():
    steps = Engine(ScriptedModel(SCRIPT), tools=[read_file]).iter("task")
    first = steps.step()
    assert (first.turn, first.channel, first.producer) == (1, "soft", "tool_error")
    assert steps.result is None
    rest = list(steps)
    assert [t.channel for t in rest] == ["ok", "ok"]
    assert steps.result.output == "It prints nothing."
    with pytest.raises(StopIteration):
        steps.step()


def test_stepping_works_inside_a_running_loop():
    async def cell():
        steps = Engine(ScriptedModel(SCRIPT), tools=[read_file]).iter("task")
        return steps.run_to_end()

    assert asyncio.run(cell()).output == "It prints nothing."


def test_closing_a_stepped_run_ends_it_as_cancelled_and_reports_it():
    events = Events()
    steps = Engine(ScriptedModel(SCRIPT), tools=[read_file], observers=[events]).iter("task")
    steps.step()
    steps.close()
    assert isinstance(steps.error, Cancelled)
    assert events[-1].kind == "run_finished" and events[-1].error == "Cancelled"


def test_a_stepped_run_that_ends_hard_raises_on_step():
    steps = Engine(ScriptedModel(SCRIPT[:1]), tools=[read_file]).iter("task")
    steps.step()
    with pytest.raises(FallbackExhausted):
        steps.step()
    assert isinstance(steps.error, FallbackExhausted)


def test_cancel_from_another_thread():
    token = CancelToken()

    def model(messages, tools):
        if sum(1 for m in messages if m.role == "tool") == 2:
            stopper = threading.Thread(target=token.cancel, args=("stopped from a button",))
            stopper.start()
            stopper.join()
        return ToolCall("read_file", {"path": "src/main.rs"})

    with pytest.raises(Cancelled, match="stopped from a button") as info:
        Engine(FunctionModel(model), tools=[read_file]).run("t", cancel=token)
    assert len(info.value.run.tool_results) == 2


def _hung_tool(started: threading.Event):
    @tool
    async def fetch(url: str) -> str:
        """Fetch a page from a server that never answers (no timeout is set)."""
        started.set()
        await asyncio.Event().wait()
        return "never"

    return fetch


def _fire_when(started: threading.Event, token: CancelToken) -> threading.Thread:
    def fire() -> None:
        assert started.wait(10), "the tool never started"
        token.cancel("stopped from a button")

    stopper = threading.Thread(target=fire)
    stopper.start()
    return stopper


def test_cancel_wakes_a_run_waiting_on_a_hung_async_tool():
    token, started = CancelToken(), threading.Event()
    model = ScriptedModel(
        [ToolCall("read_file", {"path": "src/main.rs"}), ToolCall("fetch", {"url": "x"}), "done"]
    )
    stopper = _fire_when(started, token)
    with pytest.raises(Cancelled, match="stopped from a button") as info:
        Engine(model, tools=[read_file, _hung_tool(started)]).run("t", cancel=token)
    stopper.join()
    assert [r.content for r in info.value.run.tool_results] == ["fn main() {}"]  # the hung turn is dropped


def test_cancel_wakes_a_stepped_run_and_a_model_that_never_answers():
    token, started = CancelToken(), threading.Event()

    async def silent(messages, tools):
        started.set()
        await asyncio.Event().wait()

    steps = Engine(FunctionModel(silent), tools=[read_file]).iter("t", cancel=token)
    stopper = _fire_when(started, token)
    with pytest.raises(Cancelled, match="stopped from a button"):
        steps.step()
    stopper.join()
    assert steps.done


def test_arun_cancelled_by_its_token_leaves_the_callers_task_uncancelled():
    async def main():
        token, started = CancelToken(), threading.Event()
        engine = Engine(ScriptedModel([ToolCall("fetch", {"url": "x"}), "done"]), tools=[_hung_tool(started)])
        stopper = _fire_when(started, token)
        with pytest.raises(Cancelled):
            await engine.arun("t", cancel=token)
        await asyncio.to_thread(stopper.join)
        assert asyncio.current_task().cancelling() == 0
        await asyncio.sleep(0)  # the caller's task goes on awaiting: no cancellation is left over
        return "the caller went on"

    assert asyncio.run(main()) == "the caller went on"


def test_a_token_fired_after_the_run_ended_changes_nothing():
    token = CancelToken()
    result = Engine(ScriptedModel(["done"]), tools=[read_file]).run("t", cancel=token)
    token.cancel("too late")
    assert result.output == "done"
    woken = []
    token.on_cancel(lambda: woken.append(1))  # an already fired token wakes at once
    assert woken == [1]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_during_a_run_becomes_cancelled_in_a_real_process(tmp_path):
    script = tmp_path / "interrupt.py"
    script.write_text(
        textwrap.dedent(
            """
            import os, signal, sys, time
            from loopnb import Cancelled, Engine, FunctionModel, ToolCall, tool

            @tool
            def work(n: int) -> str:
                "Works for a while; the 3rd call gets Ctrl-C."
                if n == 2:
                    os.kill(os.getpid(), signal.SIGINT)
                    time.sleep(5)
                return f"step {n}"

            def model(messages, tools):
                n = sum(1 for m in messages if m.role == "tool")
                return ToolCall("work", {"n": n})

            try:
                Engine(FunctionModel(model), tools=[work]).run("go")
            except Cancelled as err:
                print("CANCELLED", len(err.run.tool_results))
                sys.exit(0)
            sys.exit(1)
            """
        )
    )
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "CANCELLED 2"


def test_a_failing_observer_is_detached_with_a_warning_and_the_run_goes_on():
    seen = []

    def broken(event):
        seen.append(event.kind)
        raise RuntimeError("observer bug")

    events = Events()
    engine = Engine(ScriptedModel(SCRIPT), tools=[read_file], observers=[broken, events])
    with pytest.warns(LoopnbWarning, match="observer bug"):
        result = engine.run("task")
    assert result.output == "It prints nothing."
    assert seen == ["run_started"]
    assert events[-1].kind == "run_finished"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        engine.chain.models[0].reset()
        engine.run("again")  # detached for good: no second warning


def test_subscribe_returns_an_unsubscribe_function():
    events = Events()
    engine = Engine(ScriptedModel(SCRIPT), tools=[read_file])
    unsubscribe = engine.subscribe(events)
    engine.run("task")
    count = len(events)
    unsubscribe()
    engine.chain.models[0].reset()
    engine.run("task")
    assert len(events) == count > 0


def test_events_round_trip_through_the_json_adapter():
    events = Events()
    Engine(ScriptedModel(SCRIPT), tools=[read_file], observers=[events]).run("task")
    for event in events:
        back = EVENT_ADAPTER.validate_json(EVENT_ADAPTER.dump_json(event))
        assert back == event
    seqs = [e.seq for e in events]
    assert seqs == list(range(len(events)))


def test_events_are_plain_slotted_dataclasses_that_pickle_and_copy():
    events = Events()
    Engine(ScriptedModel(SCRIPT), tools=[read_file], observers=[events]).run("task")
    for event in events:
        assert dataclasses.is_dataclass(event) and not hasattr(event, "__dict__")
        assert copy.copy(event) == event and pickle.loads(pickle.dumps(event)) == event
        assert event.kind == dataclasses.fields(event)[-1].default  # the tag is the last field


# -- bad input -----------------------------------------------------------------------------


def test_two_tools_with_one_name_are_refused():
    def read_file(path: str) -> str:
        return path

    with pytest.raises(ValueError, match="two tools are named 'read_file'"):
        Engine(ScriptedModel(["x"]), tools=[tool(read_file), tool(read_file)])


def test_a_tool_without_type_hints_is_refused():
    def read(path):
        return path

    with pytest.raises(TypeError, match="parameter 'path' has no type hint"):
        tool(read)


def test_a_tool_with_star_args_is_refused():
    def read(*paths: str) -> str:
        return ""

    with pytest.raises(TypeError, match=r"\*args/\*\*kwargs"):
        tool(read)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"timeout": -1}, "timeout must be seconds > 0"),
        ({"timeout": 0}, "timeout must be seconds > 0"),
        ({"max_turns": 0}, "max_turns must be an int >= 1"),
        ({"recovery": object()}, "recovery must have decide"),
        ({"done": "yes"}, "done must be a callable"),
        ({"breakers": {"nope": None}}, "not a tool"),
        ({"breakers": 3}, "breakers must be a CircuitBreaker"),
    ],
)
def test_bad_engine_options_are_refused_at_construction(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        Engine(ScriptedModel(["x"]), tools=[read_file], **kwargs)


def test_a_bad_script_step_is_refused_naming_the_step():
    with pytest.raises(TypeError, match="ScriptedModel step 1: expected a ToolCall"):
        ScriptedModel(["fine", 42])


def test_a_function_model_returning_nonsense_is_a_model_failure():
    with pytest.raises(FallbackExhausted, match="expected a ToolCall"):
        Engine(FunctionModel(lambda m, t: 42), clock=FakeClock()).run("t")


# -- the layering (the public API: tests/test_public_api.py) -------------------------------------------


def test_the_engine_never_imports_the_notebook_stack():
    code = (
        "import sys, json, loopnb.engine, loopnb;"
        "print(json.dumps([m for m in ('pandas','ipywidgets','plotly','IPython') if m in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def test_a_sigint_handler_is_left_as_it_was():
    before = signal.getsignal(signal.SIGINT)
    Engine(ScriptedModel(SCRIPT), tools=[read_file]).run("task")
    assert signal.getsignal(signal.SIGINT) is before
    assert os.getpid()
