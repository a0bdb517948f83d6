"""The Recorder: frames on demand, caching, several runs, listeners, and engine runs end to end."""

from __future__ import annotations

import pandas as pd
import pytest

from loopnb import (
    ContextBudget,
    ContextExceeded,
    Engine,
    LoopDetected,
    ScriptedModel,
    ToolCall,
    load,
    tool,
)
from loopnb.engine import LoopnbWarning, turns_of
from loopnb.record import Recorder
from loopnb.record._frames import turn_frame
from loopnb.record._rows import turn_row

from .conftest import engine_typo, hard_run, typo_run


def test_one_row_per_turn_and_per_event(recorder):
    assert len(recorder.turns) == 6
    assert len(recorder.events) == len(typo_run().events) + len(hard_run().events)
    assert recorder.run_ids == ["r1", "r2"]
    assert recorder.turns["run_id"].tolist() == ["r1"] * 3 + ["r2"] * 3
    assert recorder.turns["channel"].tolist() == ["soft", "ok", "ok", "soft", "soft", "hard"]


def test_frames_are_cached_until_a_new_event_arrives(recorder):
    first = recorder.turns
    assert recorder._frames["turns"][1] is recorder._frames["turns"][1]
    cached = recorder._frames["turns"][1]
    recorder.turns  # noqa: B018
    assert recorder._frames["turns"][1] is cached
    first["turn"] = 0  # mutating a returned frame does not touch the cache
    assert recorder.turns["turn"].tolist()[:3] == [1, 2, 3]
    for e in typo_run("r3").events:
        recorder(e)
    assert recorder._frames["turns"][1] is cached  # rebuilt lazily, on the next read
    assert len(recorder.turns) == 9
    assert recorder._frames["turns"][1] is not cached


def test_frames_equal_the_pure_row_functions(recorder):
    pd.testing.assert_frame_equal(
        recorder.turns, turn_frame([turn_row(t) for t in turns_of(recorder.event_objects)])
    )


def test_listener_gets_every_event_and_the_turn_row():
    rec = Recorder()
    seen = []
    unsubscribe = rec.subscribe(lambda event, row: seen.append((event.kind, row)))
    events = typo_run().events
    for e in events[:6]:
        rec(e)
    unsubscribe()
    for e in events[6:]:
        rec(e)
    assert [k for k, _ in seen] == [e.kind for e in events[:6]]
    rows = [row for k, row in seen if row is not None]
    assert events[5].kind == "turn_finished"
    assert len(rows) == 1 and rows[0] == turn_row(turns_of(events[:6])[0])
    assert all(row is None for k, row in seen if k != "turn_finished")


def test_a_failing_listener_is_detached_with_a_warning_and_recording_goes_on():
    rec = Recorder()
    calls = []

    def bad(event, row):
        calls.append(event.kind)
        raise RuntimeError("boom")

    good = []
    rec.subscribe(bad)
    rec.subscribe(lambda e, r: good.append(e.kind))
    events = typo_run().events
    with pytest.warns(LoopnbWarning, match="boom"):
        for e in events:
            rec(e)
    assert calls == ["run_started"]
    assert len(good) == len(events) and len(rec.turns) == 3


def test_engine_run_end_to_end():
    rec = Recorder()
    result = engine_typo(rec).run("What does src/main.rs do?")
    t = rec.turns
    assert result.output == "It prints nothing."
    assert t["channel"].tolist() == ["soft", "ok", "ok"]
    assert t["producer"].tolist()[0] == "tool_error"
    assert t["error_text"].tolist()[0] == "file src/mian.rs not found"
    assert t["tools"].tolist()[:2] == ["read_file", "read_file"]
    assert t["reply_text"].iloc[2] == "It prints nothing."
    assert (t["run_id"] == result.run_id).all()
    assert t["model"].tolist() == ["scripted"] * 3
    assert str(t["started_at"].dt.tz) == "UTC"


def test_one_recorder_several_engine_runs():
    rec = Recorder()
    a = engine_typo(rec).run("first")
    b = engine_typo(rec).run("second")
    assert rec.run_ids == [a.run_id, b.run_id]
    assert rec.turns.groupby("run_id").size().to_dict() == {a.run_id: 3, b.run_id: 3}


def test_engine_hard_loop_detected_row():
    rec = Recorder()
    bad = ToolCall("read_file", {"path": "src/mian.rs"})
    from .conftest import read_file

    engine = Engine(ScriptedModel([bad] * 7), tools=[read_file], observers=[rec])
    with pytest.raises(LoopDetected) as info:
        engine.run("task")
    t = rec.turns
    # failures 1-3 run, 4-5 refused before execution, the 6th ends the run
    assert t["channel"].tolist() == ["soft"] * 5 + ["hard"]
    assert t["producer"].tolist() == ["tool_error"] * 3 + ["loop_refusal"] * 2 + ["loop_detected"]
    assert t["dropped"].tolist() == [False] * 5 + [True]
    assert t["error_text"].iloc[-1] == info.value.message


def test_engine_context_exceeded_keeps_every_row_marked_dropped(tmp_path):
    @tool
    def dump() -> str:
        """Returns a lot of text."""
        return "x" * 4000

    rec = Recorder(tmp_path / "ctx.jsonl")
    engine = Engine(
        ScriptedModel([ToolCall("dump"), ToolCall("dump"), "x"]),
        tools=[dump],
        context=ContextBudget(max_tokens=200),
        observers=[rec],
    )
    with pytest.raises(ContextExceeded):
        engine.run("Summarise the dump.")
    t = rec.turns
    assert len(t) >= 2 and t["dropped"].all()
    assert t["channel"].iloc[-1] == "hard" and t["producer"].iloc[-1] == "context_exceeded"
    pd.testing.assert_frame_equal(load(tmp_path / "ctx.jsonl").turns, t)


def test_recorder_repr_and_len(recorder):
    assert "6 turns" in repr(recorder) and len(recorder) == len(recorder.event_objects)
