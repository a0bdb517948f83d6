"""Errors as the OpenTelemetry GenAI conventions record them ("Recording Errors"): a failed tool
call is ERROR on its own span, the run that went on is not, a hard ending is ERROR on the run's
span; and a trace from anyone that follows the same rule reads as soft, with no disagreement."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import loopnb
from loopnb.otel import ATTEMPT, CHANNEL, ERROR_TEXT, PRODUCER, Exporter, LiveSpans
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


# -- every producer, every span -----------------------------------------------------------------

LOOP_ERRORS = {cls.__name__ for cls in loopnb.LoopError.__subclasses__()}


def _several_producers(*observers: Any) -> loopnb.Recorder:
    """One run whose first turn makes six calls that fail six ways, then reads the file and
    answers: every tool span's status said per call, and a run that went on."""

    @loopnb.tool
    def read_file(path: str) -> str:
        """Read a file."""
        if path != "notes.txt":
            raise loopnb.ToolError(f"file {path} not found")
        return "hi"

    @loopnb.tool
    def word_stats(path: str) -> str:
        """Words per line."""
        return str(len(path) / 0)

    @loopnb.tool
    def head(path: str, lines: int) -> str:
        """The first lines of a file."""
        return path * lines

    @loopnb.tool
    def fetch_url(url: str) -> str:
        """Fetch a page."""
        return url

    def allowlist(call: loopnb.ToolCall, ctx: Any) -> str | None:
        return "outbound requests are off" if call.name == "fetch_url" else None

    gone = loopnb.ToolSpec(
        name="fetch_file", description="Fetch a file.", parameters=read_file.spec.parameters
    )
    call = loopnb.ToolCall
    model = loopnb.ScriptedModel(
        [
            [
                call("read_file", {"path": "nots.txt"}, id="a"),
                call("word_stats", {"path": "e"}, id="b"),
                call("head", {"path": "x", "lines": "three"}, id="c"),
                call("fetch_url", {"url": "http://x"}, id="d"),
                call("grep", {"q": "x"}, id="e"),
                call("fetch_file", {"path": "notes.txt"}, id="f"),
            ],
            call("read_file", {"path": "notes.txt"}, id="g"),
            "the notes say hi",
        ]
    )
    recorder = loopnb.Recorder()
    engine = loopnb.Engine(
        model,
        [read_file, word_stats, head, fetch_url],
        hooks=[allowlist],
        advertise=["read_file", "word_stats", "head", "fetch_url", gone],
        observers=[recorder, *observers],
    )
    engine.run("read the notes")
    return recorder


SEVERAL = {  # call id -> the producer its failure is
    "a": "tool_error",
    "b": "tool_panic",
    "c": "invalid_arguments",
    "d": "hook_veto",
    "e": "not_advertised",
    "f": "registry_miss",
}


def _sink() -> tuple[TracerProvider, InMemorySpanExporter]:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    return provider, memory


