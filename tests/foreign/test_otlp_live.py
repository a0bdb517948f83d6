"""The OpenTelemetry reader on spans made now by the real packages: pydantic-ai's instrumentation
into the OTel SDK, read in memory (``from_otel``) and through every exporter's encoding.

Needs pydantic-ai-slim, opentelemetry-sdk and opentelemetry-exporter-otlp-proto-common (the
``test`` extra); ``test_otlp.py`` reads the committed goldens without them.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pandas as pd
import pytest
from opentelemetry.sdk.trace.export import ConsoleSpanExporter
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.models.instrumented import InstrumentationSettings

import loopnb
from loopnb.foreign._otlp_calls import WITHHELD
from tests.foreign.test_otlp import (
    LIMIT,
    PYDANTIC,
    PYDANTIC_TURNS,
    RETRIES,
    UNKNOWN,
    V2,
    VALIDATION,
    disagreement_rows,
    turn_rows,
)
from tests.foreign.their_words import their_words_set_aside
from tests.golden.foreign import make_otlp as make

SAME = ["run_id", "turn", "channel", "producer", "error_text", "source_status", "tools", "n_calls", "model"]
WORDS = ["error_text", "input_tokens"]
"""The columns that hold pydantic-ai's (and pydantic's) words, or a count of tokens made from them."""
THEIRS = {VALIDATION, UNKNOWN, LIMIT, RETRIES}


def pydantic_ais_words_aside(rows: list[tuple[object, ...]]) -> tuple[list[Any], list[Any]]:
    """Turn rows read from spans made now and the golden's first ones, pydantic-ai's own words
    (and the input tokens its test model counts from them) set aside in both."""
    return their_words_set_aside(
        [(*r[:9], *r[10:]) for r in rows],
        [(*r[:9], *r[10:]) for r in PYDANTIC_TURNS[: len(rows)]],
        text=4,
        theirs=lambda row: row[4] in THEIRS,
    )


@pytest.fixture(scope="module")
def spans() -> list[Any]:
    return make.pydantic_ai_spans()


def test_from_otel_reads_live_spans_turn_by_turn(spans):
    rec = loopnb.from_otel(spans)
    assert len(rec.turns) == len(PYDANTIC_TURNS)
    made, kept = pydantic_ais_words_aside(turn_rows(rec))
    assert made == kept
    assert rec.meta["source"]["encoding"] == "sdk" and rec.meta["source"]["version"].startswith(
        "pydantic-ai "
    )
    # pydantic-ai marks a retried tool ERROR under a run span that goes on: handled, no disagreement
    assert [r[-1] for r in disagreement_rows(rec)] == ["missing_tool_record", "panic_ended_run"]


def test_the_golden_is_what_pydantic_ai_writes_today(spans):
    # all but pydantic-ai's words, and the tokens its test model counts from them
    live, golden = loopnb.from_otel(make.normalised(spans)).turns, loopnb.load(PYDANTIC).turns
    pd.testing.assert_frame_equal(live.drop(columns=WORDS), golden.drop(columns=WORDS))
    assert live["error_text"].isna().tolist() == golden["error_text"].isna().tolist()
    v2 = loopnb.from_otel(make.normalised(make.pydantic_ai_spans(version=2))).turns
    same = [column for column in SAME if column not in WORDS]
    pd.testing.assert_frame_equal(v2[same], loopnb.load(V2).turns[same])
    assert v2["error_text"].isna().tolist() == loopnb.load(V2).turns["error_text"].isna().tolist()


@pytest.mark.parametrize("encoding", ["spec", "protobuf", "console", "list"])
def test_every_exporters_encoding_reads_as_the_spans_do(tmp_path, spans, encoding):
    path = tmp_path / "spans.json"
    if encoding == "spec":
        path.write_text(json.dumps(make.spec_json(spans)))
    elif encoding == "protobuf":
        path.write_text(json.dumps(make.protobuf_json(spans)))
    elif encoding == "console":
        out = io.StringIO()
        ConsoleSpanExporter(out=out).export(spans)
        path.write_text(out.getvalue())
    else:
        path.write_text(json.dumps([json.loads(s.to_json()) for s in spans]))
    read, direct = loopnb.load(path).turns, loopnb.from_otel(spans).turns
    if encoding in ("spec", "protobuf"):  # nanoseconds kept: the same to the last digit
        pd.testing.assert_frame_equal(read, direct)
    else:  # span.to_json() keeps microseconds
        pd.testing.assert_frame_equal(read[SAME], direct[SAME])
        assert (read["started_at"] - direct["started_at"]).abs().max() < pd.Timedelta(microseconds=1)


def test_version_6_puts_tool_results_in_tool_messages_and_reads_the_same():
    tp, exporter = make.provider(96)
    reader = make._agent(tp, "reader", [*make.RECOVERED, make.say("the notes say hi")], version=6, retries=3)
    make._run(reader, "read the notes")
    spans = exporter.get_finished_spans()
    chats = [s for s in spans if s.name.startswith("chat")]
    assert '"role":"tool"' in chats[1].attributes["gen_ai.input.messages"]
    rows = turn_rows(loopnb.from_otel(spans))
    made, kept = pydantic_ais_words_aside(rows)
    assert len(rows) == 5 and made == kept


def test_without_content_the_channels_stay():
    tp, exporter = make.provider(97)
    settings = InstrumentationSettings(tracer_provider=tp, include_content=False)
    reader: Agent[None, str] = Agent(
        make.scripted([*make.RECOVERED, make.say("done")]),
        name="reader",
        retries=3,
        **make.instrumented(settings),
    )

    @reader.tool_plain
    def read_file(path: str) -> str:
        """Read a file."""
        if path != "notes.txt":
            raise ModelRetry(f"file {path} not found")
        return "hi"

    reader.run_sync("read the notes")
    rec = loopnb.from_otel(exporter.get_finished_spans())
    # the output messages keep the calls' names (not their arguments): the unknown tool still shows
    assert [r[2:4] for r in turn_rows(rec)] == [
        ("soft", "tool_error"),
        ("soft", "not_advertised"),
        ("soft", "invalid_arguments"),
        ("ok", None),
        ("ok", None),
    ]
    assert set(rec.turns["error_text"].iloc[:3]) == {WITHHELD}  # content withheld, not empty
    assert [r[-1] for r in disagreement_rows(rec)] == ["missing_tool_record"]


def test_an_agent_run_inside_a_tool_is_a_run_of_its_own():
    tp, exporter = make.provider(98)
    settings = InstrumentationSettings(tracer_provider=tp)
    helper: Agent[None, str] = Agent(
        make.scripted([make.say("the summary")]),
        name="helper",
        **make.instrumented(settings),
    )
    lead: Agent[None, str] = Agent(
        make.scripted([make.call("summarise", {"text": "notes"}, "h1"), make.say("done")]),
        name="lead",
        **make.instrumented(settings),
    )

    @lead.tool_plain
    async def summarise(text: str) -> str:
        """Summarise with the helper agent."""
        return (await helper.run(text)).output

    lead.run_sync("summarise the notes")
    rec = loopnb.from_otel(exporter.get_finished_spans())
    lead_id, helper_id = rec.meta["run_ids"]  # the trace's first agent run has the trace's id
    assert helper_id.startswith(lead_id + "-") and len(helper_id) == len(lead_id) + 17
    lead_turns = rec.turns[rec.turns["run_id"] == rec.meta["run_ids"][0]]
    assert list(lead_turns["tools"].fillna("")) == ["summarise", ""]
    started = [e for e in rec.event_objects if e.kind == "run_started"]
    assert [s.settings["agent"] for s in started] == ["lead", "helper"]
    finished = [e.output for e in rec.event_objects if e.kind == "run_finished"]
    assert finished == ["done", "the summary"]
