"""LangGraph's prebuilt agent (``create_react_agent``) ends a run with its step guard: when too few
steps remain for the tool calls the model asked for, it stores "Sorry, need more steps to process
this request." in the model's place. Runs made here with the real package, read against what
LangGraph's own ``SqliteSaver.get_tuple`` says the thread holds.
"""

from __future__ import annotations

import sqlite3
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.sqlite import SqliteSaver

import loopnb
from loopnb.foreign._langgraph import STEP_GUARD, STEP_GUARD_ENDED
from tests.golden.foreign.make_langgraph import call, read_file, say


class Scripted(FakeMessagesListChatModel):
    """A fake chat model the prebuilt agent can bind tools to (it answers from its script)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Scripted:
        return self


def run(path: Path, responses: list[BaseMessage], recursion_limit: int) -> list[BaseMessage]:
    """One ``create_react_agent`` run into a new database at ``path``; what LangGraph's own
    reading of the thread holds."""
    with warnings.catch_warnings():  # create_react_agent moved to langchain.agents in langgraph 1.0
        warnings.simplefilter("ignore", DeprecationWarning)
        from langgraph.prebuilt import create_react_agent

        conn = sqlite3.connect(path, check_same_thread=False)
        agent = create_react_agent(Scripted(responses=responses), [read_file], checkpointer=SqliteSaver(conn))
    config: Any = {"configurable": {"thread_id": "guarded"}, "recursion_limit": recursion_limit}
    agent.invoke({"messages": [HumanMessage("read the notes forever", id="h1")]}, config)
    state = SqliteSaver(conn).get_tuple(config)
    conn.commit()
    conn.close()
    assert state is not None
    return list(state.checkpoint["channel_values"]["messages"])


def rows(path: Path) -> list[tuple[Any, ...]]:
    t = loopnb.load(path).turns
    cols = ["turn", "channel", "producer", "tools", "error_text", "source_status", "input_tokens"]
    return [tuple(None if pd.isna(v) else v for v in row) for row in t[cols].itertuples(index=False)]


def test_the_step_guard_ends_the_run_on_a_turn_of_its_own(tmp_path):
    path = tmp_path / "guarded.sqlite"
    script = [call("read_file", {"path": "notes.txt"}, f"l{n}", n) for n in range(10)]
    held = run(path, script, recursion_limit=6)
    # LangGraph's own reading: the model's third reply (calls) was replaced by the guard's text,
    # under the reply's id, with nothing else of it kept
    last = held[-1]
    assert isinstance(last, AIMessage) and last.content == STEP_GUARD and not last.tool_calls
    assert last.id == script[2].id and not last.response_metadata and last.usage_metadata is None
    answered = [m for m in held if isinstance(m, AIMessage) and m.tool_calls]
    assert [m.id for m in answered] == [m.id for m in script[: len(answered)]]
    expected = [
        (n + 1, "ok", None, "read_file", None, "langgraph:success", 20 + 10 * n) for n in range(len(answered))
    ]
    guard = (len(answered) + 1, "hard", "loop_detected", None, STEP_GUARD_ENDED, "langgraph:step_guard", None)
    got = rows(path)
    # a turn's own status is its calls' (each ToolMessage's "success"); the guard's turn has none
    assert [(*r[:5], r[6]) for r in got] == [(*r[:5], r[6]) for r in [*expected, guard]]
    assert got[-1][5] == "langgraph:step_guard"
    rec = loopnb.load(path)
    ended = [e for e in rec.event_objects if e.kind == "run_finished"]
    assert [(e.outcome, e.producer) for e in ended] == [("hard", "loop_detected")]
    assert loopnb.audit(rec).disagreements().empty


def test_a_model_that_says_the_guards_words_itself_ends_the_run_as_usual(tmp_path):
    """The guard keeps nothing a model's reply carries; a reply with the same text does."""
    path = tmp_path / "said.sqlite"
    held = run(
        path, [call("read_file", {"path": "notes.txt"}, "c1", 0), say(STEP_GUARD, 1)], recursion_limit=25
    )
    assert held[-1].content == STEP_GUARD and held[-1].response_metadata  # the model's, with its metadata
    got = rows(path)
    assert [r[:3] for r in got] == [(1, "ok", None), (2, "ok", None)]
    ended = [e for e in loopnb.load(path).event_objects if e.kind == "run_finished"]
    assert [(e.outcome, e.output) for e in ended] == [("ok", STEP_GUARD)]


@pytest.mark.parametrize("limit", [4, 8])
def test_the_guard_fires_on_whichever_turn_the_budget_runs_out(tmp_path, limit):
    path = tmp_path / f"limit{limit}.sqlite"
    held = run(path, [call("read_file", {"path": "notes.txt"}, f"l{n}", n) for n in range(10)], limit)
    answered = sum(1 for m in held if isinstance(m, AIMessage) and m.tool_calls)
    got = rows(path)
    assert len(got) == answered + 1 and [r[1] for r in got] == ["ok"] * answered + ["hard"]
    assert got[-1][2] == "loop_detected"
