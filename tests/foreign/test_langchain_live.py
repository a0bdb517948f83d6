"""LangChain agents made now, traced by OpenInference, read turn by turn against what LangChain did.

Needs langchain, langchain-openai, openinference-instrumentation-langchain, opentelemetry-sdk and
opentelemetry-exporter-otlp-proto-common (the ``langchain`` lane of ``.ci/frameworks.txt``);
without them this skips, and ``test_framework_goldens.py`` reads the committed golden.

The ground truth is LangChain's own: the tool message each next request to the model carried (the
fake server keeps every request) and what each run raised.
"""

from __future__ import annotations

import pytest

from tests.foreign.frameworks import need

need("langchain", "langchain.agents", "langchain_openai", "openinference.instrumentation.langchain")

import loopnb  # noqa: E402
from tests.foreign.test_framework_goldens import LANGCHAIN_TURNS, check_made, check_tool_messages, rows  # noqa: E402
from tests.golden.foreign import make_langchain as make  # noqa: E402


@pytest.fixture(scope="module")
def made() -> make.Sample:
    return make.sample()


def test_spans_made_now_read_as_the_golden(made, tmp_path):
    check_made(made.spans, tmp_path / "langchain.otlp.json", LANGCHAIN_TURNS)


def test_each_error_is_the_tool_message_the_next_request_carried(made):
    check_tool_messages(made.runs, rows(loopnb.from_otel(made.spans)))


def test_how_each_run_ended(made):
    ended = {run.name: (run.raised, run.output) for run in made.runs}
    assert ended["recovers"] == (None, "The notes say: buy milk.")
    assert ended["step_limit"][0] == "GraphRecursionError"
    assert ended["model_error"][0] is not None and ended["tool_raises"][0] == "OSError"
    hard = [r for r in rows(loopnb.from_otel(made.spans)) if r[2] == "hard"]
    names = list(make.SCRIPTS)
    assert [names[r[0]] for r in hard] == ["step_limit", "model_error", "tool_raises"]
