"""NotebookRunner: one run at a time, a task that is not a str, saving before any run and over a file."""

from __future__ import annotations

import asyncio

import pytest

from loopnb import Engine, FakeClock, ScriptedModel, ToolCall, load, tool
from loopnb.notebook import LiveView, NotebookRunner
from tests.notebook import scenarios as S


def test_a_second_run_while_a_background_run_goes_is_refused():
    engine, task = S.endless()
    runner = NotebookRunner(engine)
    first = runner.start(task, paused=True)
    view = runner.view
    with pytest.raises(RuntimeError, match=r"background run is still going \(BackgroundRun\(paused"):
        runner.start(task)
    with pytest.raises(RuntimeError, match=r"NotebookRunner\.run: a background run is still going"):
        runner.run(task)
    with pytest.raises(RuntimeError, match=r"runner\.background\.stop\(\)"):
        asyncio.run(runner.arun(task))
    assert runner.view is view and runner.background is first  # the refused calls changed nothing
    assert first.turns == 0 and len(runner.turns) == 0
    first.stop()
    assert first.wait(10)

    engine2, task2 = S.typo()
    runner.engine = engine2  # over: the runner takes another run
    result = runner.run(task2)
    assert result.turns == 3 and runner.view is not view


def test_two_aruns_at_once_are_refused():
    gate: dict[str, asyncio.Event] = {}

    @tool
    async def hold() -> str:
        """Waits until the test lets it go."""
        await gate["go"].wait()
        return "held"

    runner = NotebookRunner(Engine(ScriptedModel([ToolCall("hold", {}), "done"]), [hold], clock=FakeClock()))

    async def cell():
        gate["go"] = asyncio.Event()
        first = asyncio.ensure_future(runner.arun("one"))
        await asyncio.sleep(0)  # the first run is now waiting inside its tool
        with pytest.raises(RuntimeError, match="another run of this runner is still going"):
            await runner.arun("two")
        gate["go"].set()
        return await first

    result = asyncio.run(cell())
    assert result.output == "done" and runner.turns["run_id"].nunique() == 1
    runner.engine = S.typo()[0]
    assert runner.run("again").turns == 3


@pytest.mark.parametrize("call", ["run", "start"])
def test_a_task_that_is_not_a_str_is_refused_before_a_view_is_made(call):
    engine, _ = S.typo()
    runner = NotebookRunner(engine)
    with pytest.raises(TypeError, match=rf"NotebookRunner\.{call}: task must be a str, got int"):
        getattr(runner, call)(42)
    assert runner.view is None and runner.background is None


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_save_before_any_run_leaves_the_file_alone(tmp_path, suffix):
    engine, task = S.typo()
    earlier = NotebookRunner(engine)
    earlier.run(task)
    path = earlier.save(tmp_path / f"run{suffix}")
    before = path.read_bytes()

    fresh = NotebookRunner(S.typo()[0])
    with pytest.raises(ValueError, match=r"nothing recorded yet.*was not written; run a task first"):
        fresh.save(path)
    assert path.read_bytes() == before and len(load(path).turns) == 3
    with pytest.raises(ValueError, match="nothing recorded yet"):
        fresh.save(tmp_path / f"new{suffix}")
    assert not (tmp_path / f"new{suffix}").exists()


def test_save_replaces_an_existing_recording_and_checks_the_suffix(tmp_path):
    engine, task = S.typo()
    runner = NotebookRunner(engine, view=False)
    runner.run(task)
    path = runner.save(tmp_path / "run.jsonl")
    engine.chain.models[0].reset()
    runner.run(task)
    runner.save(path)
    assert len(load(path).run_ids) == 2
    with pytest.raises(ValueError, match=r"use a \.jsonl or \.parquet suffix"):
        runner.save(tmp_path / "run.json")


@pytest.mark.parametrize(
    ("max_fps", "error", "words"),
    [
        (0, ValueError, "must be > 0, got 0"),
        (float("nan"), ValueError, "must be > 0, got nan"),  # NaN would lift the bound on redraws
        ("10", TypeError, "must be a number of redraws per second, got '10'"),
        (True, TypeError, "must be a number of redraws per second, got True"),
    ],
)
def test_a_frame_rate_that_is_not_a_positive_number_is_refused_at_once(max_fps, error, words):
    engine, _ = S.typo()
    with pytest.raises(error, match=rf"NotebookRunner: max_fps {words}"):
        NotebookRunner(engine, max_fps=max_fps)
    with pytest.raises(error, match=rf"LiveView: max_fps {words}"):
        LiveView(max_fps=max_fps)
