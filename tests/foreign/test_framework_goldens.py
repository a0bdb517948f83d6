"""Other frameworks' traces, read from the goldens their own packages made (no framework needed).

Each golden is made by ``tests/golden/foreign/make_<framework>.py`` from real runs offline, and
the same runs are made again and checked against the same rows by ``test_<framework>_live.py`` in
the framework's own CI lane (``.ci/frameworks.txt``). A row is what loopnb decides of a turn
(channel, producer, the source's status, the tools called) and, for a turn that read an error,
words of ours that its text must hold (our tool's message, our fake server's): the rest of the
text is the framework's, and only required to be there.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import pytest

import loopnb
from loopnb.record import Recording
from tests.foreign.frameworks import last_result
from tests.foreign.test_otlp import plain
from tests.golden.foreign.otlp_files import normalised, spec_json

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "foreign" / "otlp"

Row = tuple[int, int, str, str | None, str | None, str | None, str | None]
"""(run, turn, channel, producer, source_status, tools, words the error text holds or None)."""

SMOLAGENTS = GOLDEN / "smolagents.otlp.json"
SMOLAGENTS_TURNS: list[Row] = [
    (0, 1, "soft", "tool_error", "otlp:OK", "read_file", "file nots.txt not found"),
    (0, 2, "soft", "invalid_arguments", "otlp:OK", "read_file", None),
    (0, 3, "soft", "not_advertised", "otlp:OK", "serch", None),
    (0, 4, "ok", None, "otlp:OK", "read_file", None),
    (0, 5, "ok", None, "otlp:OK", "final_answer", None),
    (1, 1, "soft", "tool_error", "otlp:OK", "read_file", "file a.txt not found"),
    (1, 2, "soft", "tool_error", "otlp:OK", "read_file", "file b.txt not found"),
    (1, 3, "ok", None, "otlp:OK", None, None),  # the step limit: an answer asked for with no tools
    (2, 1, "soft", "tool_error", "otlp:OK", "read_file", "file a.txt not found"),
    (2, 2, "hard", "source_error", "otlp:ERROR:chat", None, "the model's server is down for maintenance"),
]
"""smolagents 1.26 under openinference-instrumentation-smolagents 0.1.43: the run that recovers
(the tool raises, bad arguments, an unknown tool, then a call that works and the answer), the
one that reaches its step limit, the one whose model fails (the run raises)."""

STRANDS_DEFAULT = GOLDEN / "strands_default.otlp.json"
STRANDS_LATEST = GOLDEN / "strands_latest.otlp.json"
STRANDS_TURNS: list[Row] = [
    (0, 1, "soft", "tool_error", "otlp:OK", "read_file", "file nots.txt not found"),
    (0, 2, "soft", "invalid_arguments", "otlp:OK", "read_file", None),
    (0, 3, "soft", "not_advertised", "otlp:OK", "serch", None),
    (0, 4, "ok", None, "otlp:OK", "read_file", None),
    (0, 5, "ok", None, "otlp:OK", None, None),
    (1, 1, "soft", "tool_error", "otlp:OK", "read_file", "file a.txt not found"),
    (1, 2, "hard", "source_error", "otlp:ERROR:chat", None, "the model's server is down for maintenance"),
]
"""Strands Agents 1.62's own spans, in its default shape and with the latest conventions opted
in (the same rows): the run that recovers (the tool raises, bad arguments, an unknown tool, a call
that works, the answer) and the one whose model fails (the run raises). Strands has no step limit."""

ADK = GOLDEN / "adk.otlp.json"
ADK_TURNS: list[Row] = [
    (0, 1, "ok", None, "otlp:UNSET", "read_file", None),  # an error the tool returned: unmarked
    (0, 2, "ok", None, "otlp:UNSET", "read_file", None),
    (0, 3, "ok", None, "otlp:UNSET", None, None),
    (1, 1, "soft", "invalid_arguments", "otlp:UNSET", "read_file", None),
    (1, 2, "ok", None, "otlp:UNSET", None, None),
    (2, 1, "soft", "not_advertised", "otlp:UNSET", "serch", None),
    (2, 2, "ok", None, "otlp:UNSET", None, None),
    (3, 1, "ok", None, "otlp:UNSET", "read_file", None),
    (3, 2, "ok", None, "otlp:UNSET", "read_file", None),  # the call ran; the limit refused the next request
    (3, 3, "hard", "loop_detected", "otlp:ERROR:invoke_agent", None, None),
    (4, 1, "ok", None, "otlp:UNSET", "read_file", None),
    (4, 2, "hard", "source_error", "otlp:ERROR:chat", None, "the model's server is down for maintenance"),
    (5, 1, "hard", "source_error", "otlp:ERROR:execute_tool", "read_file", "the disk is on fire"),
]
"""Google ADK 2.13's own spans with the GenAI conventions' content on them: an error the tool
returns as ADK's guide says (``{"status": "error", ...}``) is a result like any other to the trace
(the one turn of these the trace cannot tell: the model read an error there); bad arguments and an
unknown tool, which ADK answers itself; the step limit (``max_llm_calls``); the model failing; the
tool raising, which ends an ADK run."""
ADK_UNMARKED = {(0, 1)}
"""(run, turn) where the model read an error that ADK's trace does not mark."""

