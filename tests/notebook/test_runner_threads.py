"""NotebookRunner from two threads at once: exactly one run goes, the other is refused."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from loopnb import Engine, FakeClock, ScriptedModel, ToolCall, tool
from loopnb.notebook import NotebookRunner
from loopnb.record import Recorder

WAIT = 10.0  # seconds: a bound on waits for the other thread, which end at once when all is well


def _in_thread(fn: Any) -> tuple[threading.Thread, list[Any]]:
    outcome: list[Any] = []

    def work() -> None:
        try:
            outcome.append(fn())
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    return thread, outcome


def test_a_second_run_while_a_tool_of_the_first_waits_is_refused():
    entered, release = threading.Event(), threading.Event()

    @tool
    def gate() -> str:
        """Waits until the test lets it go."""
        entered.set()
        release.wait(WAIT)
        return "released"

    engine = Engine(ScriptedModel([ToolCall("gate"), "done"]), [gate], clock=FakeClock())
    runner = NotebookRunner(engine, recorder=Recorder(), view=False)
    first, outcome = _in_thread(lambda: runner.run("first"))
    assert entered.wait(WAIT)
    with pytest.raises(RuntimeError, match="another run of this runner is still going"):
        runner.run("second")
    release.set()
    first.join(WAIT)
    assert outcome[0].output == "done"
    assert list(runner.turns["channel"]) == ["ok", "ok"]


class _GatedEngine(Engine):
    """An engine whose first ``subscribe`` (the runner attaching its recorder) waits until the
    other thread's attempt is over: the window between the runner's check and its claim."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.attaching, self.other_done = threading.Event(), threading.Event()

    def subscribe(self, observer: Any) -> Any:
        if not self.attaching.is_set():
            self.attaching.set()
            self.other_done.wait(WAIT)
        return super().subscribe(observer)


def test_two_threads_starting_at_once_run_exactly_one():
    runs = []

    @tool
    def count() -> str:
        """Counts the runs that reach it."""
        runs.append(threading.current_thread().name)
        return "counted"

    engine = _GatedEngine(ScriptedModel([ToolCall("count"), "done"] * 2), [count], clock=FakeClock())
    runner = NotebookRunner(engine, recorder=Recorder(), view=False)
    first, first_outcome = _in_thread(lambda: runner.run("first"))

    def second() -> Any:
        try:
            return runner.run("second")
        finally:
            engine.other_done.set()

    assert engine.attaching.wait(WAIT)  # the first thread is past the runner's check
    other, second_outcome = _in_thread(second)
    other.join(WAIT)
    first.join(WAIT)
    outcomes = first_outcome + second_outcome
    refused = [o for o in outcomes if isinstance(o, RuntimeError)]
    assert len(refused) == 1 and "still going" in str(refused[0])
    assert len(runs) == 1  # one run reached the tool, not two at once
