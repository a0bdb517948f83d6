"""The LangGraph reader on a database made now by real graph runs, checked against LangGraph's
own reading of it (``SqliteSaver.get_tuple``).

Needs langgraph, langgraph-checkpoint-sqlite and langchain-core (the ``test`` extra);
``test_langgraph.py`` reads the committed golden without them.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AnyMessage, HumanMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.pregel._messages import _messages_delta_reducer
from typing_extensions import TypedDict

import loopnb
from loopnb.foreign._langgraph import message, text_of
from loopnb.foreign._langgraph_db import checkpoint, threads
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


def test_a_new_database_reads_as_the_golden_does(database):
    rec = loopnb.load(database)
    assert rec.meta["run_ids"] == THREADS
    # LangGraph's words for an unknown tool, and langchain-core's (with pydantic's) for invalid
    # arguments, are theirs to change: those rows must hold a text, the rest agree to the letter
    theirs = {INVALID, UNKNOWN.format("serch"), UNKNOWN.format("grep")}
    fresh, golden = their_words_set_aside(turn_rows(rec), TURNS, text=4, theirs=lambda row: row[4] in theirs)
    assert fresh == golden
    assert disagreement_rows(rec) == DISAGREEMENTS


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


class DeltaState(TypedDict):
    messages: Annotated[list[AnyMessage], DeltaChannel(_messages_delta_reducer)]


def test_a_delta_channel_thread_is_rebuilt_from_its_writes(tmp_path):
    """LangGraph's (beta) ``DeltaChannel`` keeps no value in the checkpoints, only the writes."""
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
