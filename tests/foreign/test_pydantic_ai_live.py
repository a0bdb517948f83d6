"""The pydantic-ai reader on runs made here by the real package (``FunctionModel``, real tools).

Needs ``pydantic-ai-slim`` (the ``test`` extra): the goldens' tests in ``test_pydantic_ai.py``
run without it.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pandas as pd
import pydantic_ai
import pytest
from pydantic_ai import Agent, ModelRetry, UnexpectedModelBehavior, UsageLimitExceeded, capture_run_messages
from pydantic_ai.messages import (
    ModelMessagesTypeAdapter,
    ModelRequest,
    RetryFeedbackPart,
    RetryInfo,
    RetryPromptPart,
    ToolReturnPart,
)
from pydantic_ai.tools import DeferredToolRequests
from pydantic_ai.usage import UsageLimits

import loopnb
from loopnb.foreign._pydantic_ai_text import feedback_text, legacy_retry_text, return_text
from tests.foreign.their_words import their_words_set_aside
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


# What pydantic-ai renders for the model (a tool's retry, an unknown tool, invalid arguments with
# pydantic's words, a rejected answer) is its to reword; FunctionModel counts a request's tokens
# from those words, so the input tokens go with them.
RENDERED = {"tool_error", "not_advertised", "invalid_arguments", "completion_rejected"}
SAME = [column for column in COLUMNS if column != "input_tokens"]


@pytest.mark.parametrize("name", sorted(make.SAMPLES))
def test_a_fresh_run_reads_as_its_golden_does(name):
    """The goldens were made by an earlier pydantic-ai: today's must read the same, its words aside."""
    fresh = loopnb.from_pydantic_ai(make.SAMPLES[name]())
    golden = loopnb.load(GOLDEN / f"{name}.json")
    text, producer = SAME.index("error_text"), SAME.index("producer")
    made, kept = their_words_set_aside(
        rows(fresh.turns, SAME),
        rows(golden.turns, SAME),
        text=text,
        theirs=lambda row: row[producer] in RENDERED,
    )
    assert made == kept
    assert fresh.meta["source"] == {"format": "pydantic-ai", "version": pydantic_ai.__version__}


def _parts(messages):
    """Each request part beside its JSON shape, as the reader sees it."""
    dumped = ModelMessagesTypeAdapter.dump_python(messages, mode="json")
    for message, shape in zip(messages, dumped, strict=True):
        if isinstance(message, ModelRequest):
            yield from zip(message.parts, shape["parts"], strict=True)


def test_every_text_the_model_read_is_pydantic_ais_own_rendering():
    seen = {"return": 0, "error": 0, "feedback": 0}
    for build in make.SAMPLES.values():
        for part, shape in _parts(build()):
            if isinstance(part, ToolReturnPart):
                assert return_text(shape, None) == part.model_response_str()
                unwrapped = part.content_items(mode="str", wrap_if_error=False)
                assert return_text(shape, "anthropic") == "".join(unwrapped)
                seen["error" if part.outcome in ("retried", "failed") else "return"] += 1
            elif isinstance(part, RetryFeedbackPart):
                assert feedback_text(shape) == part.model_response()
                seen["feedback"] += 1
    assert seen["error"] >= 6 and seen["return"] >= 3 and seen["feedback"] == 1


@pytest.mark.parametrize(
    "part",
    [
        RetryFeedbackPart(
            content=[
                {"type": "missing", "loc": ("a",), "msg": "Field required", "input": {"b": 1}},
                {"type": "missing", "loc": ("c",), "msg": "Field required", "input": {"b": 1}},
                {
                    "type": "int_parsing",
                    "loc": ("d", 0),
                    "msg": "Input should be a valid integer",
                    "input": "x",
                },
            ],
            retry=RetryInfo(cause="validation_error"),
        ),
        RetryFeedbackPart(content="Please return text or call a tool.", retry=RetryInfo(cause="no_output")),
        RetryFeedbackPart(content="Please answer in French.", retry=RetryInfo(cause="no_output")),
        ToolReturnPart("t", {"rows": [1, 2], "name": "ünï"}, "c", outcome="failed"),
        ToolReturnPart("t", None, "c"),
        ToolReturnPart("t", [1, "a"], "c", outcome="retried"),
    ],
)
def test_the_rarer_shapes_render_as_pydantic_ai_renders_them(part):
    shape = ModelMessagesTypeAdapter.dump_python([ModelRequest(parts=[part])], mode="json")[0]["parts"][0]
    if isinstance(part, RetryFeedbackPart):
        assert feedback_text(shape) == part.model_response()
    else:
        assert return_text(shape, None) == part.model_response_str()


def test_a_legacy_retry_prompt_reads_as_the_version_that_wrote_it_sent_it():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parts = [
            RetryPromptPart("no such file", tool_name="read_file"),
            RetryPromptPart("say it shorter"),
            RetryPromptPart([{"type": "missing", "loc": ("path",), "msg": "Field required", "input": {}}]),
        ]
    for part in parts:
        shape = {"part_kind": "retry-prompt", "tool_name": part.tool_name, "content": part.content}
        assert legacy_retry_text(json.loads(json.dumps(shape))) == part.model_response()


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


def test_a_saved_history_is_detected_by_load(tmp_path):
    path = tmp_path / "history.json"
    path.write_bytes(make.dump(make.recovered()))
    rec = loopnb.load(path)
    assert rec.meta["source"]["format"] == "pydantic-ai" and rec.meta["path"] == str(path)
    assert list(rec.turns["channel"]) == ["soft"] * 4 + ["ok", "soft", "ok"]


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
    assert rec.turns["tools"].iloc[-1] == "read_file"


def test_retries_past_the_budget_are_tool_recovery_exhausted_with_or_without_the_exception():
    messages, exc = _failed(
        make._notes_agent(
            [make.call("read_file", {"path": f"{i}.txt"}, f"c{i}") for i in range(3)], retries=1
        )
    )
    assert isinstance(exc, UnexpectedModelBehavior)
    given, inferred = loopnb.from_pydantic_ai(messages, error=exc), loopnb.from_pydantic_ai(messages)
    assert (
        _end(given)[:3]
        == _end(inferred)[:3]
        == ["hard", "tool_recovery_exhausted", "pydantic-ai:retries_exceeded"]
    )
    assert _end(given)[3] == f"UnexpectedModelBehavior: {exc}"


def test_output_retries_past_the_budget_need_the_exception_to_be_seen():
    agent = Agent(make.scripted([make.say("a"), make.say("b"), make.say("c")]), retries={"output": 1})

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
