"""The GenAI conventions' metrics, from the same spans: each run's, model request's and tool call's
duration (the span's own), ``error.type`` as on the span, and the tokens; read with the SDK's
``InMemoryMetricReader``."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import loopnb
from loopnb.engine import ModelReply, Usage
from loopnb.otel import Exporter
from loopnb.scenarios import SCENARIOS


def _providers() -> tuple[TracerProvider, InMemorySpanExporter, MeterProvider, InMemoryMetricReader]:
    memory = InMemorySpanExporter()
    tracer = TracerProvider()
    tracer.add_span_processor(SimpleSpanProcessor(memory))
    reader = InMemoryMetricReader()
    return tracer, memory, MeterProvider(metric_readers=[reader]), reader


def _points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    """Every data point, by metric name."""
    found: dict[str, list[Any]] = {}
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data is not None else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                found.setdefault(metric.name, []).extend(metric.data.data_points)
    return found


def _exported(name: str) -> tuple[list[Any], dict[str, list[Any]]]:
    tracer, memory, meters, reader = _providers()
    exporter = Exporter(tracer_provider=tracer, meter_provider=meters)
    for event in SCENARIOS[name].run().events:
        exporter(event)
    return list(memory.get_finished_spans()), _points(reader)


def _seconds(spans: list[Any], operation: str) -> float:
    return sum(
        (s.end_time - s.start_time) / 1e9
        for s in spans
        if s.attributes.get("gen_ai.operation.name") == operation
    )


def test_a_recovered_run_has_one_failed_tool_execution_and_a_run_that_did_not_fail():
    spans, points = _exported("mistyped_path")
    tools = {p.attributes.get("error.type"): p for p in points["gen_ai.execute_tool.duration"]}
    assert set(tools) == {"tool_error", None} and [p.count for p in tools.values()] == [1, 1]
    assert dict(tools["tool_error"].attributes) == {
        "gen_ai.tool.name": "read_file",
        "gen_ai.tool.type": "function",
        "error.type": "tool_error",
        "gen_ai.agent.name": "loopnb",
    }
    (run,) = points["gen_ai.invoke_agent.duration"]
    assert dict(run.attributes) == {"gen_ai.agent.name": "loopnb"} and run.count == 1
    for metric, operation in [
        ("gen_ai.execute_tool.duration", "execute_tool"),
        ("gen_ai.invoke_agent.duration", "invoke_agent"),
        ("gen_ai.client.operation.duration", "chat"),
    ]:  # the metric is the spans' own duration
        assert sum(p.sum for p in points[metric]) == pytest.approx(_seconds(spans, operation))


def test_a_hard_run_is_a_failed_invocation_named_by_its_loop_error():
    _, points = _exported("stubborn_loop")
    (run,) = points["gen_ai.invoke_agent.duration"]
    assert run.attributes["error.type"] == "LoopDetected"
    said = {p.attributes["error.type"]: p.count for p in points["gen_ai.execute_tool.duration"]}
    assert said == {"tool_error": 3, "loop_refusal": 2}


def test_a_failed_model_request_is_a_failed_operation():
    _, points = _exported("fallback_chain")
    failed = [p for p in points["gen_ai.client.operation.duration"] if "error.type" in p.attributes]
    assert {p.attributes["error.type"] for p in failed} == {"ModelUnavailable"}


def test_the_tokens_a_request_used_by_type():
    tracer, _, meters, reader = _providers()
    model = loopnb.ScriptedModel([ModelReply(text="done", usage=Usage(input_tokens=12, output_tokens=5))])
    engine = loopnb.Engine(model)
    engine.subscribe(Exporter(tracer_provider=tracer, meter_provider=meters))
    engine.run("say done")
    tokens = {p.attributes["gen_ai.token.type"]: p for p in _points(reader)["gen_ai.client.token.usage"]}
    assert {kind: p.sum for kind, p in tokens.items()} == {"input": 12, "output": 5}
    assert tokens["input"].attributes["gen_ai.request.model"] == "scripted"  # the chat span's


def test_without_a_meter_provider_nothing_is_measured():
    tracer, memory, _, reader = _providers()
    exporter = Exporter(tracer_provider=tracer)
    for event in SCENARIOS["mistyped_path"].run().events:
        exporter(event)
    assert memory.get_finished_spans() and _points(reader) == {}


@pytest.mark.parametrize(
    ("name", "requests", "executions"),
    [("mistyped_path", 3, 2), ("stubborn_loop", 6, 5), ("recovery_ceiling", 1, 6), ("fallback_chain", 4, 2)],
)
def test_each_run_counts_its_model_requests_and_tool_executions_failed_ones_too(name, requests, executions):
    spans, points = _exported(name)
    (inference,) = points["gen_ai.invoke_agent.inference_calls"]
    (tools,) = points["gen_ai.invoke_agent.tool_calls"]
    assert (
        (inference.count, inference.sum)
        == (1, requests)
        == (1, len([s for s in spans if s.name.startswith("chat")]))
    )
    assert (tools.count, tools.sum) == (1, executions)
    assert dict(inference.attributes) == dict(tools.attributes) == {"gen_ai.agent.name": "loopnb"}
