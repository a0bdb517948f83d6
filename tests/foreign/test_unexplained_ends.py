"""An end the source cannot explain is said plainly, never given a guessed cause (issue 26, item 4).

"The trace does not say why the run stopped": a pydantic-ai history that ends on calls without a
result (an exception in the tool, a retry or usage limit and a cancellation all leave it so) is no
``panic_ended_run`` unless the exception the run raised is given; a trace whose agent span is
``ERROR`` and says nothing more, or that ends on calls no request read, says so. An OTLP file that
is ``{}`` says what was expected, not "found keys" with nothing after it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.trace import StatusCode

import loopnb
from loopnb import RecordingError
from tests.golden.foreign import make_otlp as make

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "foreign"
UNSAID = "the trace does not say why the run stopped"
HISTORY_UNSAID = "the history does not say why the run stopped (from_pydantic_ai(..., error=exc) names it)"


def _end(rec: loopnb.Recording) -> list[Any]:
    last = rec.turns.iloc[-1]
    return [last["channel"], last["producer"], last["source_status"], last["error_text"]]


def _reasons(rec: loopnb.Recording) -> list[str]:
    return list(loopnb.audit(rec).disagreements()["reason"])


def test_a_history_ending_on_a_call_without_a_result_guesses_no_crash():
    rec = loopnb.load(GOLDEN / "pydantic-ai" / "crashed.json")
    assert _end(rec) == [
        "hard",
        "source_error",
        "pydantic-ai:unanswered",
        f"the history ends with delete() called and no result: {HISTORY_UNSAID}",
    ]
    assert _reasons(rec) == []  # no panic_ended_run: the history holds no crash


def test_the_exception_the_run_raised_names_the_crash():
    history = json.loads((GOLDEN / "pydantic-ai" / "crashed.json").read_text())
    rec = loopnb.from_pydantic_ai(history, error=KeyError("a"))
    assert _end(rec)[:3] == ["hard", "source_error", "pydantic-ai:unreturned"]
    assert _reasons(rec) == ["panic_ended_run"]


def _legacy_retry_limit() -> list[Any]:
    """What pydantic-ai 1.x's ``capture_run_messages()`` holds when a tool runs out of retries:
    its ``retry-prompt`` parts keep no counter, and the history ends with the call made again."""
    history = json.loads((GOLDEN / "pydantic-ai" / "legacy.json").read_text())
    again = json.loads(json.dumps(history[3]))  # the response that called read_file again
    again["parts"][0]["tool_call_id"] = "call-again"
    return [*history[:5], again]


def test_a_retry_limit_in_a_legacy_history_is_no_panic():
    rec = loopnb.from_pydantic_ai(_legacy_retry_limit())
    assert _end(rec) == [
        "hard",
        "source_error",
        "pydantic-ai:unanswered",
        f"the history ends with read_file() called and no result: {HISTORY_UNSAID}",
    ]
    assert "panic_ended_run" not in _reasons(rec)
    limit = type("UnexpectedModelBehavior", (Exception,), {})(
        "Tool 'read_file' exceeded max retries count of 1"
    )
    ended = loopnb.from_pydantic_ai(_legacy_retry_limit(), error=limit)
    assert _end(ended)[:3] == ["hard", "tool_recovery_exhausted", "pydantic-ai:retries_exceeded"]


def test_a_history_ending_on_a_request_says_it_does_not_know_why():
    history = json.loads((GOLDEN / "pydantic-ai" / "legacy.json").read_text())[:5]
    assert _end(loopnb.from_pydantic_ai(history)) == [
        "hard",
        "source_error",
        "pydantic-ai:unanswered",
        f"the history ends with a request the model never answered: {HISTORY_UNSAID}",
    ]


def _spans(agent_status: StatusCode | None) -> list[Any]:
    """One model request calling ``search``, its tool span, and (unless ``None``) an agent span
    of that status with no description and no exception."""
    tp, exporter = make.provider(27)
    tracer = tp.get_tracer("a-framework")
    agent = None
    if agent_status is not None:
        attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "finder"}
        agent = make._emit(tracer, "invoke_agent finder", attrs, 0, status=agent_status, end=False)
    output = [
        {"role": "assistant", "parts": [{"type": "tool_call", "id": "k1", "name": "search", "arguments": {}}]}
    ]
    chat = {"gen_ai.operation.name": "chat", "gen_ai.output.messages": json.dumps(output)}
    make._emit(tracer, "chat m", chat, 1, parent=agent)
    tool = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "search",
        "gen_ai.tool.call.id": "k1",
    }
    make._emit(tracer, "execute_tool search", tool, 2, parent=agent)
    if agent is not None:
        agent.end(end_time=make.START_NS + 3_000_000)
    tp.shutdown()
    return list(exporter.get_finished_spans())


def test_an_agent_span_that_is_error_and_says_nothing_more_is_said_so():
    rec = loopnb.from_otel(_spans(StatusCode.ERROR))
    assert _end(rec) == [
        "hard",
        "source_error",
        "otlp:ERROR:invoke_agent",
        f"span 'invoke_agent finder' is ERROR and says nothing more: {UNSAID}",
    ]
    assert _reasons(rec) == []


def test_a_trace_ending_on_calls_no_request_read_is_said_so():
    rec = loopnb.from_otel(_spans(None))
    assert _end(rec) == [
        "hard",
        "source_error",
        "otlp:unanswered",
        f"{UNSAID}: it ends on tool calls no model request read, and no agent span says how the run ended",
    ]
    assert _reasons(rec) == []


@pytest.mark.parametrize("value", [{}, [{}]], ids=["object", "list"])
def test_an_otlp_file_of_an_empty_object_says_what_was_expected(tmp_path, value):
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(value))
    with pytest.raises(RecordingError) as caught:
        loopnb.load(path, format="otlp")
    said = str(caught.value)
    assert said.endswith(": expected resourceSpans or a span.to_json() dict, found an empty object")
    assert "found keys" not in said
