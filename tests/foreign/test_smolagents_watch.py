"""smolagents runs watched live (``LiveSpans``) as smolagents makes them (#26 item 5).

OpenInference never ends smolagents' agent span when the model raises, and leaves it current: the
process's next run on that thread hangs below it, in the same trace. Watching ends the failed run
as ``from_otel`` reads the spans that ended: at once when the next run starts, else when watching
stops. Needs what ``test_smolagents_live.py`` needs (the ``smolagents`` lane); each sample is made
on a thread of its own, so that no run another test left open is current.
"""

from __future__ import annotations

import threading
from typing import Any

import pandas as pd
import pytest

from tests.foreign.frameworks import need

need("smolagents", "smolagents", "openai", "openinference.instrumentation.smolagents")

import loopnb  # noqa: E402
from loopnb.otel import LiveSpans  # noqa: E402
from tests.golden.foreign import make_smolagents as make  # noqa: E402
from tests.golden.foreign import otlp_files  # noqa: E402


def watched(names: list[str]) -> tuple[make.Sample, LiveSpans, pd.DataFrame]:
    """The runs ``names`` made on a fresh thread, watched; the turns shown before watching stops."""
    live, provider, made = LiveSpans(), otlp_files.provider, []

    def provided(sample: int) -> Any:
        tp, exporter = provider(sample)
        tp.add_span_processor(live)
        return tp, exporter

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(otlp_files, "provider", provided)  # what traced() makes its provider with
        patch.setattr(make, "SCRIPTS", {name: make.SCRIPTS[name] for name in names})
        thread = threading.Thread(target=lambda: made.append(make.sample()))
        thread.start()
        thread.join()
    return made[0], live, live.turns


def test_watching_stops_with_the_failed_run_ended_as_from_otel_reads_it():
    sample, live, shown = watched(["recovers", "step_limit", "model_error"])
    whole = loopnb.from_otel(sample.spans)
    assert len(shown) == len(whole.turns) - 1  # the failed run's agent span never ended
    pd.testing.assert_frame_equal(live.stop().turns, whole.turns)
    assert whole.turns["channel"].iloc[-1] == "hard" and live.errors == []


def test_the_next_run_ends_the_failed_one_as_it_starts():
    sample, live, shown = watched(["model_error", "recovers"])
    whole = loopnb.from_otel(sample.spans)
    columns = [c for c in whole.turns.columns if c != "run_id"]  # the run shown first keeps the trace's id
    pd.testing.assert_frame_equal(shown[columns], whole.turns[columns])
    assert whole.turns["channel"].tolist()[:2] == ["soft", "hard"] and live.errors == []
