"""CrewAI crews made now, traced by OpenInference, read turn by turn against what CrewAI did.

Needs crewai, openinference-instrumentation-crewai, openinference-instrumentation-openai,
opentelemetry-sdk and opentelemetry-exporter-otlp-proto-common (the ``crewai`` lane of
``.ci/frameworks.txt``); without them this skips, and ``test_framework_goldens.py`` reads the
committed golden.

The ground truth is CrewAI's own: the tool message each next request to the model carried (the fake
server keeps every request) and what each kickoff raised.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from tests.foreign.frameworks import need

need("crewai", "crewai", "openinference.instrumentation.crewai", "openinference.instrumentation.openai")

import loopnb  # noqa: E402
from loopnb.otel import LiveSpans  # noqa: E402
from tests.foreign.test_framework_goldens import CREWAI_TURNS, CREWAI_UNMARKED, check_made, rows  # noqa: E402
from tests.golden.foreign import make_crewai as make  # noqa: E402
from tests.golden.foreign import otlp_files  # noqa: E402


@pytest.fixture(scope="module")
def made() -> tuple[make.Sample, LiveSpans]:
    """The crews, their spans also watched live as they ended."""
    live = LiveSpans()
    provider = otlp_files.provider

    def watched(sample: int) -> Any:
        tp, exporter = provider(sample)
        tp.add_span_processor(live)
        return tp, exporter

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(otlp_files, "provider", watched)  # what traced() makes its provider with
        return make.sample(), live


def _tool_message(body: dict[str, Any]) -> str:
    """The last tool result a chat-completions request gave the model (CrewAI may add a user
    message after it: at ``max_iter``, its request for the final answer)."""
    message = next(m for m in reversed(body["messages"]) if m["role"] == "tool")
    content = message["content"]
    return content if isinstance(content, str) else "\n".join(p["text"] for p in content)


def test_spans_made_now_read_as_the_golden(made, tmp_path):
    sample, _ = made
    check_made(sample.spans, tmp_path / "crewai.otlp.json", CREWAI_TURNS)


def test_each_error_is_the_tool_message_the_next_request_carried(made):
    sample, _ = made
    found = rows(loopnb.from_otel(sample.spans))
    agents = [run for run in sample.runs for _ in range(2 if run.name == "two_agents" else 1)]
    for index, run in enumerate(agents):  # (the second agent of two calls no tool)
        for turn in (r for r in found if r[0] == index and r[5] is not None and r[2] != "hard"):
            read = _tool_message(run.requests[turn[1]])  # turn k's calls: read in request k + 1
            if turn[:2] in CREWAI_UNMARKED:  # refused, not run: the trace does not say so
                assert turn[2] == "ok" and read != "buy milk"
            elif turn[2] == "soft":
                assert turn[6] == read  # exactly what the model was given back
            else:
                assert (turn[2], read) == ("ok", "buy milk")  # our tool's output


def test_how_each_crew_ended(made):
    sample, _ = made
    ended = {run.name: (run.raised, run.output) for run in sample.runs}
    assert ended["recovers"] == (None, "The notes say: buy milk.")
    assert ended["max_iter"] == (None, "I could not read the notes.")
    assert ended["two_agents"] == (None, "Reminder: buy milk.")
    assert ended["usage_limit"] == (None, "The notes say: buy milk.")
    assert ended["model_error"][0] is not None
    # at max_iter the last request offers no tools; the failed model's task was tried three times
    limited, failed = sample.runs[1], sample.runs[2]
    assert [("tools" in body) for body in limited.requests] == [True, True, False]
    assert len(failed.requests) == 4 and all(
        body["messages"][-1]["role"] == "user" for body in failed.requests[2:]
    )
    hard = [r for r in rows(loopnb.from_otel(sample.spans)) if r[2] == "hard"]
    assert [r[:2] for r in hard] == [(2, 2)] and make.DOWN in hard[0][6]


def test_watched_live_the_turns_are_the_traces(made):
    sample, live = made
    whole = loopnb.from_otel(sample.spans)
    pd.testing.assert_frame_equal(live.turns, whole.turns)
    assert live.recording().meta["run_ids"] == whole.meta["run_ids"] and live.errors == []
