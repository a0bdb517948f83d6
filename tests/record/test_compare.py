"""``loopnb.compare``: two scripted runs aligned turn by turn, their first divergence and totals.

Every run is a real ``Engine`` run on a ``ScriptedModel`` and a ``FakeClock``, recorded by a
``Recorder``; the expected alignments are written out by hand.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pandas as pd
import pytest

import loopnb
from loopnb import Engine, FakeClock, LoopError, ScriptedModel, ToolCall, ToolError, Usage, tool
from loopnb.analysis._align import align
from loopnb.analysis._compare_frames import COMPARE_COLUMNS, HOWS, TOTALS_COLUMNS
from loopnb.record import Recorder


@tool
def read_file(path: str) -> str:
    """Read a UTF-8 text file."""
    if path != "src/main.rs":
        raise ToolError(f"file {path} not found")
    return "fn main() {}"


@tool(name="read_file")
def read_file_crashes(path: str) -> str:
    """Read a file, crashing on every path but one."""
    if path != "src/main.rs":
        raise RuntimeError("disk on fire")
    return "fn main() {}"


@tool(name="read_file")
def read_file_lenient(path: str) -> str:
    """Read a file, any path."""
    return "fn main() {}"


@tool(name="read_file")
def read_file_terse(path: str) -> str:
    """Read a file, saying little when it is missing."""
    if path != "src/main.rs":
        raise ToolError("no")
    return "fn main() {}"


def record(
    steps: list[Any],
    *,
    run_id: str = "r",
    tools: Any = (read_file,),
    recorder: Recorder | None = None,
    **engine: Any,
) -> Recorder:
    """``steps`` run by a scripted model on a fake clock, recorded."""
    rec = recorder if recorder is not None else Recorder(redact=None)
    e = Engine(ScriptedModel(steps), list(tools), clock=FakeClock(), **engine)
    e.subscribe(rec)
    with contextlib.suppress(LoopError):
        e.run("What does src/main.rs do?", run_id=run_id)
    return rec


TYPO = ToolCall("read_file", {"path": "src/mian.rs"})
RIGHT = ToolCall("read_file", {"path": "src/main.rs"})


def rows(c: loopnb.Comparison) -> list[tuple[Any, Any, Any]]:
    """Each aligned row as (turn_a, turn_b, how), ``None`` for a missing value."""
    t = c.turns
    return [
        tuple(None if v is pd.NA else v for v in row)
        for row in t[["turn_a", "turn_b", "how"]].astype(object).itertuples(index=False)
    ]


def test_identical_runs_agree() -> None:
    steps = [TYPO, RIGHT, "It prints nothing."]
    c = loopnb.compare(record(steps, run_id="a"), record(steps, run_id="b"))
    assert c.first_divergence is None and c.divergence is None
    assert rows(c) == [(1, 1, None), (2, 2, None), (3, 3, None)]
    assert not c.turns["differs"].any()
    assert tuple(c.turns.columns) == COMPARE_COLUMNS
    assert c.turns["call_a"].tolist()[:2] == [
        'read_file({"path": "src/mian.rs"})',
        'read_file({"path": "src/main.rs"})',
    ]
    assert c.turns["call_a"].isna().tolist() == [False, False, True]  # the final reply calls nothing
    assert "agree" in repr(c)


def test_an_extra_retry_is_a_gap_and_later_rows_realign() -> None:
    a = record([TYPO, RIGHT, RIGHT, "It prints nothing."], run_id="a")
    b = record([RIGHT, RIGHT, "It prints nothing."], run_id="b")
    c = loopnb.compare(a, b)
    assert rows(c) == [(1, None, "call"), (2, 1, None), (3, 2, None), (4, 3, None)]
    assert c.first_divergence == 1
    d = c.divergence
    assert d is not None and (d.how, d.row, d.turn_a, d.turn_b) == ("call", 1, 1, None)
    assert d.a == 'read_file({"path": "src/mian.rs"})' and d.b is None
    assert "a made a turn b did not" in d.text()
    t = c.turns
    assert t["channel_a"].astype(object).tolist() == ["soft", "ok", "ok", "ok"]
    assert t["channel_b"].astype(object).tolist() == [pd.NA, "ok", "ok", "ok"]


def test_a_gap_in_the_middle_realigns_the_rest() -> None:
    other = ToolCall("read_file", {"path": "Cargo.toml"})
    a = record([RIGHT, TYPO, other, other, "done"], run_id="a")
    b = record([RIGHT, other, other, "done"], run_id="b")
    c = loopnb.compare(a, b)
    assert rows(c) == [(1, 1, None), (2, None, "call"), (3, 2, None), (4, 3, None), (5, 4, None)]
    assert c.first_divergence == 2


def test_b_making_an_extra_turn_diverges_at_as_next_turn() -> None:
    a = record([RIGHT, "done"], run_id="a")
    b = record([TYPO, RIGHT, "done"], run_id="b")
    c = loopnb.compare(a, b, labels=("before", "after"))
    assert rows(c) == [(None, 1, "call"), (1, 2, None), (2, 3, None)]
    d = c.divergence
    assert d is not None and c.first_divergence == 1 and d.turn_a is None and d.turn_b == 1
    assert d.text().startswith("turn 1 (before's numbering): after made a turn before did not")
    assert c.totals["side"].tolist() == ["before", "after"]


def test_a_different_channel_on_the_same_call() -> None:
    steps = [TYPO, RIGHT, "done"]
    a = record(steps, run_id="a")
    b = record(steps, run_id="b", tools=(read_file_lenient,))
    c = loopnb.compare(a, b)
    assert rows(c) == [(1, 1, "channel"), (2, 2, None), (3, 3, None)]
    d = c.divergence
    assert d is not None and (d.turn, d.how, d.a, d.b) == (1, "channel", "soft", "ok")


def test_a_different_producer_and_a_different_error_text() -> None:
    steps = [TYPO, RIGHT, "done"]
    a = record(steps, run_id="a")
    crashing = loopnb.compare(a, record(steps, run_id="b", tools=(read_file_crashes,)))
    assert rows(crashing)[0] == (1, 1, "producer")
    assert (crashing.divergence.a, crashing.divergence.b) == ("tool_error", "tool_panic")  # type: ignore[union-attr]
    terse = loopnb.compare(a, record(steps, run_id="b", tools=(read_file_terse,)))
    assert rows(terse) == [(1, 1, "error_text"), (2, 2, None), (3, 3, None)]
    d = terse.divergence
    assert d is not None and d.a == "file src/mian.rs not found" and d.b == "no"


def test_one_ended_early() -> None:
    steps = [TYPO, TYPO, TYPO, RIGHT, "done"]
    a = record(steps, run_id="a")
    b = record(steps, run_id="b", max_turns=2)
    c = loopnb.compare(a, b)
    got = rows(c)
    # b's turn 3 is its hard row (max_turns); a goes on with turns 4 and 5 alone
    assert got[:2] == [(1, 1, None), (2, 2, None)]
    assert got[2][:2] == (3, 3) and got[2][2] in ("channel", "call")
    assert got[3:] == [(4, None, "ended"), (5, None, "ended")]
    assert c.first_divergence == 3
    totals = c.totals.set_index("side")
    assert totals.loc["a", "ended"] == "ok" and totals.loc["b", "ended"] == "loop_detected"


def test_same_turns_different_endings() -> None:
    steps = [RIGHT, "done"]
    a = record(steps, run_id="a")
    b = Recorder(redact=None)
    for event in a.event_objects:
        b(event if event.kind != "run_finished" else _hard_end(event))
    c = loopnb.compare(a, b)
    assert rows(c) == [(1, 1, None), (2, 2, None)]
    d = c.divergence
    assert d is not None and d.row is None and (d.turn, d.how, d.a, d.b) == (3, "ended", "ok", "cancelled")
    assert "ended differently" in d.text()


def _hard_end(event: Any) -> Any:
    from dataclasses import replace

    return replace(
        event, outcome="hard", producer="cancelled", error="Cancelled", message="stopped", output=None
    )


def test_totals_are_the_audits() -> None:
    usage = Usage(input_tokens=10, output_tokens=3)
    steps: list[Any] = [loopnb.ModelReply(tool_calls=(TYPO,), usage=usage), RIGHT, "done"]
    a = record(
        steps, run_id="a", breakers={"read_file": loopnb.CircuitBreaker(failure_threshold=1, cooldown=0.0)}
    )
    b = record([RIGHT, "done"], run_id="b")
    c = loopnb.compare(a, b)
    assert tuple(c.totals.columns) == TOTALS_COLUMNS
    for side, rec in zip(c.totals.itertuples(index=False), (a, b), strict=True):
        audit = loopnb.audit(rec)
        episodes = audit.recovery_episodes()
        assert side.turns == len(rec.turns)
        assert side.soft == int((rec.turns["channel"] == "soft").sum())
        assert side.soft_streaks == len(episodes)
        assert side.recovered == int((episodes["outcome"] == "recovered").sum())
        assert side.breaker_trips == int(audit.breakers()["trips"].sum())
        assert side.retried_calls == len(audit.retries())
        assert side.ceiling == 5 and side.with_events
    t = c.totals.set_index("side")
    assert t.loc["a", "breaker_trips"] == 1 and t.loc["b", "breaker_trips"] == 0
    assert t.loc["a", "input_tokens"] == 10 and t.loc["b", "input_tokens"] is pd.NA
    assert t.loc["a", "recovery_rate"] == 1.0 and t.loc["b", "recovery_rate"] is pd.NA
    assert str(c.totals["turns"].dtype) == "Int64" and str(c.totals["ended"].dtype) == "string"


def test_retries_against_the_ceiling() -> None:
    class RetryAll:
        def decide(self, failure: Any, attempt: int, max_attempts: int) -> Any:
            return loopnb.Retry()

    a = record([TYPO, RIGHT, "done"], run_id="a", recovery=RetryAll())
    b = record([TYPO, RIGHT, "done"], run_id="b")
    c = loopnb.compare(a, b)
    t = c.totals.set_index("side")
    assert t.loc["a", "max_retries"] == 5 and t.loc["a", "exhausted"] == 1
    assert t.loc["a", "ended"] == "tool_recovery_exhausted"
    assert t.loc["b", "max_retries"] == 0
    assert c.turns["recovery_attempts_a"].iloc[0] == 5
    assert rows(c)[0] == (1, 1, "channel")  # a's turn 1 is the hard row: the ceiling


def test_turns_frames_alone_compare_by_tool_names() -> None:
    a = record([TYPO, RIGHT, "done"], run_id="a")
    b = record([RIGHT, "done"], run_id="b")
    c = loopnb.compare(a.turns, b.turns)
    assert not c.totals["with_events"].any()
    assert c.turns["call_a"].tolist()[0] == "read_file"  # no arguments without the events
    # by tool names the two first turns are the same call: a's retry is the gap after it
    assert rows(c) == [(1, 1, "channel"), (2, None, "call"), (3, 2, None)]
    assert c.totals["ended"].tolist() == ["ok", "ok"]


def test_a_recording_with_several_runs_needs_runs() -> None:
    rec = Recorder(redact=None)
    record([TYPO, RIGHT, "done"], run_id="r1", recorder=rec)
    record([RIGHT, "done"], run_id="r2", recorder=rec)
    with pytest.raises(ValueError, match=r"side a \(a\) holds 2 runs \('r1', 'r2'\); pick one with runs="):
        loopnb.compare(rec, rec)
    with pytest.raises(ValueError, match=r"side b \(b\) has no run 'r3'; its runs are 'r1', 'r2'"):
        loopnb.compare(rec, rec, runs=("r1", "r3"))
    c = loopnb.compare(rec, rec, runs=("r1", "r2"))
    assert c.totals["run_id"].tolist() == ["r1", "r2"] and c.first_divergence == 1
    same = loopnb.compare(rec.recording(), rec.turns[rec.turns.run_id == "r1"], runs=("r1", None))
    assert same.divergence is None


def test_a_sweep_style_frame_filtered_to_a_run() -> None:
    rec = Recorder(redact=None)
    record([TYPO, RIGHT, "done"], run_id="base-0", recorder=rec)
    record([RIGHT, "done"], run_id="tight-0", recorder=rec)
    turns = rec.turns
    turns.insert(0, "seed", pd.array([0] * len(turns), dtype="Int64"))
    turns.insert(0, "config", turns["run_id"].str.split("-").str[0])
    c = loopnb.compare(
        turns[turns.config == "base"], turns[turns.config == "tight"], labels=("base", "tight")
    )
    assert c.totals["run_id"].tolist() == ["base-0", "tight-0"]
    assert c.first_divergence == 1


def test_bad_inputs_say_what_was_wrong() -> None:
    a = record([RIGHT, "done"], run_id="a")
    with pytest.raises(TypeError, match=r"compare\(\) \(side b\) takes a Recording"):
        loopnb.compare(a, 42)
    with pytest.raises(ValueError, match="labels must be two different"):
        loopnb.compare(a, a, labels=("x", "x"))
    with pytest.raises(ValueError, match=r"side a \(a\) holds no run"):
        loopnb.compare(a.turns.iloc[:0], a)
    with pytest.raises(ValueError, match="this looks like an events frame"):
        loopnb.compare(a.events, a)


def test_flows_count_each_side_and_their_difference() -> None:
    a = record([TYPO, RIGHT, "done"], run_id="a")
    b = record([RIGHT, "done"], run_id="b")
    flows = loopnb.compare(a, b).flows()
    fa, fb = loopnb.flow_counts(a), loopnb.flow_counts(b)
    assert flows["count_a"].tolist() == fa["count"].tolist()
    assert flows["count_b"].tolist() == fb["count"].tolist()
    assert (flows["difference"] == flows["count_b"] - flows["count_a"]).all()
    assert flows.set_index("edge").loc["next-ok", "difference"] == -1


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("xyz", "xyz", [(0, 0), (1, 1), (2, 2)]),
        ("xwwF", "xwF", [(0, 0), (1, 1), (2, None), (3, 2)]),
        ("xaF", "xbF", [(0, 0), (1, 1), (2, 2)]),
        ("x", "xyz", [(0, 0), (None, 1), (None, 2)]),
        ("", "ab", [(None, 0), (None, 1)]),
        ("abcde", "vwxyz", [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4)]),
    ],
)
def test_align(a: str, b: str, expected: list[tuple[int | None, int | None]]) -> None:
    assert align(list(a), list(b)) == expected


def test_align_is_linear_for_long_runs_that_drift() -> None:
    a = ["x", "y"] * 5000
    b = ["x", "y", "z"] + ["x", "y"] * 4999
    pairs = align(a, b)
    assert pairs[2] == (None, 2) and pairs[3] == (2, 3) and len(pairs) == 10001
    assert all(HOWS)


def test_a_sweeps_runs_compare_by_run_id_without_dask(tmp_path: Any) -> None:
    """A sweep's folder written batch by batch (what each Dask task does), read as a ``Sweep``."""
    import json

    from loopnb._sweep import Sweep, SweepConfig
    from loopnb._sweep._batch import run_batch
    from loopnb._sweep._plan import PLAN_FILE, plan

    configs = [
        SweepConfig("default", scenario="stubborn_loop"),
        SweepConfig("tight", scenario="stubborn_loop", loop_detector={"warn_after": 1, "stop_after": 2}),
    ]
    chosen = plan(None, seeds=2, configs=configs, batch=2)
    (tmp_path / PLAN_FILE).write_text(json.dumps(chosen.to_json()), encoding="utf-8")
    for batch in chosen.batches(str(tmp_path)):
        run_batch(batch)
    sweep = Sweep(tmp_path)
    with pytest.raises(ValueError, match=r"holds 4 runs \('default-0', 'default-1', 'tight-0', 'tight-1'\)"):
        loopnb.compare(sweep, sweep)
    c = loopnb.compare(sweep, sweep, runs=("default-0", "tight-0"), labels=("default", "tight"))
    assert (c.first_divergence, c.divergence.how) == (2, "producer")  # type: ignore[union-attr]
    assert c.totals["turns"].tolist() == [6, 3] and c.totals["with_events"].all()
    turns = sweep.turns
    one = loopnb.compare(turns[turns.run_id == "default-0"], turns[turns.run_id == "tight-0"])
    assert one.first_divergence == 2 and not one.totals["with_events"].any()
    with pytest.raises(ValueError, match=r"holds 2 runs \('default-0', 'default-1'\); pick one with runs="):
        loopnb.compare(turns[turns.config == "default"], turns[turns.config == "tight"])
