"""The hand-built runs the frame tests rely on tell a turn's events as the engine does."""

from __future__ import annotations

import pandas as pd

from loopnb import Engine, ScriptedModel, ToolCall
from loopnb.engine.messages import Message
from loopnb.record import Recorder
from loopnb.record.synthetic import Call, RunBuilder

from .conftest import read_file, recorded


def test_a_synthetic_run_has_the_engine_s_events():
    rec = Recorder()
    model = ScriptedModel(
        [
            [ToolCall("read_file", {"path": "src/mian.rs"}), ToolCall("read_file", {"path": "nope"})],
            "It prints.",
        ]
    )
    Engine(model=model, tools=[read_file], observers=[rec], loop_detector=None).run("t")
    b = RunBuilder("x")
    b.tool_turn(
        Call("read_file", content="file src/mian.rs not found", error="tool_error"),
        Call("read_file", content="file nope not found", error="tool_error"),
    )
    b.final("It prints.")
    columns = ["kind", "turn", "tool", "producer", "text"]
    engine = rec.events[columns]
    synthetic = recorded(b, redact=None).events[columns]
    # the run's first event names the task, and the engine says more about the model
    pd.testing.assert_frame_equal(synthetic.iloc[1:], engine.iloc[1:])


def test_a_synthetic_turn_reports_its_feedback_as_a_soft_error():
    b = RunBuilder("x")
    rejected = Message(
        role="user", content="answer rejected: cite it", is_error=True, producer="completion_rejected"
    )
    b.tool_turn(feedback=(rejected,), text="an answer")
    ev = recorded(b, redact=None).events
    soft = ev[ev["kind"].eq("soft_error_returned")]
    assert soft[["producer", "text"]].astype(object).values.tolist() == [
        ["completion_rejected", "answer rejected: cite it"]
    ]
    assert ev.loc[ev["kind"].eq("turn_finished"), "text"].tolist() == ["answer rejected: cite it"]
