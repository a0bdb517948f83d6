"""An unchanged what-if replays the recorded run exactly: the key correctness test of ``what_if``.

Each run is replayed with no change, its tools answered from the recording, its model the recorded
replies; turn by turn the replay must read as the recording does: the channel, the producer, the
error text, and each result, note and hard ending the model read.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

import loopnb
from loopnb import (
    CancelToken,
    CircuitBreaker,
    ContextBudget,
    ConvergenceDetector,
    Engine,
    FakeClock,
    FunctionModel,
    LoopDetector,
    ModelUnavailable,
    RetryWithBackoff,
    ScriptedModel,
    ToolCall,
    ToolError,
    scenarios,
    tool,
)
from loopnb.analysis._whatif_report import read_of
from loopnb.engine._turns import turns_of
from tests.record.conftest import SOFT_OUTCOMES, context_run, hard_run, run_engine, script_run, typo_run

COLUMNS = ["turn", "channel", "producer", "error_text", "tools", "n_calls", "n_errors", "dropped", "notes"]


def rows(recording: loopnb.Recording) -> list[list[object]]:
    """The turns frame's ``COLUMNS``, row by row (missing values as ``None``)."""
    frame = recording.turns[COLUMNS]
    return [[None if pd.isna(v) else v for v in row] for row in frame.itertuples(index=False)]


def assert_replayed(events: list[Any]) -> loopnb.WhatIf:
    """The unchanged replay of ``events`` reads every turn as recorded, and says so."""
    comparison = loopnb.what_if(events)
    found = comparison.what_if
    assert found.turn is None and found.unreproduced == (), found.text()
    recorded, replayed = turns_of(events), turns_of(found.replay.event_objects)
    assert [t.turn for t in replayed] == [t.turn for t in recorded]
    for was, now in zip(recorded, replayed, strict=True):
        assert read_of(now) == read_of(was), f"turn {was.turn}"
        assert (now.channel, now.producer, now.error_text) == (was.channel, was.producer, was.error_text)
    assert rows(found.replay) == rows(found.original)
    assert comparison.first_divergence is None
    saved = found.saved
    assert saved is not None and (saved.turns, saved.calls, saved.executions) == (0, 0, 0)
    return found


@pytest.mark.parametrize("name", scenarios.names())
def test_every_built_in_scenario_replays_turn_for_turn(name: str) -> None:
    outcome = scenarios.get(name).run()
    found = assert_replayed(list(outcome.events))
    assert found.ended == outcome.ending


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("name", ["mistyped_path", "invalid_arguments", "stubborn_loop", "recovery_success"])
def test_scenarios_of_other_seeds_replay_too(name: str, seed: int) -> None:
    assert_replayed(list(scenarios.get(name).run(seed=seed).events))


def test_a_loaded_recording_replays_as_the_run_did(tmp_path: Any) -> None:
    recorder = loopnb.Recorder()
    scenarios.get("flaky_tool_breaker").run(observers=[recorder])
    recorder.save(tmp_path / "flaky.jsonl")
    found = assert_replayed(loopnb.load(tmp_path / "flaky.jsonl").event_objects)
    assert found.ended == "ok"


def test_a_recorder_is_taken_as_it_is() -> None:
    recorder = loopnb.Recorder()
    scenarios.get("vague_error").run(observers=[recorder])
    assert loopnb.what_if(recorder).what_if.unreproduced == ()


@pytest.mark.parametrize("run", [typo_run, hard_run, context_run], ids=["typo", "hard", "context"])
def test_the_recording_tests_shared_runs_replay(run: Any) -> None:
    assert_replayed(run().events)


@pytest.mark.parametrize("retries", [0, 1])
@pytest.mark.parametrize("outcome", SOFT_OUTCOMES)
def test_each_soft_row_replays_with_and_without_recovery(outcome: str, retries: int) -> None:
    assert_replayed(script_run([("ok", 0), (outcome, retries), (outcome, retries)]).events)


HARD = ["cancelled", "loop_detected", "user_input_required", "tool_recovery_exhausted", "fallback_exhausted"]


@pytest.mark.parametrize("end", HARD)
def test_each_hard_ending_replays(end: str) -> None:
    found = assert_replayed(script_run([("tool_error", 0), ("ok", 0)], end).events)
    assert found.ended == end


def test_back_off_breakers_and_compaction_replay_on_the_recorded_clock() -> None:
    """Recovery delays, a breaker template with a half-open trial, a model failing transiently
    behind its back-off, compaction, a convergence warning: all replayed as they went."""
    clock = FakeClock()
    failures = {"n": 0}

    @tool
    def status(service: str) -> str:
        """A service's health."""
        failures["n"] += 1
        if failures["n"] <= 4:
            raise ToolError(f"{service}: 503, try later")
        return f"{service}: healthy " + "x" * 120

    @tool
    def wait(seconds: float) -> str:
        """Wait."""
        clock.advance(seconds)
        return "waited"

    steps: list[Any] = [
        ToolCall("status", {"service": "a"}),
        ModelUnavailable("HTTP 503", status=503),
        ToolCall("status", {"service": "a"}),
        ToolCall("wait", {"seconds": 40}),
        ToolCall("status", {"service": "a"}),
        ToolCall("status", {"service": "b"}),
        "all done",
        "all done, really",
        "all done, really!",
    ]
    engine = Engine(
        ScriptedModel(steps, name="model"),
        [status, wait],
        recovery=RetryWithBackoff(retries=1, on=["tool_error"]),
        breakers=CircuitBreaker(failure_threshold=2, cooldown=30.0),
        context=ContextBudget(max_tokens=120),
        done=lambda text: None if text.endswith("!") else "say it louder",
        convergence=ConvergenceDetector(threshold=0.8, window=2, action="warn"),
        clock=clock,
    )
    run = run_engine(engine)
    kinds = {e.kind for e in run.events}
    assert {"context_compacted", "breaker_transitioned", "model_failed", "recovery_decided"} <= kinds
    found = assert_replayed(run.events)
    assert found.ended == "ok"
    assert [t.latency_ms for t in turns_of(found.replay.event_objects)] == [
        t.latency_ms for t in turns_of(run.events)
    ]


def test_a_run_cancelled_before_the_model_answered_replays() -> None:
    token = CancelToken()
    model = ScriptedModel([ToolCall("read_file", {"path": "src/mian.rs"}), "never"])

    def stop_at_turn_2(event: Any) -> None:
        if event.kind == "turn_started" and event.turn == 2:
            token.cancel("the operator stopped it")

    from tests.record.conftest import read_file

    engine = Engine(model, [read_file], observers=[stop_at_turn_2], clock=FakeClock())
    run = run_engine(engine, cancel=token)
    assert turns_of(run.events)[-1].reply is None
    assert assert_replayed(run.events).ended == "cancelled"


def test_a_function_model_run_with_a_loop_detector_of_its_own_replays() -> None:
    calls = iter([ToolCall("lookup", {"key": "k"})] * 4 + ["gave up"])

    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        raise ToolError(f"no key {key}")

    engine = Engine(
        FunctionModel(lambda messages, tools: next(calls), name="fn"),
        [lookup],
        loop_detector=LoopDetector(warn_after=2, stop_after=9),
        max_turns=9,
        clock=FakeClock(),
    )
    assert assert_replayed(run_engine(engine).events).ended == "ok"
