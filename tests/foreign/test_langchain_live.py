"""LangChain agents made now, traced by OpenInference, read turn by turn against what LangChain did.

Needs langchain, langchain-openai, openinference-instrumentation-langchain, opentelemetry-sdk and
opentelemetry-exporter-otlp-proto-common (the ``langchain`` lane of ``.ci/frameworks.txt``);
without them this skips, and ``test_framework_goldens.py`` reads the committed golden.

The ground truth is LangChain's own: the tool message each next request to the model carried (the
fake server keeps every request) and what each run raised.
"""

from __future__ import annotations

import json

import pytest

from tests.foreign.frameworks import last_result, need

need("langchain", "langchain.agents", "langchain_openai", "openinference.instrumentation.langchain")

import loopnb  # noqa: E402
from tests.foreign.test_framework_goldens import LANGCHAIN_TURNS, check, rows  # noqa: E402
from tests.golden.foreign import make_langchain as make  # noqa: E402
from tests.golden.foreign.otlp_files import normalised, spec_json  # noqa: E402


@pytest.fixture(scope="module")
def made() -> make.Sample:
    return make.sample()


def test_spans_made_now_read_as_the_golden(made, tmp_path):
    path = tmp_path / "langchain.otlp.json"
    path.write_text(json.dumps(spec_json(normalised(made.spans))), encoding="utf-8")
    check(loopnb.load(path), LANGCHAIN_TURNS)
    check(loopnb.from_otel(made.spans), LANGCHAIN_TURNS)


def test_each_error_is_the_tool_message_the_next_request_carried(made):
    found = rows(loopnb.from_otel(made.spans))
    for index, run in enumerate(made.runs):
        turns = [r for r in found if r[0] == index]
        for number, body in enumerate(run.requests[1:], 1):
            turn, read = turns[number - 1], last_result(body)
            if turn[2] == "soft":
                assert turn[6] == read  # exactly what the model was given back
            else:
                assert (turn[2], read) == ("ok", "buy milk")  # our tool's output


def test_how_each_run_ended(made):
    ended = {run.name: (run.raised, run.output) for run in made.runs}
    assert ended["recovers"] == (None, "The notes say: buy milk.")
    assert ended["step_limit"][0] == "GraphRecursionError"
    assert ended["model_error"][0] is not None and ended["tool_raises"][0] == "OSError"
    hard = [r for r in rows(loopnb.from_otel(made.spans)) if r[2] == "hard"]
    names = list(make.SCRIPTS)
    assert [names[r[0]] for r in hard] == ["step_limit", "model_error", "tool_raises"]