def test_a_run_with_soft_errors_of_several_producers_that_finishes_span_by_span() -> None:
    provider, memory = _sink()
    recorder = _several_producers(Exporter(tracer_provider=provider))
    e = recorder.events
    returned = e[e["kind"] == "soft_error_returned"]
    read = dict(zip(returned["call_id"], returned["text"], strict=True))
    spans = memory.get_finished_spans()
    tools = {s.attributes["gen_ai.tool.call.id"]: s for s in of(spans, "execute_tool")}
    assert set(tools) == {*SEVERAL, "g"}
    for call_id, producer in SEVERAL.items():
        span = tools[call_id]
        assert span.status.status_code is StatusCode.ERROR, call_id
        assert span.attributes["error.type"] == span.attributes[PRODUCER] == producer
        assert span.attributes[CHANNEL] == "soft" and span.attributes[ERROR_TEXT] == read[call_id]
        assert not span.events  # the text is an attribute, never an exception event
    ok = tools["g"]
    assert ok.status.status_code is StatusCode.UNSET and ok.attributes[CHANNEL] == "ok"
    assert "error.type" not in ok.attributes and PRODUCER not in ok.attributes
    for chat in of(spans, "chat"):
        assert chat.status.status_code is StatusCode.UNSET and "error.type" not in chat.attributes
    (run,) = of(spans, "invoke_agent")
    assert run.status.status_code is StatusCode.UNSET and "error.type" not in run.attributes
    assert run.attributes[CHANNEL] == "ok" and PRODUCER not in run.attributes
    # read back: the same channels per turn, each call's producer and text, no disagreement
    back = loopnb.from_otel(spans)
    assert back.turns["channel"].tolist() == recorder.turns["channel"].tolist() == ["soft", "ok", "ok"]
    b = back.events
    back_read = b[b["kind"] == "tool_dispatched"].set_index("call_id")
    for call_id, producer in SEVERAL.items():
        assert back_read.loc[call_id, ["producer", "text", "source_status"]].tolist() == [
            producer,
            read[call_id],
            "otlp:soft",
        ]
    assert loopnb.audit(back).disagreements().empty


def test_watched_live_the_export_of_several_producers_gives_the_same_turns() -> None:
    live = LiveSpans()
    provider, memory = _sink()
    provider.add_span_processor(live)
    recorder = _several_producers(Exporter(tracer_provider=provider))
    whole = loopnb.from_otel(memory.get_finished_spans())
    pd.testing.assert_frame_equal(live.turns, whole.turns)
    assert live.turns["channel"].tolist() == recorder.turns["channel"].tolist()
    assert live.errors == [] and loopnb.audit(live.recording()).disagreements().empty


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_failed_call_is_an_error_span_named_by_its_producer_and_only_a_hard_end_fails_the_run(
    name: str,
) -> None:
    spans = exported(name)
    for tool in of(spans, "execute_tool"):
        failed = tool.status.status_code is StatusCode.ERROR
        assert failed == ("error.type" in tool.attributes) == (ERROR_TEXT in tool.attributes)
        assert tool.attributes[CHANNEL] in {"ok", "soft", "hard"}
        if tool.attributes[CHANNEL] == "soft":  # read by the model: error.type is what failed
            assert failed and tool.attributes["error.type"] == tool.attributes[PRODUCER]
    (run,) = of(spans, "invoke_agent")
    hard = SCENARIOS[name].ending != "ok"
    assert run.attributes[CHANNEL] == ("hard" if hard else "ok")
    assert (run.status.status_code is StatusCode.ERROR) == hard
    assert run.attributes.get("error.type") in (LOOP_ERRORS if hard else {None})
    for chat in of(spans, "chat"):  # a chat fails only as a request: never for a tool, never soft
        assert chat.attributes.get("error.type") in {None, "ModelUnavailable"}


def test_the_producers_the_scenarios_reach_are_the_error_types_their_spans_say() -> None:
    said = {
        s.attributes["error.type"]
        for name in SCENARIOS
        for s in of(exported(name), "execute_tool")
        if s.status.status_code is StatusCode.ERROR
    }
    assert said == {
        "tool_error",
        "tool_panic",
        "invalid_arguments",
        "timeout",
        "hook_veto",
        "breaker_open",
        "loop_refusal",
        "registry_miss",
        "not_advertised",
    }


def test_span_kinds_are_the_conventions() -> None:
    spans = exported("mistyped_path")
    assert {s.kind for s in of(spans, "invoke_agent")} == {SpanKind.INTERNAL}  # the agent runs in-process
    assert {s.kind for s in of(spans, "chat")} == {SpanKind.CLIENT}
    assert {s.kind for s in of(spans, "execute_tool")} == {SpanKind.INTERNAL}  # "SHOULD be INTERNAL"


