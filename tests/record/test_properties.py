"""Properties over random runs: one row per turn, exact round trips, live rows equal loaded rows."""

from __future__ import annotations

import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopnb.engine.errors import HARD_PRODUCERS
from loopnb.record import Recorder, load
from loopnb.record.frames import turn_frame
from loopnb.record.synthetic import Call, RunBuilder

from .conftest import engine_typo

SOFT = ["tool_error", "tool_panic", "not_advertised", "registry_miss", "timeout", "breaker_open"]

turn = st.one_of(
    st.just(("ok", None, 0)),
    st.tuples(st.just("soft"), st.sampled_from(SOFT), st.integers(0, 3)),
)
run = st.tuples(
    st.lists(turn, max_size=6),
    st.one_of(st.none(), st.sampled_from(HARD_PRODUCERS)),
)


def build(runs: list) -> list:
    events = []
    for i, (turns, hard) in enumerate(runs):
        b = RunBuilder(f"run-{i}", model=f"m{i % 2}")
        for kind, producer, retries in turns:
            if kind == "ok":
                b.tool_turn(Call("read_file", content="fine"))
            else:
                b.tool_turn(Call("read_file", content=f"{producer}!", error=producer, retries=retries))
        if hard is None:
            b.final("done")
        else:
            b.hard(hard, f"ended: {hard}")
        events.extend(b.events)
    return events


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
    assert len(t) == sum(len(turns) + 1 for turns, _ in runs)
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
