"""The golden recordings of ``tests/golden/v1`` and ``v2`` load into the frames their runs must produce.

The files were written once by the real engine (``tests/golden/make_goldens.py``) and are never
rewritten: a later format version's loader must still read them into these frames. So the checks
here name frame columns only, never how a line of the file is laid out. Every expected value is
what the specification says the run must produce, written out by hand.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from loopnb import load

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
VERSIONS = ("v1", "v2")  # every format version's goldens must load into the same frames
TURN_COLUMNS = ["turn", "channel", "producer", "tools", "error_text", "dropped", "recovery_attempts"]

MIAN = "file src/mian.rs not found"


def loop_text(n: int) -> str:
    """The loop detector's text for a call that ``n`` identical failing calls came before."""
    return (
        f'loop detected: read_file({{"path":"src/mian.rs"}}) is being repeated ({n} identical calls in '
        "a row) after failing the same way: file src/mian.rs not found; change the call or try another "
        "approach"
    )


EXHAUSTED = "recovery of parse asked for retry 6 after 6 calls; the ceiling is 5 retries"
# task 9 tokens; turn 1 (reply 16, result 11) is compacted away; turn 2 (reply 17, result 124) stays
OVERFLOW = (
    "the request needs 150 tokens after compaction; the budget is 100 "
    "(the system prompt and the task are never dropped)"
)

TURNS = {
    "ok_soft_then_ok": [
        [1, "soft", "tool_error", "read_file", MIAN, False, 0],
        [2, "ok", None, "read_file", None, False, 0],
        [3, "ok", None, None, None, False, 0],
    ],
    "hard_loop_detected": [  # LoopDetector(warn_after=2, stop_after=3)
        [1, "soft", "tool_error", "read_file", MIAN, False, 0],
        [2, "soft", "tool_error", "read_file", MIAN, False, 0],
        [
            3,
            "soft",
            "loop_refusal",
            "read_file",
            "dispatch refused before execution: " + loop_text(2),
            False,
            0,
        ],
        [4, "hard", "loop_detected", "read_file", loop_text(3), True, 0],
    ],
    "hard_tool_recovery_exhausted": [
        [1, "soft", "recovery_gave_up", "fetch", "connection refused: https://a.test", False, 0],
        [2, "ok", None, "parse", None, False, 1],
        [3, "ok", None, "fetch", None, False, 0],
        [4, "hard", "tool_recovery_exhausted", "parse", EXHAUSTED, True, 5],
    ],
    "hard_context_exceeded": [  # the overflow discards the scratchpad: every turn is dropped
        [1, "soft", "tool_error", "read_file", "file notes/a.txt not found", True, 0],
        [2, "ok", None, "read_file", None, True, 0],
        [3, "hard", "context_exceeded", None, OVERFLOW, True, 0],
    ],
}


def recording(name: str, version: str = "v1"):
    return load(GOLDEN / version / f"{name}.jsonl")


