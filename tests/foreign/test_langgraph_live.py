"""The LangGraph reader on a database made now by real graph runs, checked against LangGraph's
own reading of it (``SqliteSaver.get_tuple``).

Needs langgraph, langgraph-checkpoint-sqlite and langchain-core (the ``test`` extra);
``test_langgraph.py`` reads the committed golden without them.
"""

from __future__ import annotations

import importlib
import sqlite3
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AnyMessage, HumanMessage
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from typing_extensions import TypedDict

import loopnb
from loopnb.foreign._langgraph import message, text_of
from loopnb.foreign._langgraph_db import checkpoint, threads
from tests.foreign.frameworks import newer_than
from tests.foreign.test_langgraph import (
    DISAGREEMENTS,
    INVALID,
    THREADS,
    TURNS,
    UNKNOWN,
    disagreement_rows,
    turn_rows,
)
from tests.foreign.their_words import their_words_set_aside
from tests.golden.foreign import make_langgraph as make


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make.make(tmp_path_factory.mktemp("langgraph") / "threads.sqlite")


def what_langgraph_did(database: Path) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The golden's turns and disagreements, with the ``crashed`` thread's as this LangGraph ran
    it, read from its own state: newer ``ToolNode``s let the tool's ``KeyError`` through (the run
    ends on it, as in the golden); langgraph 0.3's answered it as an error the model read, and the
    model answered."""
    conn = sqlite3.connect(database, check_same_thread=False)
    state = SqliteSaver(conn).get_tuple({"configurable": {"thread_id": "crashed"}})
    conn.close()
    assert state is not None
    answers = [m for m in state.checkpoint["channel_values"]["messages"] if m.type == "tool"]
    if not answers:
        return list(TURNS), list(DISAGREEMENTS)
    (error,) = answers
    assert error.status == "error" and state.checkpoint["channel_values"]["messages"][-1].type == "ai"
    read = [(1, 1, "soft", "tool_error", error.content, None, "delete", "fake-model", 20)]
    read.append((1, 2, "ok", None, None, None, None, "fake-model", 30))
    turns = [row for row in TURNS if row[0] < 1] + read + [row for row in TURNS if row[0] > 1]
    return turns, [row for row in DISAGREEMENTS if row[0] != 1]  # no panic ended it


def test_a_new_database_reads_as_the_golden_does(database):
    rec = loopnb.load(database)
    assert rec.meta["run_ids"] == THREADS
    # LangGraph's words for an unknown tool, and langchain-core's (with pydantic's) for invalid
    # arguments, are theirs to change: those rows must hold a text, the rest agree to the letter
    theirs = {INVALID, UNKNOWN.format("serch"), UNKNOWN.format("grep")}
    turns, disagreements = what_langgraph_did(database)
    fresh, golden = their_words_set_aside(turn_rows(rec), turns, text=4, theirs=lambda row: row[4] in theirs)
    assert fresh == golden
    assert disagreement_rows(rec) == disagreements


def test_the_messages_and_pending_writes_are_langgraphs_own(database):
    conn = sqlite3.connect(database, check_same_thread=False)
    saver = SqliteSaver(conn)
    found, _ = threads(database)
    for thread in found:
        ours = checkpoint(thread.checkpoints[-1], thread.thread_id, database)["channel_values"]["messages"]
        theirs = saver.get_tuple({"configurable": {"thread_id": thread.thread_id}})
        assert theirs is not None
        expected = theirs.checkpoint["channel_values"]["messages"]
        decoded = [message(m) for m in ours]
        assert [(m.kind, m.id) for m in decoded if m] == [(m.type, m.id) for m in expected]
        assert [text_of(m.value.get("content")) for m in decoded if m] == [
            text_of(m.content) for m in expected
        ]
        pending = {w[1] for w in theirs.pending_writes or ()}
        ours_pending = {w.channel for w in thread.writes if w.checkpoint_id == thread.checkpoints[-1].id}
        assert pending == ours_pending, thread.thread_id
    conn.close()


def test_a_delta_channel_thread_is_rebuilt_from_its_writes(tmp_path):
    """LangGraph's (beta) ``DeltaChannel`` keeps no value in the checkpoints, only the writes."""
    delta = newer_than("langgraph-0.3", "langgraph.channels.delta", "DeltaChannel")
    reducer = importlib.import_module("langgraph.pregel._messages")._messages_delta_reducer

    # the functional form: with postponed annotations a class body's would be read in the module
    DeltaState = TypedDict(  # noqa: UP013
        "DeltaState", {"messages": Annotated[list[AnyMessage], delta.DeltaChannel(reducer)]}
    )

    conn = sqlite3.connect(tmp_path / "delta.sqlite", check_same_thread=False)
    saver = SqliteSaver(conn)
    chat = FakeMessagesListChatModel(
        responses=[make.call("read_file", {"path": "nots.txt"}, "c1", 0), make.say("done", 1)]
    )

    def agent(state: DeltaState) -> dict[str, Any]:
        return {"messages": [chat.invoke(state["messages"])]}

    g = StateGraph(DeltaState)
    g.add_node("agent", agent)
    g.add_node("tools", ToolNode(make.TOOLS))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    g.compile(checkpointer=saver).invoke(
        {"messages": [HumanMessage("hi", id="h")]}, {"configurable": {"thread_id": "d"}}
    )
    conn.close()
    rec = loopnb.load(tmp_path / "delta.sqlite")
    assert [r[1:4] for r in turn_rows(rec)] == [(1, "soft", "tool_error"), (2, "ok", None)]
    started = rec.event_objects[0]
    assert started.task == "hi" and started.settings["messages_from"] == "writes"
