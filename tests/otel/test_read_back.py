"""loopnb's exported spans read back with the otlp reader give the run's own channels, turn by turn.

The soft errors are told by loopnb's attributes (``loopnb.channel``, ``loopnb.producer``, the
``loopnb.soft_error`` event), not by the span status, which stays unset; tool spans go to their
turn by ``loopnb.turn``, so a run on a fake clock (every span at one instant) reads the same.
"""

import json

import pytest
from google.protobuf.json_format import MessageToDict
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import loopnb
from loopnb.foreign import from_otel
from loopnb.otel import Exporter
from loopnb.record._frames import turn_table
from loopnb.scenarios import SCENARIOS

# converging_answers is left out: a rejected answer (completion_rejected) is read by the model
# as feedback, not from a tool, and no span the exporter writes carries it.
READ_BACK = [name for name in SCENARIOS if name != "converging_answers"]


def _channels(turns):
    """Each turn as (turn, channel, producer), producer "" when ok."""
    return turns[["turn", "channel", "producer"]].astype("string").fillna("").values.tolist()


def _exported(name):
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    outcome = SCENARIOS[name].run(observers=[Exporter(tracer_provider=provider)])
    return outcome, memory.get_finished_spans()


@pytest.mark.parametrize("name", READ_BACK)
def test_every_scenario_reads_back_with_its_own_channels_and_texts(name):
    outcome, spans = _exported(name)
    original = turn_table(list(outcome.events))
    read = from_otel(spans).turns
    assert _channels(read) == _channels(original)
    soft = original["channel"] == "soft"
    assert read.loc[soft.to_numpy(), "error_text"].tolist() == original.loc[soft, "error_text"].tolist()


def test_spans_sent_as_otlp_json_load_as_a_recording(tmp_path):
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    outcome, spans = _exported("stubborn_loop")
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(MessageToDict(encode_spans(spans))))
    rec = loopnb.load(path, format="otlp")
    assert _channels(rec.turns) == _channels(turn_table(list(outcome.events)))
    assert rec.turns["producer"].tolist()[-1] == "loop_detected"
