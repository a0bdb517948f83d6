"""loopnb's runs exported as OpenTelemetry spans: soft errors stay unset, only a hard end is ERROR."""

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

import loopnb
from loopnb.otel import CHANNEL, ERROR_TEXT, PRODUCER, SOFT_ERROR, Exporter, exporter_for
from loopnb.scenarios import SCENARIOS


@pytest.fixture
def sink():
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    return provider, memory


def _export(name, provider):
    outcome = SCENARIOS[name].run()
    exporter = Exporter(tracer_provider=provider)
    for event in outcome.events:
        exporter(event)
    return outcome


def _by_operation(spans, operation):
    return [s for s in spans if s.attributes.get("gen_ai.operation.name") == operation]


def test_a_soft_tool_error_keeps_its_span_unset_with_the_text_the_model_read(sink):
    provider, memory = sink
    outcome = _export("mistyped_path", provider)
    spans = memory.get_finished_spans()
    (run,) = _by_operation(spans, "invoke_agent")
    tools = _by_operation(spans, "execute_tool")
    chats = _by_operation(spans, "chat")
    soft = [s for s in tools if s.attributes[CHANNEL] == "soft"]
    assert soft, "the scenario's slip is exported as a soft tool span"
    for span in soft:
        assert span.status.status_code is StatusCode.UNSET
        (event,) = [e for e in span.events if e.name == SOFT_ERROR]
        assert event.attributes[PRODUCER] == span.attributes[PRODUCER] == "tool_error"
        assert "not found" in event.attributes[ERROR_TEXT]
        assert span.parent.span_id == run.context.span_id
    assert run.status.status_code is StatusCode.UNSET and run.attributes[CHANNEL] == "ok"
    assert len(chats) == outcome.run.turns
    assert {s.attributes["gen_ai.tool.name"] for s in tools} == {"read_file"}


@pytest.mark.parametrize("name", ["stubborn_loop", "recovery_ceiling", "cancelled_run"])
def test_only_a_hard_ending_is_an_error_and_only_on_the_runs_span(sink, name):
    provider, memory = sink
    _export(name, provider)
    spans = memory.get_finished_spans()
    (run,) = _by_operation(spans, "invoke_agent")
    assert run.status.status_code is StatusCode.ERROR
    assert run.attributes[CHANNEL] == "hard"
    assert run.attributes[PRODUCER] == SCENARIOS[name].run().ending
    assert [e.name for e in run.events] == ["exception"]
    others = [s for s in spans if s is not run]
    assert others and all(s.status.status_code is StatusCode.UNSET for s in others)


def test_recovery_attempts_carry_the_ceiling(sink):
    provider, memory = sink
    _export("recovery_ceiling", provider)
    tools = _by_operation(memory.get_finished_spans(), "execute_tool")
    attempts = [s.attributes["loopnb.recovery.attempt"] for s in tools]
    assert max(attempts) == 5 and {s.attributes["loopnb.recovery.ceiling"] for s in tools} == {5}


def test_an_engine_exports_as_it_runs_and_texts_are_redacted(sink):
    provider, memory = sink

    @loopnb.tool
    def lookup(key: str) -> str:
        """Look a key up."""
        raise loopnb.ToolError(f"no key {key}; the token sk-live-abcdefghijklmnopqrstuvwx is not a key")

    engine = loopnb.Engine(
        loopnb.ScriptedModel([loopnb.ToolCall("lookup", {"key": "a"}), "gave up"]), [lookup]
    )
    engine.subscribe(exporter_for(provider))
    engine.run("find a")
    (tool,) = _by_operation(memory.get_finished_spans(), "execute_tool")
    text = tool.events[0].attributes[ERROR_TEXT]
    assert text.startswith("no key a") and "sk-live-abcdefghijklmnopqrstuvwx" not in text


def test_export_targets_are_checked():
    with pytest.raises(TypeError, match="export= takes"):
        exporter_for(42)
    with pytest.raises(ValueError, match="http"):
        exporter_for("127.0.0.1:4318")


def test_a_notebook_runner_sends_its_runs_over_otlp_http():
    from opentelemetry.proto.trace.v1.trace_pb2 import Status

    from loopnb.notebook import NotebookRunner
    from tests.otel.receiver import Receiver

    with Receiver() as receiver:
        runner = NotebookRunner(SCENARIOS["stubborn_loop"].engine(), view=False, export=receiver.url)
        with pytest.raises(loopnb.LoopDetected):
            runner.run(SCENARIOS["stubborn_loop"].task)
        runner.exporter.close()
        spans = receiver.spans
    names = [s.name for s in spans]
    assert names[-1] == "invoke_agent loopnb" and "execute_tool read_file" in names
    run = spans[-1]
    assert run.status.code == Status.STATUS_CODE_ERROR
    tools = [s for s in spans if s.name.startswith("execute_tool")]
    channels = {a.key: a.value.string_value for s in tools for a in s.attributes if a.key == CHANNEL}
    assert channels == {CHANNEL: "soft"} and all(s.status.code == Status.STATUS_CODE_UNSET for s in tools)


def test_loopnb_demo_sends_its_runs_to_an_otlp_endpoint(capsys):
    from loopnb.cli import main
    from tests.otel.receiver import Receiver

    with Receiver() as receiver:
        code = main(["demo", "mistyped_path", "stubborn_loop", "--otlp", receiver.url])
        spans = list(receiver.spans)
    out = capsys.readouterr().out
    assert code == 0 and f"sent 2 runs as OpenTelemetry spans to {receiver.url}" in out
    runs = [s for s in spans if s.name == "invoke_agent loopnb"]
    assert len(runs) == 2 and sorted(s.status.code for s in runs) == [0, 2]  # unset, error


def test_loopnb_demo_refuses_an_endpoint_that_is_no_url(capsys):
    from loopnb.cli import main

    assert main(["demo", "mistyped_path", "--otlp", "127.0.0.1:4318"]) == 2
    assert "--otlp: an OTLP/HTTP endpoint is an http(s) URL" in capsys.readouterr().err
