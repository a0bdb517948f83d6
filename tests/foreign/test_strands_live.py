"""Strands Agents runs made now, traced by Strands' own spans in both shapes, read turn by turn
against what Strands did.

Needs strands-agents (with its ``openai`` extra), opentelemetry-sdk and
opentelemetry-exporter-otlp-proto-common (the ``strands`` lane of ``.ci/frameworks.txt``); without
them this skips, and ``test_framework_goldens.py`` reads the committed goldens.

The ground truth is Strands' own: the tool result each next request to the model carried (the fake
server keeps every request) and how each run ended.
"""

from __future__ import annotations

import json

import pytest

from tests.foreign.frameworks import last_result, need

need("strands", "strands", "openai")

import loopnb  # noqa: E402
from tests.foreign.test_framework_goldens import STRANDS_TURNS, check, rows  # noqa: E402
from tests.golden.foreign import make_strands as make  # noqa: E402
from tests.golden.foreign.otlp_files import normalised, spec_json  # noqa: E402


@pytest.fixture(scope="module", params=sorted(make.SHAPES))
def made(request: pytest.FixtureRequest) -> make.Sample:
    return make.sample(request.param)


def test_spans_made_now_read_as_the_goldens(made, tmp_path):
    path = tmp_path / f"strands_{made.shape}.otlp.json"
    path.write_text(json.dumps(spec_json(normalised(made.spans))), encoding="utf-8")
    check(loopnb.load(path), STRANDS_TURNS)
    check(loopnb.from_otel(made.spans), STRANDS_TURNS)


def test_each_error_is_the_result_the_next_request_carried(made):
    found = rows(loopnb.from_otel(made.spans))
    for index, run in enumerate(made.runs):
        turns = [r for r in found if r[0] == index]
        assert len(turns) == len(run.requests)  # a turn for every request the model received
        for number, turn in enumerate(turns[:-1], 1):
            read = last_result(run.requests[number])
            if turn[2] == "soft":
                assert turn[6] == read  # exactly what the model was given back
            else:
                assert turn[2] == "ok" and read == "buy milk"  # our tool's output


def test_how_each_run_ended(made):
    recovers, failed = made.runs
    assert recovers.output == "The notes say: buy milk." and recovers.raised is None
    assert failed.raised is not None and failed.output is None
    last = rows(loopnb.from_otel(made.spans))[-1]
    assert last[2:5] == ("hard", "source_error", "otlp:ERROR:chat") and make.DOWN in last[6]
