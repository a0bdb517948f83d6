"""Google ADK runs made now, traced by ADK's own spans, read turn by turn against what ADK did.

Needs google-adk, opentelemetry-sdk and opentelemetry-exporter-otlp-proto-common (the ``adk`` lane
of ``.ci/frameworks.txt``); without them this skips, and ``test_framework_goldens.py`` reads the
committed golden.

The ground truth is ADK's own: the function responses each next request gave the model (our model
keeps every request) and what each run raised.
"""

from __future__ import annotations

import json

import pytest

from tests.foreign.frameworks import need

need("adk", "google.adk")

import loopnb  # noqa: E402
from tests.foreign.test_framework_goldens import ADK_TURNS, ADK_UNMARKED, check, rows  # noqa: E402
from tests.golden.foreign import make_adk as make  # noqa: E402
from tests.golden.foreign.otlp_files import normalised, spec_json  # noqa: E402


@pytest.fixture(scope="module")
def made() -> make.Sample:
    return make.sample()


def test_spans_made_now_read_as_the_golden(made, tmp_path):
    path = tmp_path / "adk.otlp.json"
    path.write_text(json.dumps(spec_json(normalised(made.spans))), encoding="utf-8")
    check(loopnb.load(path), ADK_TURNS)
    check(loopnb.from_otel(made.spans), ADK_TURNS)


def test_each_error_is_the_response_the_next_request_carried(made):
    found = rows(loopnb.from_otel(made.spans))
    for index, run in enumerate(made.runs):
        turns = [r for r in found if r[0] == index]
        for number, responses in enumerate(run.read, 1):
            turn = turns[number - 1]
            (response,) = responses
            errored = "error" in response or response.get("status") == "error"
            if (index, number) in ADK_UNMARKED:  # the model read an error the trace does not mark
                assert errored and turn[2] == "ok"
            elif errored:
                assert turn[2] == "soft" and json.loads(turn[6]) == response  # exactly what it read
            else:
                assert turn[2] == "ok" and response == {"status": "success", "text": "buy milk"}


def test_how_each_run_ended(made):
    ended = {run.name: (run.raised, run.output) for run in made.runs}
    assert ended["recovers"] == (None, "The notes say: buy milk.")
    assert ended["step_limit"][0] == "LlmCallsLimitExceededError"
    assert ended["model_error"][0] == "RuntimeError" and ended["tool_raises"][0] == "OSError"
    hard = [r for r in rows(loopnb.from_otel(made.spans)) if r[2] == "hard"]
    names = list(make.SCRIPTS)
    assert [names[r[0]] for r in hard] == ["step_limit", "model_error", "tool_raises"]
