"""The reading rules the new frameworks' traces needed, each on the smallest span that shows it."""

from __future__ import annotations

from typing import Any

import pytest

from loopnb.foreign import _otlp_genai as g
from loopnb.foreign._otlp_calls import misfit
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
