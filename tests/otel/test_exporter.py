"""loopnb's runs exported as OpenTelemetry spans, errors recorded as the GenAI conventions say: a
failed tool call is ERROR on its own span, the run that went on is not, a hard end is ERROR on the
run's span."""

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

import loopnb
from loopnb.foreign._otlp_profile import DECISION
from loopnb.otel import ATTEMPT, CHANNEL, ERROR_TEXT, PRODUCER, Exporter, exporter_for
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


def test_a_soft_tool_error_is_an_error_on_its_own_span_with_the_text_the_model_read(sink):
    provider, memory = sink
    outcome = _export("mistyped_path", provider)
    spans = memory.get_finished_spans()
    (run,) = _by_operation(spans, "invoke_agent")
    tools = _by_operation(spans, "execute_tool")
    chats = _by_operation(spans, "chat")
    soft = [s for s in tools if s.attributes[CHANNEL] == "soft"]
    assert soft, "the scenario's slip is exported as a soft tool span"
    for span in soft:
        assert span.status.status_code is StatusCode.ERROR
        assert span.attributes["error.type"] == span.attributes[PRODUCER] == "tool_error"
        assert "not found" in span.attributes[ERROR_TEXT]
        assert not span.events  # the text is an attribute, never an exception event
        assert span.parent.span_id == run.context.span_id
    assert run.status.status_code is StatusCode.UNSET and run.attributes[CHANNEL] == "ok"
    assert len(chats) == outcome.run.turns
    assert {s.attributes["gen_ai.tool.name"] for s in tools} == {"read_file"}


@pytest.mark.parametrize("name", ["stubborn_loop", "recovery_ceiling", "cancelled_run"])
def test_a_hard_ending_is_an_error_on_the_runs_span_and_a_chat_never_is(sink, name):
    provider, memory = sink
    _export(name, provider)
    spans = memory.get_finished_spans()
    (run,) = _by_operation(spans, "invoke_agent")
    assert run.status.status_code is StatusCode.ERROR
    assert run.attributes[CHANNEL] == "hard"
    assert run.attributes[PRODUCER] == SCENARIOS[name].run().ending
    assert run.attributes["error.type"] in {cls.__name__ for cls in loopnb.LoopError.__subclasses__()}
    assert not run.events
    chats = _by_operation(spans, "chat")
    assert chats and all(s.status.status_code is StatusCode.UNSET for s in chats)
    for tool in _by_operation(spans, "execute_tool"):  # an ERROR tool span is a failed call, by producer
        failed = tool.status.status_code is StatusCode.ERROR
        assert failed == ("error.type" in tool.attributes)


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
    text = tool.attributes[ERROR_TEXT]
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
    assert channels == {CHANNEL: "soft"} and all(s.status.code == Status.STATUS_CODE_ERROR for s in tools)


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


def _soft_texts(spans):
    """``(call id, producer, text)`` of every tool span whose error the model read."""
    return [
        (s.attributes["gen_ai.tool.call.id"], s.attributes[PRODUCER], s.attributes[ERROR_TEXT])
        for s in _by_operation(spans, "execute_tool")
        if s.attributes[CHANNEL] == "soft"
    ]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_the_soft_tool_spans_hold_exactly_what_the_model_read(sink, name):
    provider, memory = sink
    outcome = _export(name, provider)
    read = [
        (e.call_id, e.producer, e.text)
        for e in outcome.events
        if e.kind == "soft_error_returned" and e.call_id
    ]
    assert sorted(_soft_texts(memory.get_finished_spans())) == sorted(read)


def test_an_attempt_a_recovery_strategy_retried_is_a_failed_span_but_no_soft_error(sink):
    provider, memory = sink
    _export("recovery_success", provider)
    first, second = sorted(
        _by_operation(memory.get_finished_spans(), "execute_tool"), key=lambda s: s.attributes[ATTEMPT]
    )
    assert first.status.status_code is StatusCode.ERROR and second.status.status_code is StatusCode.UNSET
    assert first.attributes["error.type"] == "tool_error" and first.attributes[ATTEMPT] == 0
    assert first.attributes[ERROR_TEXT] == "file src/lib.sr not found"
    assert first.attributes[DECISION] == "retry" and not first.events and not second.events
    assert (
        first.attributes[CHANNEL] == second.attributes[CHANNEL] == "ok" and PRODUCER not in first.attributes
    )
    # the ceiling: six attempts, none read by the model, the run ended hard on them
    provider, memory = sink
    memory.clear()
    _export("recovery_ceiling", provider)
    tools = _by_operation(memory.get_finished_spans(), "execute_tool")
    assert not _soft_texts(tools)
    failed = [s for s in tools if s.status.status_code is StatusCode.ERROR]
    assert sorted(s.attributes[ATTEMPT] for s in failed) == list(range(6))
    assert all(ERROR_TEXT in s.attributes for s in failed)


class _OnceThenSkip:
    """A recovery strategy that retries a failed call once, then gives up."""

    def decide(self, failure, attempt, max_attempts):
        return loopnb.Retry(note="try again") if attempt == 0 else loopnb.Skip(note="no luck")


def test_a_strategy_that_gives_up_shows_the_model_the_first_failure_on_the_last_attempt(sink):
    provider, memory = sink
    tries = []

    @loopnb.tool
    def fetch(url: str) -> str:
        """Fetch a page."""
        tries.append(url)
        raise loopnb.ToolError(f"{url}: attempt {len(tries)} failed")

    engine = loopnb.Engine(
        loopnb.ScriptedModel([loopnb.ToolCall("fetch", {"url": "a"}, id="f1"), "gave up"]),
        [fetch],
        recovery=_OnceThenSkip(),
    )
    engine.subscribe(exporter_for(provider))
    engine.run("fetch a")
    spans = memory.get_finished_spans()
    first, last = sorted(_by_operation(spans, "execute_tool"), key=lambda s: s.attributes[ATTEMPT])
    assert first.status.status_code is StatusCode.ERROR and not first.events
    assert first.attributes[ERROR_TEXT] == "a: attempt 1 failed"
    assert _soft_texts(spans) == [("f1", "recovery_gave_up", "a: attempt 1 failed")]  # what the model read
    assert last.attributes[CHANNEL] == "soft" and last.attributes[PRODUCER] == "recovery_gave_up"
    read = loopnb.from_otel(spans).turns  # and read back: the turn the model read it in
    assert list(read[["channel", "producer", "error_text"]].iloc[0]) == [
        "soft",
        "recovery_gave_up",
        "a: attempt 1 failed",
    ]
