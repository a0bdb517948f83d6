"""What older LangGraph releases wrote, read as the newest: each rule on the smallest input.

The live tests run against the oldest claimed release in its CI lane (``langgraph-0.3`` in
``.ci/frameworks.txt``); these hold the rules where no LangGraph is installed.
"""

from __future__ import annotations

from loopnb.foreign._langgraph import _producer

PYDANTIC_0_3 = (
    "Error: 1 validation error for read_file\npath\n  Field required [type=missing, input_value={'pth': 3},"
    " input_type=dict]\n Please fix your mistakes."
)
"""langgraph 0.3's ``ToolNode`` answering arguments the tool's schema refused."""


def test_langgraph_0_3s_answer_to_arguments_the_schema_refused_is_invalid_arguments():
    assert _producer(PYDANTIC_0_3, "error", "read_file") == "invalid_arguments"


def test_a_validation_error_the_tool_raised_about_something_else_stays_a_tool_error():
    settings = PYDANTIC_0_3.replace("for read_file", "for Settings")
    assert _producer(settings, "error", "read_file") == "tool_error"
    assert _producer("Error: KeyError('x')\n Please fix your mistakes.", "error", "delete") == "tool_error"
