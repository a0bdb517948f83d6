"""The reading rules the new frameworks' traces needed, each on the smallest span that shows it."""

from __future__ import annotations

from typing import Any

import pytest

from loopnb.foreign import _otlp_genai as g
from loopnb.foreign._otlp_calls import misfit
from loopnb.foreign._otlp_runs import split_runs
from loopnb.foreign._otlp_spans import Span

SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "lines": {"type": "integer"}},
    "required": ["path"],
}


def span(attributes: dict[str, Any], *, parent: str | None = "p1", name: str = "s") -> Span:
    return Span("t" * 32, "s1", parent, name, 0.0, 1.0, "UNSET", None, attributes)


@pytest.mark.parametrize(
    ("arguments", "schema", "broken"),
    [
        ({"path": "a"}, SCHEMA, False),
        ({"pth": "a"}, SCHEMA, True),  # a required argument missing
        ({"path": "a", "lines": "3"}, SCHEMA, True),  # not the JSON type it names
        ({"path": "a", "lines": True}, SCHEMA, True),  # a bool is no integer to JSON Schema
        ({"path": "a", "extra": 1}, SCHEMA, False),  # others allowed unless it says not
        ({"path": "a", "extra": 1}, {**SCHEMA, "additionalProperties": False}, True),
        ({"path": 3}, {"properties": {"path": {"anyOf": [{"type": "string"}]}}}, False),  # not checked
        ({"path": "a"}, None, False),  # no schema recorded: nothing to break
        ("not an object", SCHEMA, False),
    ],
)
def test_arguments_break_a_schema_only_where_it_is_plain_to_see(arguments, schema, broken):
    assert misfit(arguments, schema) is broken


def test_a_root_chain_is_the_run_and_an_llm_span_that_records_no_request_is_none():
    assert g.role_of(span({"openinference.span.kind": "CHAIN"}, parent=None)) == "agent"
    assert g.role_of(span({"openinference.span.kind": "CHAIN"})) == "other"
    assert g.role_of(span({"openinference.span.kind": "LLM", "input.value": "{}"})) == "other"
    assert g.role_of(span({"openinference.span.kind": "LLM", "llm.token_count.prompt": 3})) == "chat"


def test_a_tool_message_marked_error_is_a_failed_call():
    failed = '{"type": "tool", "data": {"content": "no such file", "status": "error"}}'
    assert g.tool_message_failed(failed)
    assert not g.tool_message_failed(failed.replace('"error"', '"success"'))
    assert not g.tool_message_failed("a plain result")


def test_a_tool_span_takes_its_schema_from_the_request_and_no_placeholder_id():
    chat = span({"gen_ai.tool.definitions": '[{"name": "read_file", "parameters": {"required": ["path"]}}]'})
    tool = g.tool_span(
        span({"gen_ai.tool.name": "read_file", "gen_ai.tool.call.id": "<not specified>"}), chat
    )
    assert tool.schema == {"required": ["path"]} and tool.call_id == ""
    assert g.agent_tools(span({"gen_ai.agent.tools": '["read_file"]'})) == ["read_file"]


def test_an_entry_chain_around_agent_runs_is_no_run_and_does_not_take_the_trace_id():
    def at(span_id: str, parent: str | None, kind: str, start: float) -> Span:
        attributes = {"openinference.span.kind": kind}
        if kind == "LLM":
            attributes["llm.token_count.prompt"] = 3
        return Span("t" * 32, span_id, parent, span_id, start, start + 1.0, "UNSET", None, attributes)

    kickoff = at("crew", None, "CHAIN", 0.0)  # a CrewAI crew's kickoff: the agents run under it
    spans = [kickoff, at("a1", "crew", "AGENT", 1.0), at("c1", "a1", "LLM", 1.1)]
    spans += [at("a2", "crew", "AGENT", 3.0), at("c2", "a2", "LLM", 3.1)]
    runs = split_runs(spans)
    assert [run.agent.span_id for run in runs if run.agent] == ["a1", "a2"]
    assert [run.run_id for run in runs] == ["t" * 32, "t" * 32 + "-a2"]
    alone = split_runs([kickoff, at("c0", "crew", "LLM", 0.5)])  # a graph with its turns: the run
    assert len(alone) == 1 and alone[0].agent is kickoff and alone[0].run_id == "t" * 32
