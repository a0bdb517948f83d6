"""Regenerate the LangGraph golden under ``tests/golden/foreign/langgraph/``::

    PYTHONPATH=. python tests/golden/foreign/make_langgraph.py

``threads.sqlite`` is a real ``SqliteSaver`` database: each thread a run of a scripted LangGraph
graph (a ``FakeMessagesListChatModel`` answering with a fixed list of messages, LangGraph's
``ToolNode`` running real tools, ``tools_condition`` between them):

- ``recovered``: a tool error the model read (``ToolException``), an unknown tool, arguments the
  tool could not be invoked with, a success, the answer;
- ``crashed``: a tool raises ``KeyError``, which ``ToolNode`` lets through: a pending ``__error__``
  (langgraph 0.3's ``ToolNode`` answered it as an error the model read, and the model answers);
- ``interrupted``: a tool asks for approval (``interrupt()``): a pending ``__interrupt__``;
- ``model_failed``: the model raises on its second request, after a tool answered;
- ``looping``: a model that never stops calling, ended by the graph's recursion limit;
- ``legacy``: a hand-written tool node that answers as older ``ToolNode``s did (no ``status``).

The database is left in rollback-journal mode (``SqliteSaver`` turns WAL on, and SQLite adds
``-wal`` and ``-shm`` files beside a WAL database even to read it). The ids and times are the
run's own (uuid6 checkpoint ids, uuid4 task ids): the file differs each time it is made;
``tests/foreign/test_langgraph.py`` checks what it holds, not its bytes.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import ToolException, tool
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import interrupt

OUT = Path(__file__).resolve().parent / "langgraph"
MODEL = "fake-model"


@tool
def read_file(path: str) -> str:
    """Read a file."""
    if path != "notes.txt":
        raise ToolException(f"file {path} not found; did you mean notes.txt?")
    return "hi"


read_file.handle_tool_error = True


@tool
def delete(path: str) -> str:
    """Delete a file (after a person approves, when ``approve`` is asked)."""
    raise KeyError(path)


@tool
def publish(path: str) -> str:
    """Publish a file once a person approves."""
    answer = interrupt({"question": f"publish {path}?"})
    return f"published {path}" if answer == "yes" else "not published"


TOOLS = [read_file, delete, publish]


def call(name: str, args: dict[str, Any], call_id: str, n: int) -> AIMessage:
    return AIMessage(
        content="",
        id=f"ai-{call_id}",
        tool_calls=[{"name": name, "args": args, "id": call_id}],
        response_metadata={"model_name": MODEL},
        usage_metadata={"input_tokens": 20 + 10 * n, "output_tokens": 5, "total_tokens": 25 + 10 * n},
    )


def say(text: str, n: int) -> AIMessage:
    return AIMessage(
        content=text,
        id=f"ai-final-{n}",
        response_metadata={"model_name": MODEL},
        usage_metadata={"input_tokens": 20 + 10 * n, "output_tokens": 7, "total_tokens": 27 + 10 * n},
    )


class Failing(FakeMessagesListChatModel):
    """A fake chat model that raises once its scripted messages run out (a model outage)."""

    asked: int = 0

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        self.asked += 1
        if self.asked > len(self.responses):
            raise RuntimeError("the model is unavailable (503)")
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def graph(
    saver: SqliteSaver,
    responses: Sequence[BaseMessage],
    *,
    tools_node: Any = None,
    model: type[FakeMessagesListChatModel] = FakeMessagesListChatModel,
) -> Any:
    chat = model(responses=list(responses))

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [chat.invoke(state["messages"])]}

    g = StateGraph(MessagesState)
    g.add_node("agent", agent)
    g.add_node("tools", tools_node or ToolNode(TOOLS))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    return g.compile(checkpointer=saver)


def legacy_tools(state: MessagesState) -> dict[str, Any]:
    """Answers as older ``ToolNode``s did: an unknown tool's error with no ``status``."""
    last = state["messages"][-1]
    out = []
    for c in last.tool_calls:  # type: ignore[attr-defined]
        if c["name"] == "read_file":
            out.append(ToolMessage(read_file.invoke(c["args"]), tool_call_id=c["id"], name="read_file"))
        else:
            text = f"Error: {c['name']} is not a valid tool, try one of [read_file, delete, publish]."
            out.append(ToolMessage(text, tool_call_id=c["id"], name=c["name"]))
    return {"messages": out}


def _run(app: Any, thread: str, prompt: Sequence[BaseMessage], **config: Any) -> None:
    with contextlib.suppress(Exception):  # a hard end is part of the sample: the database keeps it
        app.invoke({"messages": list(prompt)}, {"configurable": {"thread_id": thread}, **config})


def make(path: Path) -> Path:
    """Write every sample thread into a new database at ``path``."""
    path.unlink(missing_ok=True)
    conn = sqlite3.connect(path, check_same_thread=False)
    saver = SqliteSaver(conn)
    system = SystemMessage("You read files for the user.", id="system")
    recovered = [
        call("read_file", {"path": "nots.txt"}, "c1", 0),
        call("serch", {"q": "notes"}, "c2", 1),
        call("read_file", {"pth": 3}, "c3", 2),
        call("read_file", {"path": "notes.txt"}, "c4", 3),
        say("the notes say hi", 4),
    ]
    _run(graph(saver, recovered), "recovered", [system, HumanMessage("read the notes", id="human-1")])
    # langgraph 0.3's ToolNode answers the KeyError as an error the model reads: it answers then
    crashed = [call("delete", {"path": "x"}, "d1", 0), say("x could not be deleted", 1)]
    _run(graph(saver, crashed), "crashed", [HumanMessage("delete x", id="h2")])
    _run(
        graph(saver, [call("publish", {"path": "notes.txt"}, "p1", 0)]),
        "interrupted",
        [HumanMessage("publish")],
    )
    failing = graph(saver, [call("read_file", {"path": "notes.txt"}, "m1", 0)], model=Failing)
    _run(failing, "model_failed", [HumanMessage("read the notes", id="h4")])
    looping = graph(saver, [call("read_file", {"path": "notes.txt"}, f"l{n}", n) for n in range(10)])
    _run(looping, "looping", [HumanMessage("read the notes forever", id="h5")], recursion_limit=4)
    old = [
        call("grep", {"pattern": "hi"}, "g1", 0),
        call("read_file", {"path": "notes.txt"}, "g2", 1),
        say("hi", 2),
    ]
    _run(graph(saver, old, tools_node=legacy_tools), "legacy", [HumanMessage("find hi", id="h6")])
    conn.commit()
    conn.execute("PRAGMA journal_mode=DELETE")  # SqliteSaver's WAL would make readers add side files
    conn.execute("PRAGMA page_size=1024")  # a smaller file
    conn.execute("VACUUM")
    conn.close()
    return path


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    path = make(OUT / "threads.sqlite")
    print(f"wrote {path} ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
