"""Reading anyone's trace by the GenAI conventions' "Recording Errors": a failed tool call is ERROR
on its own span, the run that went on is not ERROR for it. A trace that follows the rule reads
soft with no disagreement; ``soft_shown_as_hard`` stays where nothing tells a handled tool error
from a run-ending one: no run span, or a run span that ends ERROR with that tool's own error (or
no class at all) although the run went on.

The traces are written here with the OpenTelemetry SDK, as an emitter that follows the conventions
writes them (``invoke_agent`` / ``chat`` / ``execute_tool`` spans, ``gen_ai.input.messages`` and
``gen_ai.output.messages``), into the SDK's in-memory exporter, and read both whole
(``loopnb.from_otel``) and live as they end (``LiveSpans``).
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode, set_span_in_context

import loopnb
from loopnb.otel import LiveSpans

NOT_FOUND = "file nots.txt not found"
START = 1_772_355_600_000_000_000
MS = 1_000_000
TASK = {"role": "user", "parts": [{"type": "text", "content": "read the notes"}]}


def _call(call_id: str, path: str) -> dict[str, Any]:
    return {"type": "tool_call", "id": call_id, "name": "read_file", "arguments": {"path": path}}


def _said(call_id: str, result: str) -> dict[str, Any]:
    return {"role": "tool", "parts": [{"type": "tool_call_response", "id": call_id, "result": result}]}


class Emitter:
    """Writes one agent run's spans with the SDK, each at the next millisecond."""

    def __init__(self, *processors: Any) -> None:
        self.memory = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(self.memory))
        for processor in processors:
            provider.add_span_processor(processor)
        self.tracer = provider.get_tracer("conventions-emitter")
        self.now = START
        self.context: Any = None

    def tick(self) -> int:
        self.now += MS
        return self.now

    def start(self, name: str, kind: SpanKind, attributes: dict[str, Any]) -> Any:
        return self.tracer.start_span(
            name, context=self.context, kind=kind, attributes=attributes, start_time=self.tick()
        )

    def chat(self, inputs: list[dict[str, Any]], output: list[dict[str, Any]]) -> None:
        span = self.start(
            "chat scripted-model",
            SpanKind.CLIENT,
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "scripted-model",
                "gen_ai.input.messages": json.dumps(inputs),
                "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": output}]),
            },
        )
        span.end(end_time=self.tick())

    def tool(self, call_id: str, *, error: str | None = None, result: str | None = None) -> None:
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "read_file",
            "gen_ai.tool.call.id": call_id,
        }
        if result is not None:
            attributes["gen_ai.tool.call.result"] = result
        span = self.start("execute_tool read_file", SpanKind.INTERNAL, attributes)
        if error is not None:  # a failed call, as "Recording Errors" says: ERROR and error.type
            span.set_attribute("error.type", error)
            span.set_status(Status(StatusCode.ERROR))
        span.end(end_time=self.tick())


def recovered(*processors: Any, agent: bool = True, ended: str | None = "", **failed: Any) -> list[Any]:
    """A run whose first ``read_file`` fails (``tool_error``), then reads notes.txt and answers.

    ``ended``: ``""`` for a run span left unset; an ``error.type`` for one that ends ERROR with it;
    ``None`` for one that ends ERROR with no class. ``agent=False``: no run span at all (the spans
    hang under an application's own root span, which says nothing of agents).
    """
    e = Emitter(*processors)
    if agent:
        attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "notes"}
        run = e.start("invoke_agent notes", SpanKind.INTERNAL, attributes)
    else:
        run = e.start("handle request", SpanKind.SERVER, {})
    e.context = set_span_in_context(run)
    first = [TASK, {"role": "assistant", "parts": [_call("c1", "nots.txt")]}, _said("c1", NOT_FOUND)]
    e.chat([TASK], [_call("c1", "nots.txt")])
    e.tool("c1", error=failed.get("error", "tool_error"))
    e.chat(first, [_call("c2", "notes.txt")])
    e.tool("c2", result="hi")
    second = [*first, {"role": "assistant", "parts": [_call("c2", "notes.txt")]}, _said("c2", "hi")]
    e.chat(second, [{"type": "text", "content": "the notes say hi"}])
    if agent and ended != "":
        if ended is not None:
            run.set_attribute("error.type", ended)
        run.set_status(Status(StatusCode.ERROR))
    run.end(end_time=e.tick())
    return list(e.memory.get_finished_spans())


