"""pydantic-ai's own spans, made now by the pydantic-ai installed (the newest in the main lane,
pydantic-ai-slim 1.0 in the ``pydantic-ai-1.0`` lane), read turn by turn against what happened.

The decisions (channel, producer, how the run ended, which tools) are the golden's in every
version. The text of each error is what the next request to the model carried, as the trace
itself records it (pydantic-ai 1.0 appends its own "Fix the errors and try again."). What
``test_otlp_live.py`` checks beyond this needs the newest instrumentation (retry numbers on the
spans, version 6's tool messages, a failure stage that survives ``include_content=False``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import loopnb
from tests.foreign.test_otlp import PYDANTIC_TURNS, turn_rows
from tests.golden.foreign import make_otlp as make

DECIDED = (0, 1, 2, 3, 5, 6, 8)
"""Of a turn row: run, turn, channel, producer, source_status, tools, model."""


@pytest.fixture(scope="module")
def spans() -> list[Any]:
    return make.pydantic_ai_spans()


def test_every_turn_is_decided_as_the_golden(spans):
    rows = turn_rows(loopnb.from_otel(spans))
    assert [[r[i] for i in DECIDED] for r in rows] == [[r[i] for i in DECIDED] for r in PYDANTIC_TURNS]


def test_each_error_text_is_what_the_next_request_carried(spans):
    rec = loopnb.from_otel(spans)
    first = rec.meta["run_ids"][0]  # the reader agent: a soft error of each kind, then the answer
    chats = sorted(
        (s for s in spans if s.name.startswith("chat") and f"{s.context.trace_id:032x}" == first),
        key=lambda s: s.start_time,
    )
    turns = rec.turns[rec.turns["run_id"] == first]
    carried = []
    for chat in chats[1:]:
        last = json.loads(chat.attributes["gen_ai.input.messages"])[-1]
        results = [p for p in last["parts"] if p.get("type") == "tool_call_response"]
        carried.append(results[0]["result"] if results else None)
    soft = turns["channel"] == "soft"
    assert soft.sum() == 3
    for i in range(len(turns)):
        if soft.iloc[i]:  # a structured result (the newest's validation errors) is read as its JSON
            text, sent = turns["error_text"].iloc[i], carried[i]
            assert text == sent if isinstance(sent, str) else json.loads(text) == sent
