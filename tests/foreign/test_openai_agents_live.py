"""The openai-agents reader on runs made here, with the real Agents SDK (a test dependency).

The samples run on the SDK's own models through a mock transport (``openai_agents_samples``);
``JsonlProcessor`` writes the file ``loopnb.load`` reads, and the same spans, as objects, read
through ``from_openai_agents``. The SDK's ``agents.testing.ScriptedModel`` (whose generation
spans keep nothing) and a run with ``trace_include_sensitive_data=False`` read too.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, default_tool_error_function, set_trace_processors
from agents.usage import Usage

import loopnb
from loopnb.integrations.openai_agents import JsonlProcessor
from tests.foreign.frameworks import newer_than
from tests.foreign.openai_agents_samples import NEWER, Collect, read_file, run_samples
from tests.foreign.test_openai_agents import DISAGREEMENTS, TURNS, S, _value


@pytest.fixture(autouse=True)
def _quiet():
    """The SDK logs every tool failure the samples provoke, with a traceback."""
    logging.getLogger("openai.agents").disabled = True
    yield
    logging.getLogger("openai.agents").disabled = False
    set_trace_processors([])


def what_the_sdk_did(shape: str) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The golden's turns (run, turn, channel, producer, tools, source_status) and disagreements,
    as this SDK ran the samples. openai-agents 0.2 (``NEWER`` false) has no tool timeouts or
    ``tool_not_found_behavior``, so ``recovers`` calls neither the slow tool nor the unknown one
    there; it makes no ``turn`` spans, so a turn's own status is unsaid; and its default failure
    text names the error when the newest's says only "An error occurred". Its ``response`` spans
    keep no output, so on that shape the unknown tool's call is named only in the run's error."""
    turns = [(*row[:5], S + row[6]) for row in TURNS]
    disagreements = [(run, turn, reason) for run, turn, _, _, reason in DISAGREEMENTS]
    if not NEWER:
        turn_said = {S + "ok", S + "error"}
        turns = [(*row[:5], None if row[5] in turn_said else row[5]) for row in turns]
        turns = [(*row[:4], "read_file", row[5]) if row[:2] == ("recovers", 3) else row for row in turns]
        turns = [
            ("recovers", 4, "ok", None, "read_file", None) if row[:2] == ("recovers", 4) else row
            for row in turns
        ]
        if shape == "responses":
            turns = [(*row[:4], None, row[5]) if row[0] == "unknown-tool" else row for row in turns]
        disagreements = [row for row in disagreements if row[:2] not in (("recovers", 4),)]
        disagreements = [row for row in disagreements if row != ("recovers", 3, "missing_tool_record")]
    if "boom" in default_tool_error_function(None, RuntimeError("boom")):  # type: ignore[arg-type]
        disagreements = [row for row in disagreements if row[2] != "error_text_names_nothing"]
    return turns, disagreements


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
        "model-error": "InternalServerError",
    }
    rec = loopnb.load(path)
    started = {e.run_id: e.settings for e in rec.event_objects if e.kind == "run_started"}
    # openai-agents 0.2 hands the next processors a span of the previous samples' last trace (its
    # guardrail's, ended late): a run of a trace this file never saw begin, named by no workflow
    leaked = {run for run, settings in started.items() if "workflow_name" not in settings}
    assert (not leaked or not NEWER) and len(leaked) <= 1
    names = {run: settings["workflow_name"] for run, settings in started.items() if run not in leaked}
    got = [
        (names[r.run_id], r.turn, r.channel, _value(r.producer), _value(r.tools), _value(r.source_status))
        for r in rec.turns.itertuples()
        if r.run_id not in leaked
    ]
    turns, disagreements = what_the_sdk_did(shape)
    assert got == turns
    rows = loopnb.audit(rec).disagreements()
    assert [(names[r.run_id], r.turn, r.reason) for r in rows.itertuples() if r.run_id not in leaked] == (
        disagreements
    )
    same = loopnb.from_openai_agents(collected.items)  # the Span and Trace objects themselves
    assert same.turns.drop(columns=["seq"]).equals(rec.turns.drop(columns=["seq"]))


def scripted() -> tuple[Any, Any, Any]:
    """The SDK's ``agents.testing`` (``ScriptedModel``, ``assistant_message``, ``function_call``);
    openai-agents 0.2 has none, and its lane skips the tests that need it, saying so."""
    testing = newer_than("openai-agents-0.2", "agents.testing", "agents.testing")
    return testing.ScriptedModel, testing.assistant_message, testing.function_call


def test_the_sdks_scripted_model_reads_with_calls_from_the_function_spans():
    ScriptedModel, assistant_message, function_call = scripted()
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
    ScriptedModel, assistant_message, function_call = scripted()
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
