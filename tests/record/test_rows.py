"""The schema and the pure row functions: columns, dtypes, the hard row, discarded runs."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC

import pandas as pd
import pytest
from pydantic import TypeAdapter

from loopnb import ConvergenceDetector, Engine, FakeClock, ScriptedModel, ToolCall, ToolError, tool
from loopnb.engine import turns_of
from loopnb.engine._errors import HARD_PRODUCERS, SOFT_PRODUCERS
from loopnb.engine._events import Event
from loopnb.record import EVENT_SCHEMA, EVENTS, TURN_SCHEMA, TURNS
from loopnb.record._frames import event_frame, turn_frame
from loopnb.record._rows import event_row, turn_row, turn_rows
from loopnb.record._schema import EVENT_KINDS

from .conftest import context_run, hard_run, run_engine, script_run, typo_run


def test_turn_columns_cover_the_design():
    required = {
        "run_id",
        "turn",
        "channel",
        "producer",
        "tools",
        "error_text",
        "recovery_attempts",
        "breaker_states",
        "model",
        "latency_ms",
        "started_at",
        "dropped",
        "reply_text",
        "n_calls",
    }
    assert required <= set(TURNS.names)
    assert set(TURN_SCHEMA["properties"]) == set(TURNS.names)
    assert set(EVENT_SCHEMA["properties"]) == set(EVENTS.names)
    json.dumps(TURN_SCHEMA)  # publishable as is


def test_event_kinds_match_the_engine():
    union = TypeAdapter(Event).json_schema()
    kinds = {
        d["properties"]["kind"]["const"] for d in union["$defs"].values() if "kind" in d.get("properties", {})
    }
    assert kinds == set(EVENT_KINDS)


def test_declared_dtypes():
    t = TURNS.dtypes()
    assert t["channel"] == ("category", ("ok", "soft", "hard"))
    assert t["producer"] == ("category", (*SOFT_PRODUCERS, *HARD_PRODUCERS, "source_error"))
    assert t["turn"] == "Int64" and t["latency_ms"] == "Float64" and t["dropped"] == "bool"
    assert t["started_at"] == "datetime64[us, UTC]" and t["error_text"] == "string"
    assert EVENTS.dtypes()["executed"] == "boolean"


def test_frames_have_the_declared_dtypes_even_when_empty():
    for df in (turn_frame([]), turn_frame(turn_rows(typo_run().events))):
        assert list(df.columns) == list(TURNS.names)
        assert isinstance(df["channel"].dtype, pd.CategoricalDtype)
        assert list(df["channel"].cat.categories) == ["ok", "soft", "hard"]
        assert len(df["producer"].cat.categories) == 19  # 12 soft, 6 hard, source_error
        assert str(df["turn"].dtype) == "Int64"
        assert str(df["started_at"].dtype) == "datetime64[us, UTC]"
        assert str(df["error_text"].dtype) == "string"
    ev = event_frame([event_row(e) for e in typo_run().events])
    assert list(ev.columns) == list(EVENTS.names)
    assert len(ev["kind"].cat.categories) == 14


def test_every_row_validates_against_its_schema():
    import jsonschema

    def published(row):  # a row as JSON would carry it: times as ISO text
        return {k: v.isoformat() if hasattr(v, "isoformat") else v for k, v in row.items()}

    events = typo_run().events + hard_run().events
    for row in turn_rows(events):
        jsonschema.validate(published(row), TURN_SCHEMA)
    for e in events:
        jsonschema.validate(published(event_row(e)), EVENT_SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**published(turn_rows(events)[0]), "channel": "maybe"}, TURN_SCHEMA)


def test_turn_row_of_the_typo_run():
    rows = turn_rows(typo_run().events)
    assert [r["channel"] for r in rows] == ["soft", "ok", "ok"]
    first = rows[0]
    assert first["producer"] == "tool_error"
    assert first["error_text"] == "file src/mian.rs not found"
    assert first["tools"] == "read_file" and first["n_calls"] == 1 and first["n_errors"] == 1
    assert first["started_at"].tzinfo is UTC
    assert rows[2]["reply_text"] == "It prints nothing." and rows[2]["tools"] is None
    assert not any(r["dropped"] for r in rows)


def test_the_hard_row_carries_the_variant_and_its_message():
    rows = turn_rows(hard_run().events)
    hard = rows[-1]
    assert hard["channel"] == "hard" and hard["producer"] == "tool_recovery_exhausted"
    assert hard["dropped"] is True
    assert hard["error_text"].startswith("recovery of read_file asked for retry 6")
    assert hard["recovery_attempts"] == 5
    assert json.loads(rows[0]["breaker_states"]) == {"read_file": "open", "other": "closed"}
    assert rows[0]["breakers_open"] == 1


def test_soft_error_text_joins_every_error_and_the_engine_feedback():
    """Turn 1: three calls, the first and the third read as errors. Turns 2 and 3: the same
    answer rejected twice; on turn 3 the convergence detector warns too (two feedback errors)."""

    @tool
    def a() -> str:
        """Fails."""
        raise ToolError("first failed")

    @tool
    def b() -> str:
        """Works."""
        return "fine"

    model = ScriptedModel(
        [[ToolCall("a", {}), ToolCall("b", {}), ToolCall("c", {})], "the answer", "the answer", "done"]
    )
    engine = Engine(
        model,
        [a, b],
        done=lambda text: None if text == "done" else "try harder",
        convergence=ConvergenceDetector(window=2, action="warn"),
        clock=FakeClock(),
    )
    rows = turn_rows(run_engine(engine).events)
    first, _, third, _ = rows
    assert first["error_text"] == "first failed\ntool 'c' is not available"
    assert first["producer"] == "tool_error" and first["n_calls"] == 3 and first["n_errors"] == 2
    assert third["error_text"] == (
        "answer rejected: try harder\nconvergence detected: your last 2 answers are nearly identical "
        "(similarity 1.00 >= 0.90); repeating the same answer will not be accepted, try a different approach"
    )
    assert third["producer"] == "completion_rejected" and third["n_calls"] == 0 and third["n_errors"] == 0


def test_context_exceeded_marks_every_turn_of_its_run_dropped():
    ctx = context_run("ctx")
    other = typo_run("fine")
    rows = turn_rows(ctx.events + other.events)
    assert [r["dropped"] for r in rows if r["run_id"] == "ctx"] == [True, True, True]
    assert not any(r["dropped"] for r in rows if r["run_id"] == "fine")
    # the row function itself is per turn: the run-level marking is turn_rows' job
    first = turns_of(ctx.events)[0]
    assert turn_row(first)["dropped"] is False


def test_event_rows_flatten_each_kind():
    rows = [event_row(e) for e in hard_run().events]
    kinds = [r["kind"] for r in rows]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    br = rows[kinds.index("breaker_transitioned")]
    assert (br["target"], br["previous"], br["state"], br["scope"]) == ("read_file", "closed", "open", "tool")
    dec = [r for r in rows if r["kind"] == "recovery_decided"]
    assert [d["decision"] for d in dec] == [
        "retry",
        "fail",
        "retry",
        "retry",
        "retry",
        "retry",
        "retry",
        "retry",
    ]
    assert rows[-1]["producer"] == "tool_recovery_exhausted" and rows[-1]["channel"] == "hard"


def test_rows_need_no_pandas():
    code = (
        "import sys\n"
        "from loopnb.record._rows import turn_row, event_row, turn_rows\n"
        "from loopnb.record._schema import TURN_SCHEMA\n"
        "from loopnb import Engine, ScriptedModel\n"
        "events = []\n"
        "Engine(ScriptedModel(['hi']), observers=[events.append]).run('t')\n"
        "rows = turn_rows(events); [event_row(e) for e in events]\n"
        "assert len(rows) == 1 and len(events) == 5\n"
        "assert 'pandas' not in sys.modules, 'pandas was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("producer", HARD_PRODUCERS)
def test_every_hard_variant_makes_a_hard_row(producer):
    """An ok turn, then the run ends with ``producer`` (user_input_required after a rejected answer)."""
    df = turn_frame(turn_rows(script_run([("ok", 0)], producer).events))
    before = ["ok", "soft"] if producer == "user_input_required" else ["ok"]
    assert df["channel"].tolist() == [*before, "hard"]
    assert df["producer"].iloc[-1] == producer
    assert df["dropped"].tolist() == [producer == "context_exceeded"] * len(before) + [True]
