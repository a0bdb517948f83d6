"""The pydantic-ai reader on runs made here by the real package (``FunctionModel``, real tools):
what every claimed version must do, so this runs in the ``pydantic-ai-1.0`` lane too
(``test_pydantic_ai_newest_live.py`` holds what needs the newest pydantic-ai's parts).

Needs ``pydantic-ai-slim`` (the ``test`` extra): the goldens' tests in ``test_pydantic_ai.py``
run without it.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pandas as pd
from pydantic_ai import Agent, ModelRetry, UnexpectedModelBehavior, UsageLimitExceeded, capture_run_messages
from pydantic_ai.messages import ModelMessagesTypeAdapter, ModelResponse
from pydantic_ai.tools import DeferredToolRequests
from pydantic_ai.usage import UsageLimits

import loopnb
from tests.golden.foreign import make_pydantic_ai as make

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "foreign" / "pydantic-ai"
COLUMNS = [
    "turn",
    "channel",
    "producer",
    "tools",
    "error_text",
    "source_status",
    "recovery_attempts",
    "model",
]
COLUMNS += ["n_calls", "n_errors", "input_tokens", "output_tokens", "reply_text", "dropped"]


def rows(frame: pd.DataFrame, columns: list[str]) -> list[list[object]]:
    return [[None if pd.isna(v) else v for v in row] for row in frame[columns].itertuples(index=False)]


def test_objects_json_dicts_and_the_result_itself_read_alike():
    agent = make._notes_agent([make.call("read_file", {"path": "nots.txt"}, "c1"), make.say("done")])
    result = agent.run_sync("Read it.")
    forms = [
        result,
        result.all_messages(),
        result.all_messages_json(),
        result.all_messages_json().decode(),
        json.loads(result.all_messages_json()),
    ]
    frames = [rows(loopnb.from_pydantic_ai(form).turns, [*COLUMNS, "run_id"]) for form in forms]
    assert all(frame == frames[0] for frame in frames)
    assert [r[1] for r in frames[0]] == ["soft", "ok"]


def _failed(agent, **kwargs):
    with capture_run_messages() as messages:
        try:
            agent.run_sync("go", **kwargs)
        except Exception as exc:
            return messages, exc
    raise AssertionError("the run should have failed")


def _end(rec) -> list[object]:
    last = rec.turns.iloc[-1]
    return [last["channel"], last["producer"], last["source_status"], last["error_text"]]


def test_a_request_limit_ends_the_run_on_a_turn_of_its_own_as_loop_detected():
    agent = make._notes_agent([make.call("read_file", {"path": "notes.txt"}, f"c{i}") for i in range(3)])
    messages, exc = _failed(agent, usage_limits=UsageLimits(request_limit=2))
    assert isinstance(exc, UsageLimitExceeded)
    rec = loopnb.from_pydantic_ai(messages, error=exc)
    assert list(rec.turns["channel"]) == ["ok", "ok", "hard"]
    assert _end(rec) == ["hard", "loop_detected", "pydantic-ai:usage_limit", f"UsageLimitExceeded: {exc}"]
    assert rec.turns["tools"].isna().iloc[-1]  # the run stopped before the model answered again
    # the history alone cannot say why the run stopped there
    alone = loopnb.from_pydantic_ai(messages)
    assert _end(alone)[:3] == ["hard", "source_error", "pydantic-ai:unanswered"]


def test_a_token_limit_ends_the_run_on_the_reply_that_passed_it_as_context_exceeded():
    agent = make._notes_agent([make.call("read_file", {"path": "notes.txt"}, f"c{i}") for i in range(3)])
    messages, exc = _failed(agent, usage_limits=UsageLimits(total_tokens_limit=100))
    rec = loopnb.from_pydantic_ai(messages, error=exc)
    assert list(rec.turns["channel"]) == ["ok", "hard"]
    assert _end(rec)[:3] == ["hard", "context_exceeded", "pydantic-ai:usage_limit"]
    replies, last = sum(isinstance(m, ModelResponse) for m in messages), rec.turns["tools"].iloc[-1]
    if replies == 2:  # newer pydantic-ai keeps the reply that passed the limit
        assert last == "read_file"
    else:  # pydantic-ai-slim 1.0 raised before keeping it
        assert replies == 1 and pd.isna(last)


def test_retries_past_the_budget_are_tool_recovery_exhausted_with_or_without_the_exception():
    messages, exc = _failed(
        make._notes_agent(
            [make.call("read_file", {"path": f"{i}.txt"}, f"c{i}") for i in range(3)], retries=1
        )
    )
    assert isinstance(exc, UnexpectedModelBehavior)
    given, inferred = loopnb.from_pydantic_ai(messages, error=exc), loopnb.from_pydantic_ai(messages)
    assert _end(given) == [
        "hard",
        "tool_recovery_exhausted",
        "pydantic-ai:retries_exceeded",
        f"UnexpectedModelBehavior: {exc}",
    ]
    if _retried_outcomes(messages):  # the history says a call was retried, and how often it may be
        assert _end(inferred)[:3] == ["hard", "tool_recovery_exhausted", "pydantic-ai:retries_exceeded"]
    else:  # pydantic-ai-slim 1.0's retry prompts do not: the history alone cannot say why it stopped
        assert _end(inferred)[:3] == ["hard", "source_error", "pydantic-ai:unanswered"]
    assert loopnb.audit(inferred).disagreements().empty  # no panic is guessed where none happened


def _retried_outcomes(messages) -> bool:
    """Whether the history marks a tool's return ``retried`` (newer pydantic-ai) rather than
    answering it with a ``retry-prompt`` part (pydantic-ai-slim 1.0)."""
    dumped = ModelMessagesTypeAdapter.dump_python(messages, mode="json")
    return any(part.get("outcome") == "retried" for message in dumped for part in message["parts"])


def test_output_retries_past_the_budget_need_the_exception_to_be_seen():
    responses = make.scripted([make.say("a"), make.say("b"), make.say("c")])
    if "output_retries" in inspect.signature(Agent).parameters:  # pydantic-ai-slim 1.0's spelling
        agent = Agent(responses, output_retries=1)
    else:
        agent = Agent(responses, retries={"output": 1})

    @agent.output_validator
    def french(output: str) -> str:
        raise ModelRetry("answer in French")

    messages, exc = _failed(agent)
    rec = loopnb.from_pydantic_ai(messages, error=exc)
    assert rows(rec.turns, ["channel", "producer"]) == [
        ["soft", "completion_rejected"],
        ["hard", "tool_recovery_exhausted"],
    ]
    # a history whose last answer was accepted looks the same: without the exception, it ended ok
    assert list(loopnb.from_pydantic_ai(messages).turns["channel"]) == ["soft", "ok"]


def test_a_tool_crash_with_its_exception_is_source_error_and_a_panic_that_ended_the_run():
    messages, exc = _failed(make._notes_agent([make.call("delete", {"path": "a"}, "c1")]))
    rec = loopnb.from_pydantic_ai(messages, error=exc)
    assert _end(rec) == ["hard", "source_error", "pydantic-ai:unreturned", "KeyError: 'a'"]
    rows_ = loopnb.audit(rec).disagreements()
    assert list(rows_["reason"]) == ["panic_ended_run"] and rows_["tool"].iloc[0] == "delete"


def test_a_run_paused_for_approval_is_user_input_required_when_the_result_says_so():
    agent = Agent(
        make.scripted([make.call("remove_all", {"root": "/"}, "k1")]), output_type=[str, DeferredToolRequests]
    )

    @agent.tool_plain(requires_approval=True)
    def remove_all(root: str) -> str:
        return root

    result = agent.run_sync("clear the disk")
    assert isinstance(result.output, DeferredToolRequests)
    assert _end(loopnb.from_pydantic_ai(result))[:3] == [
        "hard",
        "user_input_required",
        "pydantic-ai:deferred",
    ]
    # its messages alone do not say why the run stopped: calls left without a result
    assert _end(loopnb.from_pydantic_ai(result.all_messages()))[:3] == [
        "hard",
        "source_error",
        "pydantic-ai:unanswered",
    ]


def test_a_cancelled_run_is_cancelled():
    messages, _ = _failed(make._notes_agent([make.call("delete", {"path": "a"}, "c1")]))
    rec = loopnb.from_pydantic_ai(messages, error=KeyboardInterrupt())
    assert _end(rec)[:3] == ["hard", "cancelled", "pydantic-ai:cancelled"]