def test_the_attempt_the_ceiling_refused_is_the_hard_one() -> None:
    """Recovery retried five times and asked for a sixth: every attempt is a failed span of its
    own; the five dispatched again went unread (ok), the last ended the run (hard)."""
    spans = exported("recovery_ceiling")
    attempts = sorted(of(spans, "execute_tool"), key=lambda s: s.attributes[ATTEMPT])
    assert [s.attributes[ATTEMPT] for s in attempts] == list(range(6))
    assert all(s.status.status_code is StatusCode.ERROR for s in attempts)
    assert {s.attributes["error.type"] for s in attempts} == {"tool_error"}
    assert [s.attributes[CHANNEL] for s in attempts] == ["ok"] * 5 + ["hard"]
    assert attempts[-1].attributes[PRODUCER] == "tool_recovery_exhausted"
    (run,) = of(spans, "invoke_agent")
    assert run.attributes["error.type"] == "ToolRecoveryExhausted"


def test_a_recovery_that_gave_up_is_an_error_named_recovery_gave_up() -> None:
    provider, memory = _sink()

    class GiveUp:
        def decide(self, failure: Any, attempt: int, max_attempts: int) -> Any:
            return loopnb.Skip(note="no luck")

    @loopnb.tool
    def fetch(url: str) -> str:
        """Fetch a page."""
        raise loopnb.ToolError(f"{url} is down")

    model = loopnb.ScriptedModel([loopnb.ToolCall("fetch", {"url": "a"}, id="f1"), "gave up"])
    engine = loopnb.Engine(model, [fetch], recovery=GiveUp())
    engine.subscribe(Exporter(tracer_provider=provider))
    engine.run("fetch a")
    (tool,) = of(list(memory.get_finished_spans()), "execute_tool")
    assert tool.status.status_code is StatusCode.ERROR
    assert tool.attributes["error.type"] == tool.attributes[PRODUCER] == "recovery_gave_up"
    assert tool.attributes[ERROR_TEXT] == "a is down"


def test_a_hard_run_that_follows_the_rule_reads_back_without_loopnbs_own_marks(tmp_path: Path) -> None:
    """The stubborn run with loopnb's attributes taken off: its failed calls are ERROR under a
    run span that ended ERROR with a class of its own (LoopDetected), so they were handled."""
    path = tmp_path / "stubborn.otlp.json"
    path.write_text(json.dumps(foreign("stubborn_loop", agent=True)), encoding="utf-8")
    read = loopnb.load(path, format="otlp")
    ran = SCENARIOS["stubborn_loop"].run()
    assert read.turns["channel"].tolist() == [t.channel for t in ran.turns]
    assert read.turns["producer"].tolist()[-1] == "loop_detected"  # error.type LoopDetected
    assert read.turns["producer"].tolist()[3:5] == ["loop_refusal", "loop_refusal"]
    assert {s for _, s, soft in calls(read) if soft} == {"otlp:ERROR:handled"}
    assert "soft_shown_as_hard" not in set(loopnb.audit(read).disagreements()["reason"])


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_by_the_conventions_alone_every_scenario_reads_back_with_its_channels_and_producers(
    name: str, tmp_path: Path
) -> None:
    """Without loopnb's own attributes, status and ``error.type`` carry every channel and producer
    but one: a final answer the run turned down failed no operation, so only ``loopnb.channel``
    on its ``chat`` span says it (the texts are in ``loopnb.error_text`` too)."""
    path = tmp_path / f"{name}.otlp.json"
    path.write_text(json.dumps(foreign(name, agent=True)), encoding="utf-8")
    read = loopnb.load(path, format="otlp")
    got = [
        (c, None if pd.isna(p) else p)
        for c, p in zip(read.turns["channel"], read.turns["producer"], strict=True)
    ]
    ran = [(t.channel, t.producer) for t in SCENARIOS[name].run().turns]
    if name == "converging_answers":
        ran = [("ok", None) if p == "completion_rejected" else (c, p) for c, p in ran]
    assert got == ran
    assert loopnb.audit(read).disagreements().empty
