"""NotebookRunner: blocking runs, hard errors, interrupts, background runs driven by the buttons."""

from __future__ import annotations

import _thread
import asyncio
import threading
import time
import traceback

import pytest

from loopnb import (
    Cancelled,
    CancelToken,
    Engine,
    FakeClock,
    LoopDetected,
    ScriptedModel,
    ToolCall,
    load,
    tool,
)
from loopnb.notebook import NotebookRunner
from loopnb.record import Recorder
from tests.notebook import scenarios as S
from tests.notebook.panes import marks


def test_run_returns_the_result_and_records_every_turn(tmp_path):
    engine, task = S.typo()
    runner = NotebookRunner(engine)
    result = runner.run(task)
    assert result.output == "src/main.rs defines main()"
    assert list(runner.turns["channel"]) == ["soft", "ok", "ok"]
    assert runner.events["kind"].iloc[0] == "run_started"
    assert runner.view is not None and runner.view.finished
    assert runner.view.state.run.phase == "ok"
    saved = runner.save(tmp_path / "run.jsonl")
    assert len(load(saved).turns) == 3


def test_hard_error_is_shown_then_raised():
    engine, task = S.looping()
    runner = NotebookRunner(engine)
    with pytest.raises(LoopDetected) as info:
        runner.run(task)
    assert info.value.run is not None
    view = runner.view
    assert view.finished and "LoopDetected" in view.status.value
    assert marks(view)["hard"] == (6,)
    assert list(runner.turns["channel"])[-1] == "hard"


def test_hard_error_returned_when_asked():
    engine, task = S.exhausted()
    runner = NotebookRunner(engine)
    err = runner.run(task, raise_hard=False)
    assert type(err).__name__ == "ToolRecoveryExhausted"
    assert runner.view.state.gauge.at_wall


def _clean(err: BaseException) -> bool:
    """No RuntimeError anywhere in the error's chain, and nothing chained in its printed traceback."""
    seen, item = set(), err
    while item is not None and id(item) not in seen:
        if isinstance(item, RuntimeError):
            return False
        seen.add(id(item))
        item = item.__cause__ or item.__context__
    return "During handling" not in "".join(traceback.format_exception(err))


def test_interrupt_ends_the_run_as_cancelled_visibly():
    @tool
    def slow(i: int) -> str:
        """Interrupts the main thread on its third call, like the kernel's stop button."""
        if i == 3:
            _thread.interrupt_main()
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:  # the interrupt lands here, in the main thread
                pass
        return "ok"

    model = ScriptedModel([ToolCall("slow", {"i": i}) for i in range(1, 6)] + ["done"])
    runner = NotebookRunner(Engine(model, [slow], clock=FakeClock()))
    err = runner.run("go", raise_hard=False)
    assert isinstance(err, Cancelled) and "interrupt" in err.message
    assert "Cancelled" in runner.view.status.value and runner.view.state.run.phase == "hard"
    assert list(runner.turns["producer"])[-1] == "cancelled"
    assert _clean(err)


def test_arun():
    engine, task = S.typo()
    runner = NotebookRunner(engine)
    result = asyncio.run(runner.arun(task))
    assert result.turns == 3 and runner.view.state.run.phase == "ok"
    engine2, task2 = S.looping()
    runner2 = NotebookRunner(engine2)
    err = asyncio.run(runner2.arun(task2, raise_hard=False))
    assert isinstance(err, LoopDetected) and runner2.view.finished


def test_without_a_view_and_with_a_given_recorder(tmp_path):
    recorder = Recorder(tmp_path / "stream.jsonl")
    engine, task = S.typo()
    runner = NotebookRunner(engine, recorder=recorder, view=False)
    runner.run(task)
    assert runner.view is None
    recorder.close()
    assert len(load(tmp_path / "stream.jsonl").turns) == 3


def test_runs_accumulate_and_the_runner_does_not_stay_subscribed():
    engine, task = S.typo()
    runner = NotebookRunner(engine)
    runner.run(task)
    engine.chain.models[0].reset()
    engine.run(task)  # not through the runner: not recorded, not drawn
    engine.chain.models[0].reset()
    runner.run(task)
    assert runner.turns["run_id"].nunique() == 2 and len(runner.turns) == 6
    assert len(runner.recording().run_ids) == 2


