"""``LiveSpans`` fed spans that never end keeps a bounded amount, and says what it gave up on.

A span that never ends (a crashed agent, a leaked span) would hold back its run's turns and keep
its trace in progress forever. ``LiveSpans`` keeps at most ``max_open`` spans open (past it the
one that started first is given up on, and its run read on without it) and at most ``max_traces``
traces in progress (past it the one seen least recently is written as far as it can be and let
go); ``errors`` keeps ``ERRORS_KEPT`` lines and counts the rest. The spans are written with the
OTel SDK in the GenAI conventions' shapes (an agent span, model requests, tool executions).
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import loopnb
from loopnb.engine._errors import LoopnbWarning
from loopnb.otel import LiveSpans
from loopnb.otel._live import ERRORS_KEPT


def _messages(*parts: dict[str, Any], role: str) -> str:
    return json.dumps([{"role": role, "parts": list(parts)}])


class Agent:
    """Writes one agent's spans: ``turn(n)`` is a model request asking for tool call ``c<n>``, and
    that call's tool span, left open unless ``ends``."""

    def __init__(self, provider: TracerProvider, *, open_agent: bool = True) -> None:
        self.tracer = provider.get_tracer("test")
        self.agent = self.tracer.start_span(
            "invoke_agent leaky",
            attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "leaky"},
        )
        self.context = trace.set_span_in_context(self.agent)
        self.history: list[dict[str, Any]] = [{"role": "user", "parts": [{"type": "text", "content": "go"}]}]
        self.open_agent = open_agent

    def turn(self, n: int, *, ends: bool = False) -> Any:
        call = {"type": "tool_call", "id": f"c{n}", "name": "read_file", "arguments": {"path": f"{n}.txt"}}
        chat = self.tracer.start_span(
            "chat m",
            context=self.context,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "m",
                "gen_ai.input.messages": json.dumps(self.history),
                "gen_ai.output.messages": _messages(call, role="assistant"),
            },
        )
        chat.end()
        self.history += [
            {"role": "assistant", "parts": [call]},
            {"role": "tool", "parts": [{"type": "tool_call_response", "id": f"c{n}", "response": "ok"}]},
        ]
        tool = self.tracer.start_span(
            "execute_tool read_file",
            context=self.context,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "read_file",
                "gen_ai.tool.call.id": f"c{n}",
            },
        )
        if ends:
            tool.end()
        return tool


def _watched(**limits: Any) -> tuple[LiveSpans, TracerProvider, InMemorySpanExporter]:
    live = LiveSpans(**limits)
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    provider.add_span_processor(live)
    return live, provider, memory


def _kept(live: LiveSpans) -> dict[str, int]:
    """What ``live`` keeps while it waits: traces in progress, open spans, ended spans held back."""
    traces = live._traces.values()
    held = sum(len(r.chats) + len(r.tools) for t in traces for r in t.runs.values())
    return {"traces": len(traces), "open": sum(len(t.open) for t in traces), "held": held}


@pytest.fixture(autouse=True)
def _quiet() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoopnbWarning)  # asserted through ``errors``
        yield


def test_tool_spans_that_never_end_are_given_up_on_and_the_run_goes_on():
    live, provider, _ = _watched(max_open=20)
    agent = Agent(provider)
    for n in range(1, 501):
        agent.turn(n)
        assert _kept(live)["open"] <= 20 and _kept(live)["held"] <= 21
    assert live.errors[0] == (
        f"span {agent.agent.context.span_id:016x} 'invoke_agent leaky' of trace "
        f"{agent.agent.context.trace_id:032x} is still open after 20 later spans started (max_open): "
        "given up on; its run is read on without it"
    )
    assert len(live.errors) == 500 - 19  # the agent span, then each tool span but the last 20
    assert all(e.endswith("given up on; its run is read on without it") for e in live.errors)
    turns = live.turns
    assert len(turns) >= 500 - 21  # every turn whose next request has ended and that nothing open holds
    assert list(turns.turn) == list(range(1, len(turns) + 1))


def test_a_span_given_up_on_is_not_read_when_it_ends_after_all():
    live, provider, memory = _watched(max_open=1)
    agent = Agent(provider)
    late = agent.turn(1)  # the agent span is given up on as the first request starts, this one as the next
    for n in range(2, 6):
        agent.turn(n, ends=True)
    late.end()
    agent.agent.end()
    assert [e.split(" of trace ")[0] for e in live.errors] == [
        f"span {agent.agent.context.span_id:016x} 'invoke_agent leaky'",
        f"span {late.context.span_id:016x} 'execute_tool read_file'",
    ]
    assert len(live.turns) == 4  # the last turn waits for the run's end: its trace's
    live.stop()
    given_up = {agent.agent.context.span_id, late.context.span_id}
    kept = [s for s in memory.get_finished_spans() if s.context.span_id not in given_up]
    columns = ["run_id", "turn", "channel", "producer", "tools", "error_text", "source_status"]
    assert live.turns[columns].equals(loopnb.from_otel(kept).turns[columns])  # as if they never were


def test_traces_that_never_end_are_let_go_least_recent_first():
    live, provider, _ = _watched(max_traces=10)
    agents = []
    for _ in range(300):
        agent = Agent(provider)
        agent.turn(1)
        agents.append(agent)
        assert _kept(live)["traces"] <= 10
    assert _kept(live)["open"] <= 20
    first = agents[0].agent.context.trace_id
    assert live.errors[0] == (
        f"trace {first:032x} was let go, 2 of its spans still open, to keep at most 10 traces in progress "
        "(max_traces): its runs are shown as far as they got and its later spans are not read"
    )
    assert live.turns.run_id.nunique() == 290  # each let go written as far as it got: its one turn
    agents[0].turn(2, ends=True)  # a trace let go is not read again
    agents[0].agent.end()
    assert live.turns.run_id.nunique() == 290


def test_errors_keeps_its_first_lines_and_counts_the_rest():
    live, provider, _ = _watched(max_open=1)
    agent = Agent(provider)
    for n in range(1, 1201):
        agent.turn(n)
    assert len(live.errors) == ERRORS_KEPT + 1
    given_up = 1 + 1199  # the agent span, then every tool span but the last (each as a request starts)
    assert live.errors[-1] == f"and {given_up - ERRORS_KEPT} more not kept (errors keeps {ERRORS_KEPT} lines)"


@pytest.mark.parametrize("limit", ["max_open", "max_traces"])
@pytest.mark.parametrize("value", [0, -1, True, 2.5, "10"])
def test_a_bad_bound_is_refused(limit, value):
    with pytest.raises(ValueError, match=rf"^LiveSpans: {limit} must be an int >= 1, got {value!r}$"):
        LiveSpans(**{limit: value})
