"""``loopnb.inject`` on an OpenAI Agents SDK agent: ``agent.clone(tools=...)``, run by the SDK itself."""

from __future__ import annotations

import pytest
from agents import Agent, Runner

import loopnb
from loopnb import faults, inject
from tests.foreign.openai_agents_samples import Collect, Say, read_file, scripted_model

READ = Say(calls=[("c1", "read_file", '{"path": "notes.txt"}')])
AGAIN = Say(calls=[("c2", "read_file", '{"path": "notes.txt"}')])


def agent(*script: Say) -> Agent:
    return Agent(name="notes", model=scripted_model("chat", script), tools=[read_file])


def run(agent_: Agent):
    from agents import set_trace_processors

    collect = Collect()
    set_trace_processors([collect])
    return Runner.run_sync(agent_, "What do the notes say?"), collect.items


def test_an_injected_error_is_read_by_the_model_and_the_run_goes_on():
    original = agent(READ, AGAIN, Say(text="Ship on Friday."))
    flaky = inject(original, {"read_file": faults.error("disk busy").first(1)})
    result, items = run(flaky)
    outputs = [i.output for i in result.new_items if i.type == "tool_call_output_item"]
    assert outputs == ["disk busy", "Release notes: ship on Friday."]
    assert [(i.tool, i.call_id, i.label) for i in flaky.injections] == [
        ("read_file", "c1", 'error("disk busy").first(1)')
    ]
    assert original.tools == [read_file] and not hasattr(original, "injections")
    rec = loopnb.from_openai_agents(items, injected=flaky.injections)
    turns = rec.turns
    assert (
        turns["channel"].tolist()[0] == "soft"
        and turns["injected"].tolist()[0] == 'error("disk busy").first(1)'
    )
    assert turns["injected"].isna().tolist()[1:] == [True] * (len(turns) - 1)


def test_implicit_crash_and_missing_tool():
    quiet = inject(agent(READ, Say(text="done")), {"read_file": faults.empty()})
    result, _ = run(quiet)
    assert [i.output for i in result.new_items if i.type == "tool_call_output_item"] == [""]
    crashing = inject(agent(READ, Say(text="done")), {"read_file": faults.crash(OSError("bad sector"))})
    with pytest.raises(Exception) as info:
        run(crashing)
    assert "bad sector" in str(info.value)
    with pytest.raises(KeyError, match="did you mean 'read_file'"):
        inject(agent(), {"read_fil": faults.error("x")})
