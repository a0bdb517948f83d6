"""loopnb's own runs, exported as spans and read back: the same turns, soft and hard as they were.

Each built-in scenario runs on its scripted model; ``loopnb.otel.Exporter`` sends the run to the
SDK's in-memory exporter; the spans are written as OTLP/JSON (the specification's encoding, one
``ExportTraceServiceRequest``) and read back with ``loopnb.load(path, format="otlp")``. The same
spans read live by ``LiveSpans`` as the exporter ends them give the same turns too.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import loopnb
from loopnb.otel import Exporter, LiveSpans
from loopnb.scenarios import SCENARIOS
from tests.golden.foreign.make_otlp import spec_json


def _exported(name: str, *processors: Any) -> tuple[loopnb.Recording, list[Any]]:
    """The scenario's run as a recording, and the spans its export made."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    for processor in processors:
        provider.add_span_processor(processor)
    outcome = SCENARIOS[name].run()
    exporter = Exporter(tracer_provider=provider)
    for event in outcome.events:
        exporter(event)
    return loopnb.Recording.from_events(outcome.events, meta={}), list(memory.get_finished_spans())


def _turns(rec: loopnb.Recording) -> list[tuple[Any, ...]]:
    frame = rec.turns[["turn", "channel", "producer", "error_text"]].astype(object)
    return [tuple(None if pd.isna(v) else v for v in row) for row in frame.itertuples(index=False)]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_an_exported_run_read_back_from_otlp_json_has_the_runs_turns(tmp_path, name):
    original, spans = _exported(name)
    path = tmp_path / f"{name}.otlp.json"
    path.write_text(json.dumps(spec_json(spans)), encoding="utf-8")
    read = loopnb.load(path, format="otlp")
    assert _turns(read) == _turns(original)  # channel, producer and the text the model read
    soft = original.turns[original.turns["channel"] == "soft"]
    assert list(read.turns.loc[soft.index, "tools"]) == list(soft["tools"])
    # the export says which errors went back to the model: the marking never disagrees (a
    # vague text the model read, ``vague_error``'s "failed", is still called out)
    found = loopnb.audit(read).disagreements()
    assert set(found["reason"]) <= {"error_text_names_nothing"}
    assert found.empty == (name != "vague_error")
    events = read.events
    errors = events[(events["kind"] == "tool_dispatched") & events["is_error"].fillna(False)]
    assert set(errors["source_status"]) <= {"otlp:soft"}


def test_the_round_trip_covers_every_row_of_the_table_the_scenarios_reach():
    producers = {p for name in SCENARIOS for _, _, p, _ in _turns(_exported(name)[0]) if p}
    assert {"tool_error", "not_advertised", "registry_miss", "invalid_arguments", "timeout"} <= producers
    assert {"completion_rejected", "breaker_open", "loop_refusal", "hook_veto", "tool_panic"} <= producers
    assert {"cancelled", "context_exceeded", "loop_detected", "fallback_exhausted"} <= producers
    assert "tool_recovery_exhausted" in producers


@pytest.mark.parametrize(
    "name", ["mistyped_path", "converging_answers", "fallback_chain", "recovery_success"]
)
def test_loopnbs_own_export_watched_live_gives_the_same_turns(name):
    live = LiveSpans()
    original, spans = _exported(name, live)
    pd.testing.assert_frame_equal(live.turns, loopnb.from_otel(spans).turns)
    assert _turns(live.recording()) == _turns(original) and live.errors == []
