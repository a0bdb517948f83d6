"""``loopnb.inject`` on a list of LangChain tools, run by LangGraph's own ``ToolNode``."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from loopnb import faults, inject


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


@tool
def list_dir() -> str:
    """List the folder."""
    return "a.txt"


def call(tools, n: int = 1) -> list[ToolMessage]:
    """Run a one-node graph of ``ToolNode(tools)`` on n calls of read_file, one at a time."""
    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    app = graph.compile()
    out = []
    for i in range(n):
        ask = AIMessage("", tool_calls=[{"name": "read_file", "args": {"path": "a.txt"}, "id": f"c{i}"}])
        out.append(app.invoke({"messages": [ask]})["messages"][-1])
    return out


def test_an_injected_error_is_a_tool_error_message_then_the_real_tool_answers():
    tools = inject([read_file, list_dir], {"read_file": faults.error("disk busy").first(2)})
    first, second, third = call(tools, 3)
    assert (first.status, first.content) == ("error", "disk busy")
    assert second.status == "error" and (third.status, third.content) == ("success", "contents of a.txt")
    assert [(i.tool, i.call) for i in tools.injections] == [("read_file", 1), ("read_file", 2)]
    assert tools[1] is list_dir and read_file.invoke({"path": "b"}) == "contents of b"  # originals untouched
    assert tools[0].name == "read_file" and tools[0].args == read_file.args


def test_implicit_and_crash_faults():
    (quiet,) = call(inject([read_file], {"read_file": faults.wrong("0 bytes")}))
    assert (quiet.status, quiet.content) == ("success", "0 bytes")
    with pytest.raises(OSError, match="bad sector"):
        call(inject([read_file], {"read_file": faults.crash(OSError("bad sector"))}))
