"""The pydantic-ai reader on runs made by the newest pydantic-ai: they read as the committed goldens
do, and every text the model read is pydantic-ai's own rendering of its parts.

Needs a pydantic-ai-slim with ``RetryFeedbackPart``, ``ToolFailed`` and tool outcomes (the main
lane's); ``test_pydantic_ai_live.py`` holds what every claimed version must do, and runs in the
``pydantic-ai-1.0`` lane too.
"""

from __future__ import annotations

import json
import warnings

import pydantic_ai
import pytest
from pydantic_ai.messages import (
    ModelMessagesTypeAdapter,
    ModelRequest,
    RetryFeedbackPart,
    RetryInfo,
    RetryPromptPart,
    ToolReturnPart,
)

import loopnb
from loopnb.foreign._pydantic_ai_text import feedback_text, legacy_retry_text, return_text
from tests.foreign.test_pydantic_ai_live import COLUMNS, GOLDEN, rows
from tests.foreign.their_words import their_words_set_aside
from tests.golden.foreign import make_pydantic_ai as make

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


def test_a_saved_history_is_detected_by_load(tmp_path):
    path = tmp_path / "history.json"
    path.write_bytes(make.dump(make.recovered()))
    rec = loopnb.load(path)
    assert rec.meta["source"]["format"] == "pydantic-ai" and rec.meta["path"] == str(path)
    assert list(rec.turns["channel"]) == ["soft"] * 4 + ["ok", "soft", "ok"]
