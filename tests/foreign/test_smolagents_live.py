"""smolagents runs made now, traced by OpenInference, read turn by turn against what smolagents did.

Needs smolagents, openai, openinference-instrumentation-smolagents, opentelemetry-sdk and
opentelemetry-exporter-otlp-proto-common (the ``smolagents`` lane of ``.ci/frameworks.txt``);
without them this skips, and ``test_framework_goldens.py`` reads the committed golden.

The ground truth is smolagents' own: the error each step caught (its memory), what the next
request to the model carried (the fake server keeps every request), how each run ended.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.foreign.frameworks import need

need("smolagents", "smolagents", "openai", "openinference.instrumentation.smolagents")

import loopnb  # noqa: E402
from tests.foreign.test_framework_goldens import SMOLAGENTS_TURNS, check_made, rows  # noqa: E402
from tests.golden.foreign import make_smolagents as make  # noqa: E402

PRODUCERS = {"AgentToolExecutionError": "tool_error", "AgentToolCallError": "invalid_arguments"}
"""What each error a step caught is in the channel table (an unknown tool is ``not_advertised``)."""


@pytest.fixture(scope="module")
def made() -> make.Sample:
    return make.sample()


def request_text(body: dict[str, Any]) -> str:
    """Every text a chat-completions request carried, one after another."""
    texts = []
    for message in body["messages"]:
        content = message.get("content")
        parts = content if isinstance(content, list) else [{"text": content or ""}]
        texts.extend(str(p.get("text", "")) for p in parts)
    return "\n".join(texts)


def test_spans_made_now_read_as_the_golden(made, tmp_path):
    check_made(made.spans, tmp_path / "smolagents.otlp.json", SMOLAGENTS_TURNS)


def test_each_error_is_the_text_the_next_request_carried(made):
    rec = loopnb.from_otel(made.spans)
    found = rows(rec)
    for index, run in enumerate(made.runs):
        turns = [r for r in found if r[0] == index]
        assert len(turns) == len(run.requests)  # a turn for every request the model received
        for step, error in enumerate(run.errors):
            turn = turns[step]
            if run.raised is not None and step == len(run.errors) - 1:  # the step the run raised in
                assert run.raised == "AgentGenerationError"  # the model failed (its memory keeps no error)
                assert (turn[2], turn[4]) == ("hard", "otlp:ERROR:chat") and make.DOWN in turn[6]
                continue
            if error is None:
                assert turn[2] == "ok", turn
                continue
            kind, said = error
            if kind == "AgentMaxStepsError":  # kept in smolagents' memory only: no span says it
                assert turn[2] == "ok" and turn == turns[-1], turn
                continue
            wanted = "not_advertised" if turn[5] not in ("read_file", "final_answer") else PRODUCERS[kind]
            assert (turn[2], turn[3]) == ("soft", wanted), turn
            assert said in turn[6]  # smolagents' error, in the message it made of it
            assert turn[6] in request_text(run.requests[step + 1])  # ... which the model received


def test_how_each_run_ended(made):
    recovers, limit, failed = made.runs
    assert recovers.output == "The notes say: buy milk." and recovers.state == "success"
    assert limit.state == "max_steps_error" and limit.output == "I could not read the notes."
    assert failed.raised == "AgentGenerationError"
    rec = loopnb.from_otel(made.spans)
    ends = rec.turns.groupby("run_id", sort=False).tail(1)
    assert ends["reply_text"].iloc[1] == limit.output  # the answer asked for at the step limit
    # the last request of the step-limit run offered no tools: no call is read from it
    assert int(ends["n_calls"].iloc[1]) == 0