def first_call(rec: loopnb.Recording) -> tuple[str, str, str, str]:
    """``(channel, producer, error_text)`` of the first turn, and what the source said of its call."""
    t = rec.turns.iloc[0]
    e = rec.events
    said = e[(e["kind"] == "tool_dispatched") & (e["call_id"] == "c1")]["source_status"].iloc[0]
    return t["channel"], t["producer"], t["error_text"], said


def reasons(rec: loopnb.Recording) -> list[str]:
    return loopnb.audit(rec).disagreements()["reason"].tolist()


def test_a_trace_that_follows_the_rule_is_soft_and_no_disagreement():
    rec = loopnb.from_otel(recovered())
    assert first_call(rec) == ("soft", "tool_error", NOT_FOUND, "otlp:ERROR:handled")
    assert rec.turns["channel"].tolist() == ["soft", "ok", "ok"]
    assert reasons(rec) == []
    (finished,) = [e for e in rec.event_objects if e.kind == "run_finished"]
    assert finished.outcome == "ok" and finished.output == "the notes say hi"


def test_error_type_names_the_producer_the_conventions_and_loopnb_share():
    for producer in ("tool_error", "timeout", "hook_veto", "breaker_open", "registry_miss"):
        rec = loopnb.from_otel(recovered(error=producer))
        assert first_call(rec)[:2] == ("soft", producer) and reasons(rec) == []


def test_a_run_that_went_on_and_then_ended_hard_for_a_reason_of_its_own_still_handled_the_tool():
    rec = loopnb.from_otel(recovered(ended="LoopDetected"))
    assert first_call(rec) == ("soft", "tool_error", NOT_FOUND, "otlp:ERROR:handled")
    assert rec.turns[["channel", "producer"]].iloc[-1].tolist() == ["hard", "loop_detected"]
    assert "soft_shown_as_hard" not in reasons(rec)


@pytest.mark.parametrize("ended", ["tool_error", None], ids=["the-tools-error", "no-class"])
def test_a_run_span_that_is_error_while_the_run_went_on_is_soft_shown_as_hard(ended):
    """The run went on past the failed call, yet its span ends ERROR with that call's error (or
    with none named): nothing tells the handled failure from one that ended the run."""
    rec = loopnb.from_otel(recovered(ended=ended))
    assert first_call(rec) == ("soft", "tool_error", NOT_FOUND, "otlp:ERROR")
    assert reasons(rec)[0] == "soft_shown_as_hard"


def test_with_no_run_span_nothing_tells_and_soft_shown_as_hard_stays():
    rec = loopnb.from_otel(recovered(agent=False))
    assert first_call(rec) == ("soft", "tool_error", NOT_FOUND, "otlp:ERROR")
    assert reasons(rec) == ["soft_shown_as_hard"]


@pytest.mark.parametrize("ended", ["", "LoopDetected"], ids=["unset", "hard-of-its-own"])
def test_live_reads_a_trace_that_follows_the_rule_as_the_whole_trace_reads(ended):
    live = LiveSpans()
    spans = recovered(live, ended=ended)
    whole = loopnb.from_otel(spans)
    pd.testing.assert_frame_equal(live.turns, whole.turns)
    assert live.recorder.event_objects == list(whole.event_objects) and live.errors == []
    assert first_call(live.recording())[3] == "otlp:ERROR:handled"
    assert "soft_shown_as_hard" not in reasons(live.recording())


def test_live_shows_a_turn_before_its_run_span_ends_so_it_cannot_know_what_that_span_will_say():
    """The one place live and whole differ (``LiveSpans``' docstring): turn 1 is shown while the
    run span is open; that it ends ERROR with the tool's own error is known only at the end."""
    live = LiveSpans()
    spans = recovered(live, ended="tool_error")
    assert first_call(live.recording())[3] == "otlp:ERROR:handled"
    assert first_call(loopnb.from_otel(spans))[3] == "otlp:ERROR"
    columns = ["turn", "channel", "producer", "error_text"]  # what the model read is the same
    pd.testing.assert_frame_equal(live.turns[columns], loopnb.from_otel(spans).turns[columns])
