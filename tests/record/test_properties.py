"""Properties over random runs: one row per turn, exact round trips, live rows equal loaded rows."""

from __future__ import annotations

import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopnb import load
from loopnb.engine._errors import HARD_PRODUCERS
from loopnb.record import Recorder
from loopnb.record._frames import turn_frame

from .conftest import SOFT_OUTCOMES, engine_typo, script_run

turn = st.one_of(st.just(("ok", 0)), st.tuples(st.sampled_from(SOFT_OUTCOMES), st.integers(0, 3)))
run = st.tuples(
    st.lists(turn, max_size=6),
    st.one_of(st.none(), st.sampled_from(HARD_PRODUCERS)),
)


def build(runs: list) -> list:
    events = []
    for i, (turns, hard) in enumerate(runs):
        events.extend(script_run(turns, hard, run_id=f"run-{i}", model=f"m{i % 2}").events)
    return events


def n_turns(turns: list, hard: str | None) -> int:
    """The turns ``script_run`` plays: the drawn ones and the ending (two for user_input_required)."""
    return len(turns) + (2 if hard == "user_input_required" else 1)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(run, min_size=1, max_size=4))
def test_rows_round_trip_and_count(tmp_path, runs):
    events = build(runs)
    rec = Recorder()
    live: list[dict] = []
    rec.subscribe(lambda event, row: live.append(row) if row is not None else None)
    for e in events:
        rec(e)
    t = rec.turns
    assert len(t) == sum(n_turns(turns, hard) for turns, hard in runs)
    assert (t["channel"] == "hard").sum() == sum(1 for _, hard in runs if hard)
    path = tmp_path / "p.jsonl"
    rec.save(path)
    rec.save(tmp_path / "p.parquet")
    pd.testing.assert_frame_equal(load(path).turns, t)
    pd.testing.assert_frame_equal(load(tmp_path / "p.parquet").turns, t)
    pd.testing.assert_frame_equal(load(tmp_path / "p.parquet").events, rec.events)
    # the live rows a view builds equal the recorded ones, except the run-level marking of
    # ContextExceeded runs, which a view applies when it sees that run's RunFinished
    discarded = {f"run-{i}" for i, (_, hard) in enumerate(runs) if hard == "context_exceeded"}
    for row in live:
        if row["run_id"] in discarded:
            row["dropped"] = True
    pd.testing.assert_frame_equal(turn_frame(live), t)


def test_live_rows_of_an_engine_run_equal_the_loaded_ones(tmp_path):
    rec = Recorder(tmp_path / "live.jsonl")
    live: list[dict] = []
    rec.subscribe(lambda event, row: live.append(row) if row is not None else None)
    engine_typo(rec).run("What does src/main.rs do?")
    pd.testing.assert_frame_equal(turn_frame(live), load(tmp_path / "live.jsonl").turns)
