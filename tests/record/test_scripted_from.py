"""``scripted_from``: a recorded run's replies (and model failures) as a ``ScriptedModel``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import loopnb
from loopnb import (
    Engine,
    FakeClock,
    LoopnbWarning,
    ModelReply,
    ModelUnavailable,
    ScriptedModel,
    ToolCall,
    scenarios,
    scripted_from,
)
from loopnb.engine._messages import Transcript
from loopnb.engine._turns import turns_of
from tests.record.conftest import TASK, read_file, recorded, reply, run_engine, typo_run

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "foreign" / "pydantic-ai"


def played(model: ScriptedModel) -> list[ModelReply | BaseException]:
    """Every step of ``model``, in order, its exhaustion included."""
    steps: list[ModelReply | BaseException] = []
    while True:
        try:
            steps.append(asyncio.run(model.complete(Transcript([]), [])))
        except ModelUnavailable as exc:
            steps.append(exc)
            if "script exhausted" in str(exc):
                return steps


def replies(events: list[Any]) -> list[ModelReply]:
    return [e.reply for e in events if e.kind == "model_replied"]


def test_the_replies_come_back_as_recorded_ids_arguments_models_and_usage():
    clock = FakeClock()
    steps = [
        reply(ToolCall("read_file", {"path": "src/mian.rs"}, id="call-a"), text="let me look", usage=(12, 3)),
        reply(ToolCall("read_file", {"path": "src/main.rs"}, id="call-b"), usage=(20, 4)),
        ModelReply(text="It prints nothing.", usage=loopnb.Usage(input_tokens=30, output_tokens=5)),
    ]
    run = run_engine(Engine(ScriptedModel(steps, name="gpt-test"), [read_file], clock=clock))
    model = scripted_from(recorded(run))
    assert model.name == "gpt-test" and model.remaining == 3
    assert played(model)[:3] == replies(run.events)


def test_a_recording_becomes_a_regression_test():
    run = typo_run()
    again = run_engine(Engine(scripted_from(recorded(run)), [read_file], clock=FakeClock()))
    assert again.outcome is not None and getattr(again.outcome, "output", None) == "It prints nothing."
    was, now = turns_of(run.events), turns_of(again.events)
    assert [(t.channel, t.producer, t.error_text) for t in now] == [
        (t.channel, t.producer, t.error_text) for t in was
    ]
    assert replies(again.events) == replies(run.events)


def test_model_failures_come_back_as_the_exceptions_recorded():
    events = list(scenarios.get("fallback_chain").run().events)
    primary = played(scripted_from(events, model="primary"))
    assert [type(s).__name__ for s in primary] == ["ModelReply", "ModelUnavailable", "ModelUnavailable"]
    failed = primary[1]
    assert isinstance(failed, ModelUnavailable)
    assert (failed.message, failed.status) == ("HTTP 503 from the primary's server", 503)
    assert str(primary[2]) == "script exhausted after 2 steps"  # as the recorded script, 2 steps
    backup = played(scripted_from(events, model="backup"))
    assert isinstance(backup[0], ModelReply) and backup[0].tool_calls[0].arguments == {"path": "notes.txt"}
    assert isinstance(backup[1], ModelUnavailable) and backup[1].status is None
    with pytest.raises(ValueError, match="the run used no model 'tertiary'; it used primary, backup"):
        scripted_from(events, model="tertiary")


def test_a_spent_script_is_spent_again_after_as_many_steps():
    events = list(scenarios.get("recovery_ceiling").run().events)
    steps = played(scripted_from(events))
    assert len(steps) == 2 and str(steps[-1]) == "script exhausted after 1 steps"


def test_a_foreign_run_keeps_its_call_ids():
    rec = loopnb.load(GOLDEN / "recovered.json")
    model = scripted_from(rec)
    first = played(model)[0]
    assert isinstance(first, ModelReply)
    assert first.tool_calls[0].id == turns_of(rec.event_objects)[0].calls[0].id
    assert model.name == rec.turns["model"].iloc[0]


def test_a_turns_frame_gives_the_replies_without_their_arguments():
    rec = recorded(typo_run())
    with pytest.warns(LoopnbWarning, match="not the calls' arguments or ids"):
        model = scripted_from(rec.turns)
    steps = played(model)
    assert [s.tool_calls[0].name for s in steps[:2] if isinstance(s, ModelReply)] == ["read_file"] * 2
    assert all(c.arguments == {} for s in steps[:2] if isinstance(s, ModelReply) for c in s.tool_calls)
    last = steps[2]
    assert isinstance(last, ModelReply) and last.text == "It prints nothing."


def test_several_runs_need_a_run_and_other_things_are_refused():
    rec = recorded(typo_run("r1"), typo_run("r2"))
    with pytest.raises(ValueError, match=r"holds 2 runs \('r1', 'r2'\); pick one with run="):
        scripted_from(rec)
    assert scripted_from(rec, run="r2").remaining == 3
    with pytest.raises(ValueError, match="has no run 'r3'"):
        scripted_from(rec, run="r3")
    with pytest.raises(ValueError, match="holds 2 runs"):
        scripted_from(rec.turns)
    with pytest.raises(TypeError, match="scripted_from\\(\\) takes a Recording, a Recorder"):
        scripted_from("run.jsonl")
    with pytest.raises(ValueError, match="missing columns"):
        scripted_from(rec.events)


def test_the_scripted_model_runs_the_task_it_was_recorded_on():
    rec = recorded(typo_run())
    result = Engine(scripted_from(rec), [read_file], clock=FakeClock()).run(TASK)
    assert [r.is_error for r in result.tool_results] == [True, False]