@pytest.fixture(params=VERSIONS)
def version(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def rows(df: pd.DataFrame, columns: list[str]) -> list[list[object]]:
    """``columns`` of ``df`` as plain Python values, missing values as None."""
    return [
        [None if v is pd.NA or v is pd.NaT or (isinstance(v, float) and v != v) else v for v in row]
        for row in df[columns].astype(object).values.tolist()
    ]


def kinds(events: pd.DataFrame, kind: str) -> pd.DataFrame:
    return events[events["kind"].astype(str) == kind]


@pytest.mark.parametrize("name", list(TURNS))
def test_each_golden_loads_into_its_turns(name, version):
    rec = recording(name, version)
    assert rec.meta["version"] == int(version[1:])
    assert rows(rec.turns, TURN_COLUMNS) == TURNS[name]
    assert rec.turns["run_id"].astype(str).unique().tolist() == [f"golden-{name}"]
    assert rec.meta["run_ids"] == [f"golden-{name}"]
    events = rec.events
    assert events["kind"].astype(str).iloc[0] == "run_started"
    assert events["kind"].astype(str).iloc[-1] == "run_finished"
    assert events["seq"].tolist() == list(range(len(events)))
    assert len(kinds(events, "turn_finished")) == len(TURNS[name])


def test_latencies_and_start_times_come_from_the_fake_clock(version):
    """The model takes 0.25 s a request; parse's retry waits 2 s, and the 5 retries of turn 4 10 s."""
    turns = recording("hard_tool_recovery_exhausted", version).turns
    assert turns["latency_ms"].tolist() == [250.0, 2250.0, 250.0, 10250.0]
    start = pd.Timestamp("2026-01-01T00:00:00Z")
    offsets = [0.0, 0.25, 2.5, 2.75]
    assert turns["started_at"].tolist() == [start + pd.Timedelta(seconds=s) for s in offsets]
    assert turns["model"].astype(str).unique().tolist() == ["scripted"]


def test_ok_run_reports_one_soft_error_and_the_answer(version):
    rec = recording("ok_soft_then_ok", version)
    assert rec.turns["reply_text"].iloc[-1] == "It prints nothing."
    ev = rec.events
    soft = kinds(ev, "soft_error_returned")
    assert rows(soft, ["turn", "tool", "producer", "text"]) == [[1, "read_file", "tool_error", MIAN]]
    dispatched = kinds(ev, "tool_dispatched")
    assert rows(dispatched, ["turn", "attempt", "executed", "is_error"]) == [
        [1, 0, True, True],
        [2, 0, True, False],
    ]
    finished = kinds(ev, "run_finished")
    assert rows(finished, ["channel", "producer", "text"]) == [["ok", None, "It prints nothing."]]


def test_loop_run_refuses_once_then_stops(version):
    ev = recording("hard_loop_detected", version).events
    fired = kinds(ev, "detector_fired")
    assert rows(fired, ["turn", "detector", "action", "count", "text"]) == [
        [3, "loop", "refuse", 3, loop_text(2)],
        [4, "loop", "stop", 4, loop_text(3)],
    ]
    # the refused call and the stopped one never ran: 2 executions, 1 refusal, none on turn 4
    dispatched = kinds(ev, "tool_dispatched")
    assert rows(dispatched, ["turn", "executed", "producer"]) == [
        [1, True, "tool_error"],
        [2, True, "tool_error"],
        [3, False, "loop_refusal"],
    ]
    hard = kinds(ev, "hard_error_raised")
    assert rows(hard, ["turn", "channel", "producer"]) == [[4, "hard", "loop_detected"]]


def test_recovery_run_retries_past_the_ceiling_and_its_breaker_trips_half_opens_and_closes(version):
    rec = recording("hard_tool_recovery_exhausted", version)
    assert rec.turns["notes"].tolist()[0] == "fetch is down; not retrying"
    assert rec.turns["breakers_open"].tolist() == [1, 1, 0, 0]
    ev = rec.events
    transitions = kinds(ev, "breaker_transitioned")
    assert rows(transitions, ["turn", "target", "scope", "previous", "state"]) == [
        [1, "fetch", "tool", "closed", "open"],
        [3, "fetch", "tool", "open", "half_open"],
        [3, "fetch", "tool", "half_open", "closed"],
    ]
    decided = kinds(ev, "recovery_decided")
    assert rows(decided, ["turn", "tool", "attempt", "decision"]) == [
        [1, "fetch", 0, "skip"],
        [2, "parse", 0, "retry"],
        *([4, "parse", k, "retry"] for k in range(6)),  # the 6th retry asked for is refused
    ]
    assert decided["max_attempts"].unique().tolist() == [5]
    turn4 = kinds(ev, "tool_dispatched")
    turn4 = turn4[turn4["turn"] == 4]
    assert turn4["attempt"].tolist() == [0, 1, 2, 3, 4, 5]  # the original call and 5 retries
    assert turn4["is_error"].all()
    hard = kinds(ev, "hard_error_raised")
    assert rows(hard, ["turn", "producer", "text"]) == [[4, "tool_recovery_exhausted", EXHAUSTED]]


def test_context_run_ends_before_asking_the_model_again(version):
    rec = recording("hard_context_exceeded", version)
    last = rec.turns.iloc[-1]
    assert last["model"] is pd.NA and last["n_calls"] == 0  # the model was never asked on turn 3
    ev = rec.events
    assert kinds(ev, "model_replied")["turn"].tolist() == [1, 2]
    assert len(kinds(ev, "context_compacted")) == 0  # compaction could not fit: nothing was applied
    finished = kinds(ev, "run_finished")
    assert rows(finished, ["channel", "producer", "text"]) == [["hard", "context_exceeded", OVERFLOW]]


OLD_PARQUET = Path(__file__).resolve().parents[1] / "golden" / "parquet-v1-layout"
"""Parquet recordings in the first layout (turns and events in one table, told apart by a ``record``
column), written once by that layout's writer and never rewritten: two of version-2 event lines
from the golden runs, and ``ok_soft_then_ok.v1-events`` holding the version-1 golden's lines."""


@pytest.mark.parametrize(
    ("file", "name", "version"),
    [
        ("ok_soft_then_ok", "ok_soft_then_ok", 2),
        ("hard_tool_recovery_exhausted", "hard_tool_recovery_exhausted", 2),
        ("ok_soft_then_ok.v1-events", "ok_soft_then_ok", 1),
    ],
)
def test_a_parquet_recording_of_the_first_layout_loads_its_turns_and_events(file, name, version):
    rec = load(OLD_PARQUET / f"{file}.parquet")
    assert rec.meta["version"] == version
    assert rows(rec.turns, TURN_COLUMNS) == TURNS[name]
    golden = recording(name)
    assert [e.kind for e in rec.event_objects] == [e.kind for e in golden.event_objects]
    assert rec.events["seq"].tolist() == list(range(len(golden.event_objects)))
    assert len(kinds(rec.events, "turn_finished")) == len(TURNS[name])
