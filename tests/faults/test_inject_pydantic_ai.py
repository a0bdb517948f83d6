"""``loopnb.inject`` on a pydantic-ai agent: its tools fail as pydantic-ai's own do (``ModelRetry``)."""

from __future__ import annotations

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, RetryPromptPart, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

import loopnb
from loopnb import faults, from_pydantic_ai, inject


def brain(messages, info: AgentInfo) -> ModelResponse:
    """Ask for the file; ask again after a failure; answer with what the tool returned."""
    last = messages[-1].parts[-1]
    failed = isinstance(last, RetryPromptPart) or getattr(last, "outcome", "success") not in ("success", None)
    if isinstance(last, ToolReturnPart) and not failed:
        return ModelResponse(parts=[TextPart(f"it says: {last.content}")])
    return ModelResponse(parts=[ToolCallPart("read_file", {"path": "a.txt"})])


def make_agent() -> Agent:
    agent = Agent(FunctionModel(brain), retries=3)

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file."""
        return f"contents of {path}"

    return agent


def test_an_injected_error_is_a_retry_the_agent_gets_past_and_each_is_logged_with_its_call_id():
    agent = make_agent()
    flaky = inject(agent, {"read_file": faults.error("disk busy").first(2)})
    result = flaky.run_sync("read a.txt")
    assert result.output == "it says: contents of a.txt"
    assert [(i.tool, i.call, i.label) for i in flaky.injections] == [
        ("read_file", 1, 'error("disk busy").first(2)'),
        ("read_file", 2, 'error("disk busy").first(2)'),
    ]
    calls = [p.tool_call_id for m in result.all_messages() for p in m.parts if isinstance(p, ToolCallPart)]
    assert [i.call_id for i in flaky.injections] == calls[:2]
    rec = from_pydantic_ai(result.all_messages(), injected=flaky.injections)
    assert rec.turns["channel"].tolist()[:3] == ["soft", "soft", "ok"]
    assert rec.turns["injected"].tolist()[:2] == ['error("disk busy").first(2)'] * 2
    assert rec.turns["injected"].isna().tolist()[2:] == [True] * (len(rec.turns) - 2)
    rates = loopnb.audit(rec).recovery_rate(by="fault").set_index("fault")
    assert rates.loc['error("disk busy").first(2)', "rate"] == 1.0
    assert "disk busy" in rec.turns["error_text"].iloc[0]
    assert agent.run_sync("read a.txt").output == "it says: contents of a.txt"  # the original is untouched


def test_a_permanent_error_meets_the_agents_own_retry_limit():
    never = inject(make_agent(), {"read_file": faults.error("gone")})
    with pytest.raises(Exception) as info:
        never.run_sync("read a.txt")
    assert type(info.value).__name__ == "UnexpectedModelBehavior"
    assert len(never.injections) == 4  # the first call and its 3 retries


def test_implicit_and_crash_faults_and_a_missing_tool():
    quiet = inject(make_agent(), {"read_file": faults.empty()})
    assert quiet.run_sync("read a.txt").output == "it says: "
    crashing = inject(make_agent(), {"read_file": faults.crash(OSError("bad sector"))})
    with pytest.raises(OSError, match="bad sector"):
        crashing.run_sync("read a.txt")
    with pytest.raises(KeyError, match="did you mean 'read_file'"):
        inject(make_agent(), {"read_fil": faults.error("x")})


def test_the_traced_run_marks_the_injected_tool_spans_and_from_otel_reads_them():
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from pydantic_ai.models.instrumented import InstrumentationSettings

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    agent = make_agent()
    agent.instrument = InstrumentationSettings(tracer_provider=provider)
    flaky = inject(agent, {"read_file": faults.error("disk busy").first(1)})
    flaky.run_sync("read a.txt")
    spans = memory.get_finished_spans()
    marked = [s for s in spans if (s.attributes or {}).get("loopnb.injected")]
    assert [s.attributes["loopnb.injected"] for s in marked] == ['error("disk busy").first(1)']
    rec = loopnb.from_otel(spans)
    assert rec.turns["injected"].dropna().tolist() == ['error("disk busy").first(1)']