def test_runner_needs_an_engine():
    with pytest.raises(TypeError, match="Engine"):
        NotebookRunner("not an engine")  # type: ignore[arg-type]


def wait_for(predicate, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.002)
    return True


def test_buttons_reach_a_running_background_run():
    engine, task = S.endless()
    runner = NotebookRunner(engine)
    handle = runner.start(task, paused=True)
    view = runner.view
    assert set(view.buttons) == {"Pause", "Step", "Resume", "Stop"}
    assert not handle.done and handle.turns == 0 and "paused" in view.status.value

    view.buttons["Step"].click()
    assert wait_for(lambda: handle.turns == 1)
    time.sleep(0.05)
    assert handle.turns == 1  # paused again after one turn
    assert wait_for(lambda: "paused after turn 1" in view.status.value)

    view.buttons["Resume"].click()
    assert wait_for(lambda: handle.turns >= 20)
    view.buttons["Pause"].click()
    assert wait_for(lambda: "paused after turn" in view.status.value)
    held = handle.turns
    time.sleep(0.05)
    assert handle.turns == held

    view.buttons["Stop"].click()
    assert handle.wait(10)
    assert isinstance(handle.error, Cancelled) and handle.error.message == "stopped from the live view"
    assert (
        view.finished
        and "Cancelled" in view.status.value
        and "stopped from the live view" in view.status.value
    )
    assert view.state.run.phase == "hard" and view.state.lit == (
        "failed-adapt",
        "adapt-hard",
        "hard-finalize",
    )
    assert list(runner.turns["channel"])[-1] == "hard"
    assert len(runner.turns) == held + 1


def test_stop_while_running_and_a_run_that_finishes_on_its_own():
    engine, task = S.endless()
    runner = NotebookRunner(engine)
    handle = runner.start(task)
    assert wait_for(lambda: handle.turns >= 5)
    handle.stop()
    assert handle.wait(10) and isinstance(handle.error, Cancelled)

    engine2, task2 = S.typo()
    runner2 = NotebookRunner(engine2)
    handle2 = runner2.start(task2)
    assert handle2.wait(10)
    assert handle2.result is not None and handle2.result.turns == 3 and handle2.error is None
    assert runner2.view.state.run.phase == "ok" and "finished" in runner2.view.status.value


def test_background_hard_error_is_kept():
    engine, task = S.looping()
    runner = NotebookRunner(engine, view=False)
    handle = runner.start(task)
    assert handle.wait(10) and isinstance(handle.error, LoopDetected) and handle.result is None
    assert repr(handle).startswith("BackgroundRun(done")


def test_cancel_token_given_to_run_is_used():
    engine, task = S.endless()
    token = CancelToken()
    token.cancel("before it began")
    runner = NotebookRunner(engine)
    err = runner.run(task, cancel=token, raise_hard=False)
    assert isinstance(err, Cancelled) and "before it began" in runner.view.status.value


def test_interrupt_inside_a_running_loop_as_in_a_kernel():
    """In a kernel the cell runs inside an event loop and SIGINT raises KeyboardInterrupt."""
    import os
    import signal

    token = CancelToken()
    fired = threading.Event()
    token.on_cancel(fired.set)

    @tool
    def press(i: int) -> str:
        """Sends SIGINT to this process on its second call, as the kernel's stop button does, and
        waits for it to reach the run's token."""
        if i == 2:
            os.kill(os.getpid(), signal.SIGINT)
            assert fired.wait(10), "the interrupt never fired the run's token"
        return "ok"

    model = ScriptedModel([ToolCall("press", {"i": i}) for i in range(1, 6)] + ["done"])
    runner = NotebookRunner(Engine(model, [press], clock=FakeClock()))

    async def cell():
        previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # what ipykernel does
        try:
            runner.run("go", cancel=token)
        except Cancelled as err:
            return err
        finally:
            signal.signal(signal.SIGINT, previous)

    err = asyncio.run(cell())
    assert isinstance(err, Cancelled) and "interrupt" in err.message
    assert "Cancelled" in runner.view.status.value
    assert _clean(err)  # the cell shows ``Cancelled: interrupted ...``, with no chained traceback
