"""``LiveSpans`` reads each span once: what a turn costs does not grow with the run.

Each turn is written once, when it is final, from what the reader keeps (the next request's
messages, the tool spans not yet placed), and each request's input is read from where the
previous one's ended; the turns are still exactly ``loopnb.from_otel`` of every span.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pandas as pd
import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import UsageLimits

import loopnb
from loopnb.foreign import _otlp_genai as g
from loopnb.foreign import _otlp_messages as m
from loopnb.foreign._transcript import RunWriter
from loopnb.otel import LiveSpans
from tests.golden.foreign.make_otlp import call, say
from tests.otel.test_live import agent, traced


def _steps(turns: int) -> FunctionModel:
    """``turns - 1`` calls to ``read_file`` (every fifth a wrong path, retried), then an answer."""
    made = 0

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        nonlocal made
        made += 1
        if made >= turns:
            return say("read them all")
        return call("read_file", {"path": "nots.txt" if made % 5 == 0 else "notes.txt"}, f"c{made}")

    return FunctionModel(answer, model_name="scripted-model")


def _watched(turns: int, monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """What ``LiveSpans`` did while a ``turns``-turn run was watched (then checked against the trace)."""
    work: Counter[str] = Counter()
    role_of, semconv, turn = g.role_of, m._semconv, RunWriter.turn

    def counted_role(span: Any) -> Any:
        work["roles"] += 1
        return role_of(span)

    def counted_messages(raw: Any, *args: Any) -> Any:
        found = semconv(raw, *args)
        work["messages"] += len(found)
        return found

    def counted_turn(self: RunWriter, **kwargs: Any) -> Any:
        work["turns"] += 1
        return turn(self, **kwargs)

    live = LiveSpans()
    provider, memory = traced(live)
    with monkeypatch.context() as patch:
        patch.setattr(g, "role_of", counted_role)
        patch.setattr(m, "_semconv", counted_messages)
        patch.setattr(RunWriter, "turn", counted_turn)
        agent(provider, "reader", _steps(turns), retries=turns).run_sync(
            "read the notes", usage_limits=UsageLimits(request_limit=turns + 1)
        )
    spans = memory.get_finished_spans()
    work["spans"] = len(spans)
    whole = loopnb.from_otel(spans)
    assert len(live.turns) == turns and live.errors == []
    pd.testing.assert_frame_equal(live.turns, whole.turns)
    assert live.recorder.event_objects == list(whole.event_objects)
    assert (live.turns["channel"] == "soft").sum() == (turns - 1) // 5
    return work


def test_a_turn_costs_the_same_however_long_the_run(monkeypatch):
    short, long = _watched(20, monkeypatch), _watched(40, monkeypatch)
    for work in (short, long):
        assert work["turns"] == work["spans"] // 2  # each turn written once (a request and a tool span)
        assert work["roles"] == 2 * work["spans"]  # each span placed as it started and as it ended
    # each message read once: twice the turns, twice the messages (not four times, as when every
    # request's whole history was read again)
    assert long["messages"] <= 2 * short["messages"] + 2


def test_a_span_renamed_before_it_ends_is_read_as_it_ended():
    live = LiveSpans()
    provider, memory = traced(live)
    tracer = provider.get_tracer("renamed")
    run = {"gen_ai.operation.name": "invoke_agent"}
    inputs = '[{"role":"user","parts":[{"type":"text","content":"go"}]}]'
    asked = '[{"role":"assistant","parts":[{"type":"tool_call","id":"t1","name":"work","arguments":{}}]}]'
    answer = '[{"role":"assistant","parts":[{"type":"text","content":"done"}]}]'
    read = inputs[:-1] + ',{"role":"user","parts":[{"type":"tool_call_response","id":"t1","result":"ok"}]}]'
    with tracer.start_as_current_span("invoke_agent renamed", attributes=run):
        first = {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": inputs,
            "gen_ai.output.messages": asked,
        }
        with tracer.start_as_current_span("chat m", attributes=first):
            pass
        with tracer.start_as_current_span("step") as tool:  # a tool only once it has ended
            tool.update_name("execute_tool work")
            tool.set_attribute("gen_ai.tool.call.id", "t1")
        second = {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": read,
            "gen_ai.output.messages": answer,
        }
        with tracer.start_as_current_span("chat m", attributes=second):
            pass
    whole = loopnb.from_otel(memory.get_finished_spans())
    pd.testing.assert_frame_equal(live.turns, whole.turns)
    assert list(live.turns["tools"].fillna("")) == ["work", ""] and live.errors == []
    assert whole.events.loc[whole.events["kind"] == "tool_dispatched", "source_status"].tolist() == [
        "otlp:UNSET"
    ]
