"""LlamaIndex agents (``FunctionAgent``) made now, traced by OpenInference, read turn by turn
against what LlamaIndex did.

Needs llama-index-core, llama-index-llms-openai, openinference-instrumentation-llama-index,
opentelemetry-sdk and opentelemetry-exporter-otlp-proto-common (the ``llamaindex`` lane of
``.ci/frameworks.txt``); without them this skips, and ``test_framework_goldens.py`` reads the
committed golden.

The ground truth is LlamaIndex's own: the tool message each next request to the model carried (the
fake server keeps every request) and what each run raised.
"""

from __future__ import annotations

import pytest

from tests.foreign.frameworks import need

need("llamaindex", "llama_index.core", "llama_index.llms.openai", "openinference.instrumentation.llama_index")

import loopnb  # noqa: E402
from tests.foreign.test_framework_goldens import LLAMAINDEX_TURNS, check_made, check_tool_messages, rows  # noqa: E402
from tests.golden.foreign import make_llamaindex as make  # noqa: E402


@pytest.fixture(scope="module")
def made() -> make.Sample:
    return make.sample()


def test_spans_made_now_read_as_the_golden(made, tmp_path):
    check_made(made.spans, tmp_path / "llamaindex.otlp.json", LLAMAINDEX_TURNS)


def test_each_error_is_the_tool_message_the_next_request_carried(made):
    check_tool_messages(made.runs, rows(loopnb.from_otel(made.spans)))


def test_how_each_run_ended(made):
    ended = {run.name: (run.raised, run.output) for run in made.runs}
    assert ended["recovers"] == (None, "The notes say: buy milk.")
    assert ended["step_limit"][0] == "WorkflowRuntimeError" and ended["model_error"][0] is not None
    hard = [r for r in rows(loopnb.from_otel(made.spans)) if r[2] == "hard"]
    assert [list(make.SCRIPTS)[r[0]] for r in hard] == ["step_limit", "model_error"]
    assert make.DOWN in hard[-1][6]