LANGCHAIN = GOLDEN / "langchain.otlp.json"
LANGCHAIN_TURNS: list[Row] = [
    (0, 1, "soft", "tool_error", "otlp:OK", "read_file", "file nots.txt not found"),
    (0, 2, "soft", "invalid_arguments", "otlp:OK", "read_file", None),
    (0, 3, "soft", "not_advertised", "otlp:OK", "serch", None),
    (0, 4, "ok", None, "otlp:OK", "read_file", None),
    (0, 5, "ok", None, "otlp:OK", None, None),
    (1, 1, "ok", None, "otlp:OK", "read_file", None),
    (1, 2, "hard", "loop_detected", "otlp:ERROR:invoke_agent", "read_file", None),
    (2, 1, "ok", None, "otlp:OK", "read_file", None),
    (2, 2, "hard", "source_error", "otlp:ERROR:chat", None, "the model's server is down for maintenance"),
    (3, 1, "hard", "source_error", "otlp:ERROR:execute_tool", "delete", "the disk is on fire"),
]
"""LangChain 1.5's ``create_agent`` under openinference-instrumentation-langchain 0.1.80 (no
AGENT span: the graph's root CHAIN is the run): a ``ToolException`` the tool handles (its span OK,
its ``ToolMessage`` marked ``status: "error"``), bad arguments and an unknown tool (LangGraph's
``ToolNode`` answers both), a call that works and the answer; the recursion limit; the model
failing; a tool's plain exception, which ends the run."""

AGNO = GOLDEN / "agno.otlp.json"
AGNO_TURNS: list[Row] = [
    (0, 1, "soft", "tool_error", "otlp:OK", "read_file", "file nots.txt not found"),
    (0, 2, "soft", "invalid_arguments", "otlp:OK", "read_file", None),
    (0, 3, "soft", "not_advertised", "otlp:OK", "serch", None),
    (0, 4, "ok", None, "otlp:OK", "read_file", None),
    (0, 5, "ok", None, "otlp:OK", None, None),
    (1, 1, "ok", None, "otlp:OK", "read_file", None),
    (1, 2, "ok", None, "otlp:OK", "read_file", None),  # refused at the tool call limit: unmarked
    (1, 3, "ok", None, "otlp:OK", None, None),
    (2, 1, "ok", None, "otlp:OK", "read_file", None),
    (2, 2, "hard", "source_error", "otlp:ERROR:chat", None, "the model's server is down for maintenance"),
]
"""Agno 3.1 under openinference-instrumentation-agno 1.0.15: the run that recovers (the tool
raises, bad arguments, an unknown tool, a call that works, the answer); a call Agno refuses at its
``tool_call_limit`` (the model reads the refusal as the call's result; no span marks it: the one
turn of these the trace cannot tell); the model failing (Agno ends the run with status ``error``,
its agent span saying no more)."""
AGNO_UNMARKED = {(1, 2)}
"""(run, turn) where the model read an error that Agno's trace does not mark."""

LLAMAINDEX = GOLDEN / "llamaindex.otlp.json"
LLAMAINDEX_TURNS: list[Row] = [
    (0, 1, "soft", "tool_error", "otlp:OK", "read_file", "file nots.txt not found"),
    (0, 2, "soft", "invalid_arguments", "otlp:OK", "read_file", None),
    (0, 3, "soft", "not_advertised", "otlp:OK", "serch", None),
    (0, 4, "ok", None, "otlp:OK", "read_file", None),
    (0, 5, "ok", None, "otlp:OK", None, None),
    (1, 1, "hard", "source_error", "otlp:ERROR:invoke_agent", "read_file", None),  # the step limit
    (2, 1, "ok", None, "otlp:OK", "read_file", None),
    (2, 2, "hard", "source_error", "otlp:ERROR:chat", None, "the model's server is down for maintenance"),
]
"""LlamaIndex 0.14's ``FunctionAgent`` under openinference-instrumentation-llama-index 4.6 (no
AGENT span: the root CHAIN ``FunctionAgent.run`` is the run; ``_prepare_chat_with_tools``, an LLM
span that records no request, is none): the run that recovers; ``max_iterations`` (a
``WorkflowRuntimeError``, a class that does not say it is a step limit: ``source_error``, its text
saying so); the model failing."""

