"""Agno agents made now, traced by OpenInference, read turn by turn against what Agno did.

Needs agno, openai, openinference-instrumentation-agno, opentelemetry-sdk and
opentelemetry-exporter-otlp-proto-common (the ``agno`` lane of ``.ci/frameworks.txt``); without
them this skips, and ``test_framework_goldens.py`` reads the committed golden.

The ground truth is Agno's own: the tool message each next request to the model carried (the fake
server keeps every request) and each run's status.
"""

from __future__ import annotations

import pytest

from tests.foreign.frameworks import need

need("agno", "agno.agent", "openai", "openinference.instrumentation.agno")

import loopnb  # noqa: E402
from tests.foreign.test_framework_goldens import (  # noqa: E402
    AGNO_TURNS,
    AGNO_UNMARKED,
    check_made,
    check_tool_messages,
    rows,
)
from tests.golden.foreign import make_agno as make  # noqa: E402


@pytest.fixture(scope="module")
def made() -> make.Sample:
    return make.sample()


def test_spans_made_now_read_as_the_golden(made, tmp_path):
    check_made(made.spans, tmp_path / "agno.otlp.json", AGNO_TURNS)


def test_each_error_is_the_tool_message_the_next_request_carried(made):
    check_tool_messages(made.runs, rows(loopnb.from_otel(made.spans)), AGNO_UNMARKED)


def test_how_each_run_ended(made):
    recovers, limited, failed = made.runs
    assert (recovers.status, recovers.output) == ("COMPLETED", "The notes say: buy milk.")
    assert limited.status == "COMPLETED" and failed.status == "ERROR"
    last = rows(loopnb.from_otel(made.spans))[-1]
    assert last[2:5] == ("hard", "source_error", "otlp:ERROR:chat") and make.DOWN in last[6]
