"""Frames built column by column equal the frames of the per-row definitions, on every scenario."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopnb import (
    CircuitBreaker,
    ContextBudget,
    Engine,
    FakeClock,
    Retry,
    ScriptedModel,
    Skip,
    ToolCall,
    ToolError,
    load,
    scenarios,
    tool,
)
from loopnb.engine import turns_of
from loopnb.record import Recorder
from loopnb.record._frames import event_frame, event_table, time_column, turn_frame, turn_table
from loopnb.record._rows import EVENT_LAYOUTS, event_row, turn_row, turn_rows, when
from loopnb.record._schema import EVENT_COLUMNS, TURN_COLUMNS

from .conftest import hard_run, recorded, reply, run_engine, typo_run

SCENARIO_RUNS = {name: scenarios.get(name).run() for name in scenarios.names()}
SCENARIO_EVENTS = {name: outcome.events for name, outcome in SCENARIO_RUNS.items()}


def reference_turn_row(turn) -> dict:
    """The turns row spelled out column by column from what the model read (``results`` and
    ``feedback``): the definition the column readers must keep to."""
    reply = turn.reply
    errors = [r.content for r in turn.results if r.is_error]
    read = errors + [m.content for m in turn.feedback if m.is_error]
    error_text = turn.hard.message if turn.hard is not None else "\n".join(read) or None
    notes = [r.note for r in turn.results if r.note is not None]
    calls = reply.tool_calls if reply is not None else ()
    usage = reply.usage if reply is not None else None
    breakers = turn.breakers
    import json

    return {
        "run_id": turn.run_id,
        "turn": turn.turn,
        "seq": turn.finished.seq,
        "channel": turn.channel,
        "producer": turn.producer,
        "dropped": turn.dropped,
        "tools": ", ".join(c.name for c in calls) or None,
        "n_calls": len(calls),
        "n_errors": len(errors),
        "error_text": error_text,
        "notes": "\n".join(notes) or None,
        "reply_text": reply.text if reply is not None else None,
        "recovery_attempts": max((d.attempt for d in turn.dispatched), default=0),
        "breaker_states": json.dumps(breakers) if breakers else None,
        "breakers_open": sum(1 for s in breakers.values() if s != "closed"),
        "model": reply.model if reply is not None else None,
        "latency_ms": round((turn.finished.at - turn.started_at) * 1000.0, 3),
        "input_tokens": usage.input_tokens if usage else None,
        "output_tokens": usage.output_tokens if usage else None,
        "started_at": datetime.fromtimestamp(turn.started_at, UTC),
        "source_status": turn.finished.source_status,
        "injected": "; ".join(
            dict.fromkeys([*turn.model_injected, *(d.injected for d in turn.dispatched if d.injected)])
        )
        or None,
    }


@pytest.mark.parametrize("name", list(SCENARIO_RUNS))
def test_what_the_model_read_is_put_back_together_from_the_events_exactly(name):
    outcome = SCENARIO_RUNS[name]
    turns = turns_of(outcome.events)
    committed = [t for t in turns if not t.dropped or t.hard is None]
    assert [r for t in committed for r in t.results] == list(outcome.run.tool_results)
    replies = [m for m in outcome.run.messages if m.role == "assistant"]
    assert [t.reply for t in turns if t.hard is None] == replies[: len([t for t in turns if t.hard is None])]


@pytest.mark.parametrize("name", list(SCENARIO_EVENTS))
def test_column_wise_frames_equal_the_row_definitions(name):
    events = SCENARIO_EVENTS[name]
    pd.testing.assert_frame_equal(turn_table(events), turn_frame(turn_rows(events)))
    pd.testing.assert_frame_equal(event_table(events), event_frame([event_row(e) for e in events]))
    for turn in turns_of(events):
        assert turn_row(turn) == reference_turn_row(turn)
        assert list(turn_row(turn)) == list(TURN_COLUMNS)
    for e in events:
        assert list(event_row(e)) == list(EVENT_COLUMNS)


def test_all_scenarios_at_once_and_every_event_kind_covered():
    events = [e for evs in SCENARIO_EVENTS.values() for e in evs]
    events += typo_run("t").events + hard_run("h").events
    pd.testing.assert_frame_equal(turn_table(events), turn_frame(turn_rows(events)))
    pd.testing.assert_frame_equal(event_table(events), event_frame([event_row(e) for e in events]))
    assert len(EVENT_LAYOUTS) == 14


class _RetryTwiceThenSkip:
    def decide(self, failure, attempt, max_attempts):
        return Retry() if attempt < 2 else Skip(note="analysed")


def detail_run():
    """Every detail a turns row has, ended by ``context_exceeded`` (a budget of 150 tokens).

    Turn 1: a fails (2 retries, then skipped with a note) and its breaker opens; b works; usage
    10 in, 2 out. Turn 2: an answer the done-check rejects (feedback). Turn 3: a refused by its
    open breaker, b prints 600 characters. Turn 4's request does not fit: the run ends hard."""

    @tool
    def a(x: int) -> str:
        """Always fails."""
        raise ToolError("first failed")

    @tool
    def b(size: int) -> str:
        """Prints ``size`` characters."""
        return "z" * size

    model = ScriptedModel(
        [
            reply(ToolCall("a", {"x": 1}), ToolCall("b", {"size": 4}), usage=(10, 2)),
            "an answer",
            [ToolCall("a", {"x": 2}), ToolCall("b", {"size": 600})],
            "never asked",
        ]
    )
    engine = Engine(
        model,
        [a, b],
        recovery=_RetryTwiceThenSkip(),
        breakers={"a": CircuitBreaker(failure_threshold=1)},
        done=lambda text: "try harder",
        context=ContextBudget(max_tokens=150),
        clock=FakeClock(),
    )
    return run_engine(engine, run_id="d")