CREWAI = GOLDEN / "crewai.otlp.json"
CREWAI_TURNS: list[Row] = [
    (0, 1, "soft", "tool_error", "otlp:OK", "read_file", "file nots.txt not found"),
    (0, 2, "soft", "invalid_arguments", "otlp:OK", "read_file", None),
    (0, 3, "soft", "not_advertised", "otlp:OK", "serch", None),  # CrewAI answers it: no tool span
    (0, 4, "ok", None, "otlp:OK", "read_file", None),
    (0, 5, "ok", None, "otlp:OK", None, None),
    (1, 1, "soft", "tool_error", "otlp:OK", "read_file", "file a.txt not found"),
    (1, 2, "soft", "tool_error", "otlp:OK", "read_file", "file b.txt not found"),
    (1, 3, "ok", None, "otlp:OK", None, None),  # max_iter: the final answer asked for with no tools
    (2, 1, "ok", None, "otlp:OK", "read_file", None),
    (2, 2, "hard", "source_error", "otlp:ERROR:chat", None, "the model's server is down for maintenance"),
    (3, 1, "ok", None, "otlp:OK", "read_file", None),
    (3, 2, "ok", None, "otlp:OK", None, None),
    (4, 1, "ok", None, "otlp:OK", None, None),
    (5, 1, "ok", None, "otlp:OK", "read_file", None),
    (5, 2, "ok", None, "otlp:OK", "read_file", None),  # refused at max_usage_count: no span, unmarked
    (5, 3, "ok", None, "otlp:OK", None, None),
]
"""CrewAI 1.15 under openinference-instrumentation-crewai 1.1 (a crew's kickoff CHAIN, an AGENT
span per task, a TOOL span per tool run) with openinference-instrumentation-openai 0.1 for the
model's requests: the crew that recovers (the tool raises, bad arguments, an unknown tool, a call
that works, the answer); ``max_iter`` (CrewAI asks for the final answer with no tools offered: no
span marks the limit); the model failing (CrewAI tries the task twice more from the start, each
request failing, then the kickoff raises: one hard turn); a crew of two agents (the kickoff around
their two runs is no run); a call CrewAI refuses at the tool's ``max_usage_count`` (the model reads
the refusal as the call's result; no span: the one turn of these the trace cannot tell)."""
CREWAI_UNMARKED = {(5, 2)}
"""(run, turn) where the model read an error that CrewAI's trace does not mark."""

GOLDENS = {
    "adk": (ADK, ADK_TURNS),
    "agno": (AGNO, AGNO_TURNS),
    "crewai": (CREWAI, CREWAI_TURNS),
    "llamaindex": (LLAMAINDEX, LLAMAINDEX_TURNS),
    "langchain": (LANGCHAIN, LANGCHAIN_TURNS),
    "smolagents": (SMOLAGENTS, SMOLAGENTS_TURNS),
    "strands-default": (STRANDS_DEFAULT, STRANDS_TURNS),
    "strands-latest": (STRANDS_LATEST, STRANDS_TURNS),
}


def rows(rec: Recording) -> list[tuple[Any, ...]]:
    """Each turn as (run, turn, channel, producer, source_status, tools, error_text)."""
    runs = {r: i for i, r in enumerate(rec.meta["run_ids"])}
    cols = ["run_id", "turn", "channel", "producer", "source_status", "tools", "error_text"]
    return [(runs[r[0]], *map(plain, r[1:])) for r in rec.turns[cols].itertuples(index=False)]


def check(rec: Recording, expected: list[Row]) -> None:
    """``rec``'s turns are ``expected``: every decision to the letter; a turn that read an error
    has a text, holding our words where the row names them; a turn that read none has no text."""
    found = rows(rec)
    assert [r[:6] for r in found] == [r[:6] for r in expected]
    for got, want in zip(found, expected, strict=True):
        text, words = got[6], want[6]
        if want[2] == "ok":
            assert text is None, got
        else:
            assert isinstance(text, str) and text.strip(), f"no text the model read: {got}"
            assert words is None or words in text, got


