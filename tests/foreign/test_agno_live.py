"""Agno agents made now, traced by OpenInference, read turn by turn against what Agno did.

Needs agno, openai, openinference-instrumentation-agno, opentelemetry-sdk and
opentelemetry-exporter-otlp-proto-common (the ``agno`` lane of ``.ci/frameworks.txt``); without
them this skips, and ``test_framework_goldens.py`` reads the committed golden.

The ground truth is Agno's own: the tool message each next request to the model carried (the fake
server keeps every request) and each run's status.
"""

from __future__ import annotations

import json

import pytest

from tests.foreign.frameworks import last_result, need

need("agno", "agno.agent", "openai", "openinference.instrumentation.agno")

import loopnb  # noqa: E402
from tests.foreign.test_framework_goldens import AGNO_TURNS, AGNO_UNMARKED, check, rows  # noqa: E402
from tests.golden.foreign import make_agno as make  # noqa: E402
from tests.golden.foreign.otlp_files import normalised, spec_json  # noqa: E402


@pytest.fixture(scope="module")
def made() -> make.Sample:
    return make.sample()


def test_spans_made_now_read_as_the_golden(made, tmp_path):
    path = tmp_path / "agno.otlp.json"
    path.write_text(json.dumps(spec_json(normalised(made.spans))), encoding="utf-8")
    check(loopnb.load(path), AGNO_TURNS)
    check(loopnb.from_otel(made.spans), AGNO_TURNS)


def test_each_error_is_the_tool_message_the_next_request_carried(made):
    found = rows(loopnb.from_otel(made.spans))
    for index, run in enumerate(made.runs):
        turns = [r for r in found if r[0] == index]
        for number, body in enumerate(run.requests[1:], 1):
            turn, read = turns[number - 1], last_result(body)
            if (index, number) in AGNO_UNMARKED:  # refused, not run: the trace does not say so
                assert turn[2] == "ok" and read != "buy milk"
            elif turn[2] == "soft":
                assert turn[6] == read  # exactly what the model was given back
            else:
                assert (turn[2], read) == ("ok", "buy milk")  # our tool's output


def test_how_each_run_ended(made):
    recovers, limited, failed = made.runs
    assert (recovers.status, recovers.output) == ("COMPLETED", "The notes say: buy milk.")
    assert limited.status == "COMPLETED" and failed.status == "ERROR"
    last = rows(loopnb.from_otel(made.spans))[-1]
    assert last[2:5] == ("hard", "source_error", "otlp:ERROR:chat") and make.DOWN in last[6]
