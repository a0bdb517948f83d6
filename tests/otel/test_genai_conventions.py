"""Errors as the OpenTelemetry GenAI conventions record them ("Recording Errors"): a failed tool
call is ERROR on its own span, the run that went on is not, a hard ending is ERROR on the run's
span; and a trace from anyone that follows the same rule reads as soft, with no disagreement."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

import loopnb
from loopnb.otel import CHANNEL, ERROR_TEXT, PRODUCER, Exporter
from loopnb.scenarios import SCENARIOS
from tests.golden.foreign.make_otlp import spec_json


def exported(name: str) -> list[Any]:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    exporter = Exporter(tracer_provider=provider)
    for event in SCENARIOS[name].run().events:
        exporter(event)
    return list(memory.get_finished_spans())


def of(spans: list[Any], operation: str) -> list[Any]:
    return [s for s in spans if s.attributes.get("gen_ai.operation.name") == operation]


def test_a_recovered_run_has_one_failed_tool_span_and_a_run_span_that_is_not_an_error() -> None:
    spans = exported("mistyped_path")
    failed = [s for s in spans if s.status.status_code is StatusCode.ERROR]
    assert len(failed) == 1
    (tool,) = failed
    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool.attributes["error.type"] == "tool_error"
    assert tool.attributes[CHANNEL] == "soft" and "not found" in tool.attributes[ERROR_TEXT]
    (run,) = of(spans, "invoke_agent")
    assert run.status.status_code is StatusCode.UNSET and "error.type" not in run.attributes
    assert run.attributes[CHANNEL] == "ok"


def test_a_stubborn_run_is_an_error_on_its_run_span_named_by_its_loop_error() -> None:
    spans = exported("stubborn_loop")
    (run,) = of(spans, "invoke_agent")
    assert run.status.status_code is StatusCode.ERROR
    assert run.attributes["error.type"] == "LoopDetected" and run.attributes[CHANNEL] == "hard"
    refused = [s for s in of(spans, "execute_tool") if s.attributes.get("error.type") == "loop_refusal"]
    assert refused and all(s.status.status_code is StatusCode.ERROR for s in refused)


@pytest.mark.parametrize("name", ["mistyped_path", "stubborn_loop"])
def test_both_read_back_as_they_ran_with_no_soft_shown_as_hard(name: str, tmp_path: Path) -> None:
    path = tmp_path / f"{name}.otlp.json"
    path.write_text(json.dumps(spec_json(exported(name))), encoding="utf-8")
    read = loopnb.load(path, format="otlp")
    ran = SCENARIOS[name].run()
    assert read.turns["channel"].tolist() == [t.channel for t in ran.turns]
    assert "soft_shown_as_hard" not in set(loopnb.audit(read).disagreements()["reason"])


def foreign(name: str, *, agent: bool) -> dict[str, Any]:
    """The scenario's trace with loopnb's soft markers taken off (what any emitter following the
    conventions writes: ERROR and error.type on the failed tool span), with or without its agent span."""
    trace = spec_json(exported(name))
    for resource in trace["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            kept = []
            for span in scope["spans"]:
                span["attributes"] = [
                    a for a in span["attributes"] if a["key"] not in (CHANNEL, PRODUCER, ERROR_TEXT)
                ]
                if agent or not span["name"].startswith("invoke_agent"):
                    kept.append(span)
            scope["spans"] = kept
    return trace


def calls(rec: loopnb.Recording) -> list[tuple[str, str, bool]]:
    e = rec.events
    c = e[e["kind"] == "tool_dispatched"]
    return list(zip(c["tool"], c["source_status"], c["is_error"].astype(bool), strict=True))


def test_anyones_trace_that_follows_the_rule_is_soft_and_no_disagreement(tmp_path: Path) -> None:
    path = tmp_path / "foreign.otlp.json"
    path.write_text(json.dumps(foreign("mistyped_path", agent=True)), encoding="utf-8")
    read = loopnb.load(path, format="otlp")
    assert read.turns["channel"].tolist()[0] == "soft"
    assert read.turns["producer"].tolist()[0] == "tool_error"  # error.type, the conventions' word
    assert ("read_file", "otlp:ERROR:handled", True) in calls(read)
    assert loopnb.audit(read).disagreements().empty


def test_without_a_run_span_nothing_tells_handled_from_run_ending(tmp_path: Path) -> None:
    path = tmp_path / "no-agent.otlp.json"
    path.write_text(json.dumps(foreign("mistyped_path", agent=False)), encoding="utf-8")
    read = loopnb.load(path, format="otlp")
    assert read.turns["channel"].tolist()[0] == "soft"
    assert ("read_file", "otlp:ERROR", True) in calls(read)
    assert loopnb.audit(read).disagreements()["reason"].tolist() == ["soft_shown_as_hard"]