def check_made(spans: Sequence[Any], path: Path, expected: list[Row]) -> None:
    """Spans a live test made now read as the golden's rows: written at ``path`` as a real
    exporter writes them, and as the span objects themselves."""
    path.write_text(json.dumps(spec_json(normalised(spans))), encoding="utf-8")
    check(loopnb.load(path), expected)
    check(loopnb.from_otel(spans), expected)


def check_tool_messages(
    runs: Sequence[Any], found: list[tuple[Any, ...]], unmarked: Collection[Any] = ()
) -> None:
    """Each turn of each run (whose ``requests`` the fake server kept) against the tool message
    the next request gave the model: a soft turn's error text is exactly that message, an ok
    turn's call read our tool's output; a turn in ``unmarked`` (``(run, turn)``) was refused
    without the trace saying so."""
    for index, run in enumerate(runs):
        turns = [r for r in found if r[0] == index]
        for number, body in enumerate(run.requests[1:], 1):
            turn, read = turns[number - 1], last_result(body)
            if (index, number) in unmarked:  # refused, not run: the trace does not say so
                assert turn[2] == "ok" and read != "buy milk"
            elif turn[2] == "soft":
                assert turn[6] == read  # exactly what the model was given back
            else:
                assert (turn[2], read) == ("ok", "buy milk")  # our tool's output


@pytest.mark.parametrize("framework", sorted(GOLDENS))
def test_a_frameworks_golden_reads_turn_by_turn(framework):
    path, expected = GOLDENS[framework]
    check(loopnb.load(path), expected)


def test_smolagents_steps_give_what_the_model_read_and_why():
    rec = loopnb.load(SMOLAGENTS)
    assert rec.meta["source"]["version"].startswith("openinference.instrumentation.smolagents ")
    texts = rows(rec)
    # what the model read is smolagents' message for the step, not the tool's bare exception
    assert texts[0][6] != "FileNotFoundError: file nots.txt not found; the folder holds notes.txt"
    assert "file nots.txt not found" in texts[0][6] and texts[0][6].startswith("Error:")
    # the unknown tool's text names it; the model's failure ends the run with its own words
    assert "serch" in texts[2][6]
    # a run that recovered has no disagreement; the run whose model failed has no agent span
    # (OpenInference never ends it), so its tool error cannot be told from a run-ending one
    reasons = loopnb.audit(rec).disagreements()[["run_id", "turn", "reason"]]
    assert reasons.to_dict("records") == [
        {"run_id": rec.meta["run_ids"][2], "turn": 1, "reason": "soft_shown_as_hard"}
    ]


@pytest.mark.parametrize("path", [STRANDS_DEFAULT, STRANDS_LATEST], ids=["default", "latest"])
def test_strands_calls_it_answered_itself_are_told_apart(path):
    # Strands makes an ERROR tool span for every call it answers: the tool's own error, arguments
    # that break the tool's schema (recorded on the span), a name the agent does not have
    rec = loopnb.load(path)
    assert rec.meta["source"]["version"].startswith("strands.telemetry")
    soft = rec.turns[rec.turns["channel"] == "soft"]
    assert soft["producer"].tolist() == ["tool_error", "invalid_arguments", "not_advertised", "tool_error"]
    # what the model read is Strands' tool result, not the bare exception the tool span records
    assert soft["error_text"].iloc[0].endswith("file nots.txt not found; the folder holds notes.txt")
    assert soft["error_text"].iloc[0] != "file nots.txt not found; the folder holds notes.txt"
    assert loopnb.audit(rec).disagreements().empty


def test_crewai_reads_what_the_model_read_and_the_kickoff_is_no_run():
    rec = loopnb.load(CREWAI)
    assert rec.meta["source"]["version"].startswith("openinference.instrumentation.crewai ")
    found = rows(rec)
    # what the model read is CrewAI's message for the call, not the bare exception the tool span records
    bare = "file nots.txt not found; the folder holds notes.txt"
    assert found[0][6] != bare and found[0][6].endswith(bare)
    # six runs: an agent's task each; the crews' kickoff CHAIN spans are none (the two agents'
    # crew is one trace, its second run named after its agent span)
    ids = rec.meta["run_ids"]
    assert len(ids) == 6 and ids[4].startswith(ids[3] + "-")
    # the unknown tool and the call refused at its usage limit have no tool span (CrewAI answers
    # both itself): said, and nothing else is
    reasons = loopnb.audit(rec).disagreements()[["run_id", "turn", "tool", "reason"]]
    assert reasons.to_dict("records") == [
        {"run_id": ids[0], "turn": 3, "tool": "serch", "reason": "missing_tool_record"},
        {"run_id": ids[5], "turn": 2, "tool": "read_file", "reason": "missing_tool_record"},
    ]
