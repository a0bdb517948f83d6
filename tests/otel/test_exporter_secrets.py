"""No secret leaves in a span: ``error.type`` is a class name from a small fixed set, never the
start of a failure's text, and every text attribute is redacted (issue 24)."""

from __future__ import annotations

import typing
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

import loopnb
from loopnb import CircuitBreaker, FallbackChain, ModelAuthError, ModelUnavailable, ScriptedModel, ToolCall
from loopnb.engine._events import RunFinished, RunStarted
from loopnb.otel import Exporter

KEY = "sk-proj-Zq8rT2wX9vLm4NcB7yHd3KpF6sJg"  # an OpenAI-shaped key the default redactor knows
ERROR_TYPES = {"ModelUnavailable", "FallbackExhausted", *typing.get_args(loopnb.engine._errors.SoftProducer)}
"""What error.type may say: a class name from a small fixed set, or a soft producer: never free text."""


@pytest.fixture
def spans():
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    exporter = Exporter(tracer_provider=provider)
    yield exporter, memory


def _texts(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _texts(item)
    else:
        yield str(value)


def _everything(span) -> Iterator[tuple[str, str]]:
    """Every text a span sends: its name, status, attributes and events (names and attributes)."""
    yield "name", span.name
    yield "status", span.status.description or ""
    for key, value in (span.attributes or {}).items():
        yield from ((key, text) for text in _texts(value))
    for event in span.events:
        yield "event", event.name
        for key, value in (event.attributes or {}).items():
            yield from ((f"{event.name}.{key}", text) for text in _texts(value))


@loopnb.tool
def lookup(name: str) -> str:
    """Look a name up."""
    raise loopnb.ToolError(f"no entry {name}; the service answered with token {KEY}")


def _run(exporter: Exporter) -> None:
    """A run whose task, tool error, model's tool name, model failures and hard ending hold the key."""
    primary = ScriptedModel(
        [
            [
                ToolCall("lookup", {"name": "a"}),
                ToolCall(f"fetch_{KEY}", {}),
            ],  # a tool name the model made up
            ModelUnavailable(f"upstream rejected token {KEY}: try another", status=401),
        ],
        name="primary",
    )
    backup = ScriptedModel(
        [ModelAuthError(f"{KEY}: this key was refused", status=403, env_var="OPENAI_API_KEY")],
        name=f"backup-{KEY}",  # a name with a key in it, as a proxy's URL might have
    )
    chain = FallbackChain([primary, backup], breaker=CircuitBreaker(failure_threshold=1))
    engine = loopnb.Engine(chain, tools=[lookup], observers=[exporter])
    with pytest.raises(loopnb.FallbackExhausted) as ended:
        engine.run(f"look a up with token {KEY}", run_id="keyed")
    assert KEY in ended.value.message  # what your code reads keeps it; what is exported does not


def test_no_span_attribute_or_event_holds_the_key_and_error_type_is_a_class(spans):
    exporter, memory = spans
    _run(exporter)
    finished = memory.get_finished_spans()
    failed = [s for s in finished if "error.type" in (s.attributes or {})]
    # two failed tool calls (lookup's error, the made-up tool), two model requests, the hard ending
    assert len(failed) == 5
    assert all(s.status.status_code is StatusCode.ERROR for s in failed)
    for span in finished:
        for where, text in _everything(span):
            assert KEY not in text, (span.name, where)
    assert {s.attributes["error.type"] for s in failed} <= ERROR_TYPES
    (run,) = [s for s in finished if s.attributes["gen_ai.operation.name"] == "invoke_agent"]
    assert run.attributes["error.type"] == "FallbackExhausted"
    assert not run.events and KEY not in (run.status.description or "")
    chats = [s for s in finished if s.attributes["gen_ai.operation.name"] == "chat" and s in failed]
    assert [s.attributes["error.type"] for s in chats] == ["ModelUnavailable", "ModelUnavailable"]
    assert [s.attributes["http.response.status_code"] for s in chats] == [401, 403]
    assert "[REDACTED]" in chats[0].attributes["loopnb.error"]  # the text is kept, redacted
    tools = sorted(
        s.attributes["error.type"] for s in failed if s.attributes["gen_ai.operation.name"] == "execute_tool"
    )
    assert tools == ["not_advertised", "tool_error"]


def test_a_hard_ending_names_a_loop_error_class_whatever_the_event_says(spans):
    """Events from elsewhere (a foreign run's, replayed into the exporter) may name anything."""
    exporter, memory = spans
    start = RunStarted(seq=0, run_id="r", at=0.0, task="t", system=None, models=(), tools=(), advertised=())
    exporter(start)
    exporter(
        RunFinished(
            seq=1,
            run_id="r",
            at=1.0,
            outcome="hard",
            turns=0,
            error=f"Refused {KEY}",
            producer="source_error",
        )
    )
    (run,) = memory.get_finished_spans()
    assert run.attributes["error.type"] == "LoopError"
    assert run.status.status_code is StatusCode.ERROR and not run.events