def test_detail_rows_match():
    events = detail_run().events
    turns = turn_table(events)
    assert turns["producer"].astype(str).tolist() == [
        "recovery_gave_up",
        "completion_rejected",
        "breaker_open",
        "context_exceeded",
    ]
    assert turns["notes"].iloc[0] == "analysed" and turns["recovery_attempts"].iloc[0] == 2
    assert turns["input_tokens"].iloc[0] == 10 and turns["breakers_open"].tolist() == [1, 1, 1, 1]
    pd.testing.assert_frame_equal(turns, turn_frame(turn_rows(events)))
    pd.testing.assert_frame_equal(event_table(events), event_frame([event_row(e) for e in events]))
    assert turns["dropped"].all()
    assert turn_table([]).equals(turn_frame([])) and event_table([]).equals(event_frame([]))


def test_a_turn_reports_its_feedback_as_a_soft_error():
    model = ScriptedModel(["an answer", "cited"])
    engine = Engine(model, done=lambda text: None if text == "cited" else "cite it", clock=FakeClock())
    rec = recorded(run_engine(engine), redact=None)
    ev = rec.events
    soft = ev[ev["kind"].eq("soft_error_returned")]
    assert soft[["turn", "producer", "text"]].astype(object).values.tolist() == [
        [1, "completion_rejected", "answer rejected: cite it"]
    ]
    first = ev[ev["kind"].eq("turn_finished")].iloc[0]
    assert (first["channel"], first["producer"]) == ("soft", "completion_rejected")
    assert rec.turns["error_text"].tolist()[0] == "answer rejected: cite it"


def test_the_recorder_frames_equal_the_loaded_ones_and_the_rows(tmp_path):
    rec = Recorder(tmp_path / "all.jsonl", redact=None)
    for evs in SCENARIO_EVENTS.values():
        for e in evs:
            rec(e)
    rec.close()
    events = rec.event_objects
    pd.testing.assert_frame_equal(rec.turns, turn_frame(turn_rows(events)))
    pd.testing.assert_frame_equal(rec.events, event_frame([event_row(e) for e in events]))
    assert rec.turn_rows() == turn_rows(events)
    loaded = load(tmp_path / "all.jsonl")
    pd.testing.assert_frame_equal(loaded.turns, rec.turns)
    pd.testing.assert_frame_equal(loaded.events, rec.events)


seconds = st.one_of(
    st.floats(min_value=-1e10, max_value=4e10, allow_nan=False, allow_infinity=False),
    # exact half microseconds, where rounding half to even decides
    st.integers(-(10**16), 4 * 10**16).map(lambda k: k / 2e6),
    st.integers(0, 2 * 10**9).map(lambda k: k + 0.9999995),
)


@given(st.lists(seconds, max_size=30))
@settings(max_examples=300, deadline=None)
def test_time_column_is_when_to_the_microsecond(values):
    expected = pd.array([when(v) for v in values], dtype=pd.DatetimeTZDtype("us", "UTC"))
    pd.testing.assert_extension_array_equal(time_column(values), expected)


def test_a_turn_holds_epoch_seconds_and_its_row_a_datetime():
    turn = turns_of(typo_run().events)[0]
    started = next(e for e in typo_run().events if e.kind == "turn_started")
    assert turn.started_at == started.at
    assert turn_row(turn)["started_at"] == when(started.at)


def test_a_subclass_of_an_event_has_its_base_row():
    from dataclasses import dataclass

    from loopnb.engine._events import TurnStarted

    @dataclass(slots=True, kw_only=True)
    class Marked(TurnStarted):
        pass

    e = Marked(seq=1, run_id="r", at=1.0, turn=3)
    assert event_row(e)["turn"] == 3
    assert event_table([e])["turn"].tolist() == [3]


def test_text_columns_take_other_values_as_pandas_does():
    from loopnb.record import TURNS
    from loopnb.record._frames import pandas_dtypes, typed_column

    def outcome(make):  # the array, or the error pandas raised making it
        try:
            return make()
        except (TypeError, ValueError) as exc:
            return exc

    dtype = pandas_dtypes(TURNS)["tools"]
    for values in (["a", None], [b"abc", None], [bytearray(b"x")], [1, "b"], []):
        ours = outcome(lambda values=values: typed_column(list(values), dtype))
        theirs = outcome(lambda values=values: pd.array(values, dtype=dtype))
        if isinstance(theirs, Exception):  # pandas 2.2 cannot make text of a bytearray; 3 can
            assert (type(ours), str(ours)) == (type(theirs), str(theirs)), values
        else:
            assert not isinstance(ours, Exception), (values, ours)
            pd.testing.assert_extension_array_equal(ours, theirs)
