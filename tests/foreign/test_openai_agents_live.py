"""The openai-agents reader on runs made here, with the real Agents SDK (a test dependency).

The samples run on the SDK's own models through a mock transport (``openai_agents_samples``);
``JsonlProcessor`` writes the file ``loopnb.load`` reads, and the same spans, as objects, read
through ``from_openai_agents``. The SDK's ``agents.testing.ScriptedModel`` (whose generation
spans keep nothing) and a run with ``trace_include_sensitive_data=False`` read too.
"""

from __future__ import annotations

import logging

import pytest
from agents import Agent, RunConfig, Runner, default_tool_error_function, set_trace_processors
from agents.testing import ScriptedModel, assistant_message, function_call
from agents.usage import Usage

import loopnb
from loopnb.integrations.openai_agents import JsonlProcessor
from tests.foreign.openai_agents_samples import Collect, read_file, run_samples
from tests.foreign.test_openai_agents import DISAGREEMENTS, TURNS, S, _names, _value


@pytest.fixture(autouse=True)
def _quiet():
    """The SDK logs every tool failure the samples provoke, with a traceback."""
    logging.getLogger("openai.agents").disabled = True
    yield
    logging.getLogger("openai.agents").disabled = False
    set_trace_processors([])


@pytest.mark.parametrize("shape", ["chat", "responses"])
def test_samples_saved_by_the_processor_read_turn_by_turn(tmp_path, shape):
    path = tmp_path / "traces.jsonl"
    collected = Collect()
    outcomes = run_samples(shape, [JsonlProcessor(path), collected])
    assert outcomes == {
        "recovers": "The notes say: ship on Friday.",
        "unknown-tool": "ModelBehaviorError",
        "crash": "UserError",
        "max-turns": "MaxTurnsExceeded",
        "guardrail": "InputGuardrailTripwireTriggered",
    }
    rec = loopnb.load(path)
    names = _names(rec)
    got = [
        (names[r.run_id], r.turn, r.channel, _value(r.producer), _value(r.tools), r.source_status)
        for r in rec.turns.itertuples()
    ]
    assert got == [(*row[:5], S + row[6]) for row in TURNS]
    rows = loopnb.audit(rec).disagreements()
    assert [(names[r.run_id], r.turn, r.reason) for r in rows.itertuples()] == [
        (run, turn, reason) for run, turn, _, _, reason in DISAGREEMENTS
    ]
    same = loopnb.from_openai_agents(collected.items)  # the Span and Trace objects themselves
    assert same.turns.drop(columns=["seq"]).equals(rec.turns.drop(columns=["seq"]))


def test_the_sdks_scripted_model_reads_with_calls_from_the_function_spans():
    collected = Collect()
    set_trace_processors([collected])
    model = ScriptedModel(
        [
            [function_call("read_file", {"path": "nots.txt"}, call_id="c1")],
            [function_call("read_file", {"path": "notes.txt"}, call_id="c2")],
            [assistant_message("ship on Friday")],
        ],
        emit_traces=True,
        default_usage=Usage(requests=1, input_tokens=7, output_tokens=3, total_tokens=10),
    )
    result = Runner.run_sync(Agent(name="a", model=model, tools=[read_file]), "notes?")
    assert result.final_output == "ship on Friday"
    rec = loopnb.from_openai_agents(collected.items)
    t = rec.turns
    assert list(t["channel"]) == ["soft", "ok", "ok"] and t["producer"].iloc[0] == "tool_error"
    # the SDK's fixed text, as the installed SDK words it
    assert t["error_text"].iloc[0] == default_tool_error_function(None, FileNotFoundError())
    assert list(t["input_tokens"]) == [7, 7, 7]
    assert t["model"].isna().all()  # its generation spans keep no model, input or output


def test_without_sensitive_data_the_trace_keeps_no_text_the_model_read():
    collected = Collect()
    set_trace_processors([collected])
    model = ScriptedModel(
        [[function_call("read_file", {"path": "nots.txt"}, call_id="c1")], [assistant_message("sorry")]],
        emit_traces=True,
    )
    config = RunConfig(trace_include_sensitive_data=False)
    Runner.run_sync(Agent(name="a", model=model, tools=[read_file]), "notes?", run_config=config)
    rec = loopnb.from_openai_agents(collected.items)
    first = rec.turns.iloc[0]
    assert first["channel"] == "soft" and first["producer"] == "tool_error"
    assert first["error_text"] == ""  # the fixed text reached the model; the span kept no output
    reasons = loopnb.audit(rec).disagreements()["reason"].tolist()
    assert reasons == ["soft_shown_as_hard", "error_text_names_nothing"]
