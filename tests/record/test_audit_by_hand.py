"""Audit numbers of engine runs and of frames a user has reshaped, each counted by hand."""

from __future__ import annotations

import pandas as pd
import pytest

from loopnb import (
    CircuitBreaker,
    ConvergenceDetector,
    Engine,
    FallbackChain,
    LoopError,
    ModelUnavailable,
    ScriptedModel,
    ToolCall,
    ToolError,
    audit,
    load,
    load_many,
    tool,
)
from loopnb.analysis import Audit
from loopnb.engine import FakeClock, ModelReply, Retry, Usage
from loopnb.record import Recorder, RecordingWarning

from .conftest import Run, hard_run, read_file, recorded, run_engine, script_run, timed_model, typo_run
from .test_audit import breaker_run, loop_run


def table(df: pd.DataFrame, *columns: str) -> list[list[str | None]]:
    """The rows of ``columns`` as text (floats to 6 places), missing values as None."""

    def text(v: object) -> str | None:
        return None if pd.isna(v) else f"{v:.6g}" if isinstance(v, float) else str(v)

    return [[text(v) for v in row] for row in df[list(columns)].astype(object).values.tolist()]


class AlwaysRetry:
    def decide(self, failure, attempt, max_attempts):
        return Retry()


def test_a_call_id_reused_across_turns_and_within_a_reply_is_three_calls():
    """Every call of ``flaky`` fails twice, then works: 2 retries, 3 calls, recovered. The
    model gives the same id to both calls of turn 1 (the engine tells them apart: ``c1_1``) and
    to the call of turn 2."""
    tries = []

    @tool
    def flaky(x: int) -> str:
        """Works on every third try."""
        tries.append(x)
        if len(tries) % 3:
            raise ToolError("busy")
        return "done"

    script = [
        [ToolCall("flaky", {"x": 1}, id="c1"), ToolCall("flaky", {"x": 2}, id="c1")],
        ToolCall("flaky", {"x": 3}, id="c1"),
        "bye",
    ]
    rec = Recorder()
    Engine(ScriptedModel(script), tools=[flaky], recovery=AlwaysRetry(), observers=[rec]).run("t")
    assert len(tries) == 9
    r = audit(rec).retries()
    assert table(r, "turn", "call_id", "retries", "calls", "last_decision", "outcome") == [
        ["1", "c1", "2", "3", "retry", "recovered"],
        ["1", "c1_1", "2", "3", "retry", "recovered"],
        ["2", "c1", "2", "3", "retry", "recovered"],
    ]
    s = audit(rec).summary().set_index("metric")["value"]
    assert s["calls retried"] == "3" and s["most retries on one call"] == "2"


def stopped_runs() -> Recorder:
    """Three runs, each stopped by a different raiser of LoopDetected (1 stop each), the loop
    one after 3 failures and 2 refusals."""
    rec = Recorder()
    calls = [ToolCall("read_file", {"path": p}) for p in ("x", "y", "z")]
    with pytest.raises(LoopError, match="max_turns"):
        Engine(ScriptedModel(calls), tools=[read_file], max_turns=2, observers=[rec]).run("t")
    with pytest.raises(LoopError, match="convergence"):
        Engine(
            ScriptedModel(["same answer"] * 3),
            done=lambda text: "not yet",
            convergence=ConvergenceDetector(window=2),
            observers=[rec],
        ).run("t")
    with pytest.raises(LoopError, match="loop detected"):
        Engine(ScriptedModel([calls[0]] * 8), tools=[read_file], observers=[rec]).run("t")
    return rec


def test_loops_from_turns_alone_name_the_detector_that_stopped_the_run():
    rec = stopped_runs()
    expected = [
        ["convergence", "stop", "1", "1"],
        ["loop", "refuse", "2", "1"],
        ["loop", "stop", "1", "1"],
        ["max_turns", "stop", "1", "1"],
    ]
    assert table(audit(rec).loops(), "detector", "action", "fired", "runs") == expected
    assert table(audit(rec.turns).loops(), "detector", "action", "fired", "runs") == expected
    s = audit(rec.turns).summary().set_index("metric")["value"]
    assert s["loops caught softly"] == "2" and s["runs stopped by a detector"] == "3"


@tool
def search(q: str) -> str:
    """Always down."""
    raise ToolError("search is down")


def test_a_breaker_refusal_in_a_multi_call_turn_is_the_refused_tool_s():
    """Turn 1: read_file fails, search fails and its breaker (threshold 1) opens. Turn 2:
    read_file works, search is refused. Turn 3 answers. A second run falls back from m1 (its
    breaker, threshold 1, opens) to m2."""
    clock = FakeClock()
    rec = Recorder()
    Engine(
        ScriptedModel(
            [
                [ToolCall("read_file", {"path": "src/mian.rs"}), ToolCall("search", {"q": "a"})],
                [ToolCall("read_file", {"path": "src/main.rs"}), ToolCall("search", {"q": "b"})],
                "done",
            ]
        ),
        tools=[read_file, search],
        breakers={"search": CircuitBreaker(failure_threshold=1, clock=clock)},
        observers=[rec],
        clock=clock,
    ).run("t")
    clock.advance(60)
    m1 = ScriptedModel([ModelUnavailable("down")] * 3, name="m1")
    chain = FallbackChain([m1, ScriptedModel(["hi"], name="m2")], breaker=CircuitBreaker(failure_threshold=1))
    Engine(chain, observers=[rec], clock=clock).run("t")
    expected = [["search", "tool", "1", "0", "0", "1", "open"], ["m1", "model", "1", "0", "0", "0", "open"]]
    columns = ("target", "scope", "trips", "half_opens", "closes", "refusals", "last_state")
    assert table(audit(rec).breakers(), *columns) == expected
    assert table(audit(rec.turns).breakers(), *columns) == expected
    p = audit(rec).by_producer().set_index("producer")
    assert (p.loc["tool_error", "turns"], p.loc["tool_error", "errors"]) == (1, 2)
    assert (p.loc["breaker_open", "turns"], p.loc["breaker_open", "errors"]) == (1, 1)


def test_a_breaker_s_last_state_is_the_latest_run_s_whatever_the_row_order():
    """Two runs of one engine (search's breaker: threshold 1, cooldown 30 s). Run 'z' started
    first: search fails and opens the breaker, is refused, the run ends, leaving it open. Run 'a'
    started 1000 s later: a call with a wrong argument half-opens it (and leaves it so), the next
    search closes it. Rows are given reversed and shuffled, with a non-default index."""
    clock = FakeClock(wall=1_000.0)
    tries: list[str] = []

    @tool
    def search(q: str) -> str:
        """Down on its first call."""
        tries.append(q)
        if len(tries) == 1:
            raise ToolError("search is down")
        return "hit"

    steps = [
        *(ToolCall("search", {"q": "a"}), ToolCall("search", {"q": "b"}), "gave up"),  # run z
        *(ToolCall("search", {"query": "c"}), ToolCall("search", {"q": "c"}), "found it"),  # run a
    ]
    engine = Engine(
        timed_model(clock, steps),
        [search],
        breakers={"search": CircuitBreaker(failure_threshold=1, cooldown=30.0)},
        clock=clock,
    )
    z = run_engine(engine, run_id="z")
    clock.advance(1_000.0)
    a = run_engine(engine, run_id="a")
    rec = recorded(a, z)
    turns = rec.turns.iloc[::-1].set_axis(range(100, 100 + len(rec.turns)))
    events = rec.events.sample(frac=1, random_state=3)
    columns = ("target", "trips", "half_opens", "closes", "refusals", "last_state")
    for x in (audit(rec), audit(turns, events), audit(turns)):
        assert table(x.breakers(), *columns) == [["search", "1", "1", "1", "1", "closed"]]


def test_a_filtered_turns_frame_is_audited_with_its_own_events_only():
    rec = recorded(typo_run("r1"), hard_run("r2"), loop_run(), breaker_run())
    only_r1 = audit(rec.turns[rec.turns["run_id"] == "r1"], rec.events)
    assert set(only_r1.events["run_id"]) == {"r1"}
    assert len(only_r1.retries()) == 0 and len(only_r1.breakers()) == 0 and len(only_r1.loops()) == 0
    assert table(only_r1.by_producer(), "producer", "turns", "errors") == [["tool_error", "1", "1"]]
    s = only_r1.summary().set_index("metric")["value"]
    assert (s["runs"], s["breaker trips"], s["calls retried"], s["loops caught softly"]) == (
        "1",
        "0",
        "0",
        "0",
    )
    # r2's first two turns: the call recovery gave up on (its breaker trip) and the refusal, not
    # the exhausted call (nor the breaker's half-opening before it)
    r2 = audit(rec.turns[(rec.turns["run_id"] == "r2") & (rec.turns["turn"] <= 2)], rec.events)
    assert table(r2.retries(), "turn", "outcome") == [["1", "gave_up"]]
    assert table(r2.breakers(), "target", "trips", "refusals") == [["read_file", "1", "1"]]
    assert (
        audit(rec.turns.iloc[:0], rec.events).summary().set_index("metric")["value"]["calls retried"] == "0"
    )


def test_soft_streaks_end_at_gaps_left_by_filtering_and_at_the_end_of_the_frame():
    """Turns: 1 soft, 2 ok, 3 soft, 4 soft, 5 ok, 6 soft (the run still going: its events up to
    the end of turn 6, as a recording being written holds them)."""
    steps = [ToolCall("read_file", {"path": p}) for p in ("a", "src/main.rs", "b", "c", "src/main.rs", "d")]
    events: list = []
    engine = Engine(
        ScriptedModel([*steps, "done"]), [read_file], observers=[events.append], clock=FakeClock()
    )
    running = engine.iter("t", run_id="g")
    for _ in range(6):
        running.step()
    b = Run(events=list(events))
    running.close()  # the run ends as Cancelled; what was recorded before stays as it was
    rec = recorded(b)
    columns = ("first_turn", "soft_turns", "outcome", "turns_to_recover")
    assert table(audit(rec).recovery_episodes(), *columns) == [
        ["1", "1", "recovered", "1"],
        ["3", "2", "recovered", "2"],
        ["6", "1", "unfinished", None],
    ]
    soft_only = audit(rec.turns[rec.turns["channel"] == "soft"])
    assert table(soft_only.recovery_episodes(), *columns) == [
        ["1", "1", "unfinished", None],
        ["3", "2", "unfinished", None],
        ["6", "1", "unfinished", None],
    ]
    r = audit(rec).recovery()
    assert table(r, "episodes", "recovered", "rate", "median_turns", "ended_hard", "unfinished") == [
        ["3", "2", "0.666667", "1.5", "0", "1"]
    ]


class TimedModel:
    """Replies (or fails) from a script, each request taking ``ms`` on the fake clock."""

    def __init__(self, name: str, steps: list, clock: FakeClock) -> None:
        self.name, self.steps, self.clock = name, list(steps), clock

    async def complete(self, messages, tools):
        ms, step = self.steps.pop(0)
        await self.clock.sleep(ms / 1000)
        if isinstance(step, Exception):
            raise step
        if isinstance(step, ToolCall):
            return ModelReply(
                tool_calls=(step,), model=self.name, usage=Usage(input_tokens=10, output_tokens=5)
            )
        return ModelReply(text=step, model=self.name, usage=Usage(input_tokens=10, output_tokens=5))


def test_models_after_a_fallback_turn_latency_request_latency_and_tokens():
    """m1 fails once, in 100 ms, and backs off for the rest of the run; m2 answers turn 1 in 20 ms,
    turn 2 in 40 ms, turn 3 in 60 ms. Turn latencies of m2: 120, 40, 60 ms (median 60, mean
    73.3333); its own requests: 20, 40, 60 (median 40). m1 reports no tokens; m2 10 in and 5 out
    a reply. The frames alone do not say the clock was a FakeClock: their times count."""
    clock = FakeClock()
    m1 = TimedModel("m1", [(100, ModelUnavailable("down"))] * 3, clock)
    call = ToolCall("read_file", {"path": "src/main.rs"})
    m2 = TimedModel("m2", [(20, call), (40, call), (60, "done")], clock)
    rec = Recorder()
    Engine(FallbackChain([m1, m2]), tools=[read_file], observers=[rec], clock=clock).run("t")
    columns = ("model", "turns", "runs", "ok", "latency_ms_median", "latency_ms_mean")
    more = ("input_tokens", "output_tokens", "failures", "request_ms_median")
    assert table(audit((rec.turns, rec.events)).models(), *columns, *more) == [
        ["m2", "3", "1", "3", "60", "73.3333", "30", "15", "0", "40"],
        ["m1", "0", "0", "0", None, None, None, None, "1", None],
    ]
    assert table(audit(rec.turns).models(), *columns, *more) == [
        ["m2", "3", "1", "3", "60", "73.3333", "30", "15", None, None],
    ]


def test_models_leaves_simulated_time_out_of_its_latencies(tmp_path):
    """The same FakeClock run audited from the Recorder, from its file, and with the run named as
    simulated by hand: every time is missing (the 120 ms and the 20 ms requests never passed),
    the counts and tokens are the same; a wall-clock run beside it keeps its times."""
    clock = FakeClock()
    call = ToolCall("read_file", {"path": "src/main.rs"})
    rec = Recorder()
    m2 = TimedModel("m2", [(20, call), (40, call), (60, "done")], clock)
    Engine(m2, tools=[read_file], observers=[rec], clock=clock).run("t", run_id="fake")
    Engine(ScriptedModel([call, "done"], name="m2"), tools=[read_file], observers=[rec]).run(
        "t", run_id="wall"
    )
    path = rec.save(tmp_path / "two.jsonl")
    frames = (rec.turns, rec.events)
    wall_only = audit((rec.turns[rec.turns["run_id"] == "wall"], rec.events)).models()
    for a in (audit(rec), audit(load(path)), Audit(*frames, simulated=["fake"])):
        assert a.simulated == {("fake",)}
        m = a.models()
        assert table(m, "model", "turns", "runs", "input_tokens", "output_tokens") == [
            ["m2", "5", "2", "30", "15"]
        ]
        for column in ("latency_ms_median", "latency_ms_mean", "request_ms_median"):
            assert m.loc[0, column] == wall_only.loc[0, column], column
    assert wall_only.loc[0, "latency_ms_median"] < 60  # the fake run's 60 ms median is not in it
    with_fake = audit(frames).models()
    assert with_fake.loc[0, "latency_ms_mean"] >= (20 + 40 + 60) / 5 and audit(frames).simulated == set()


def test_usage_counts_tokens_and_wall_time_whether_or_not_prices_are_installed():
    """Test doubles' names are no priced model: the cost is missing (with or without genai-prices,
    which these lanes may lack), the tokens and the wall time are there; the FakeClock's are not."""
    clock = FakeClock()
    call = ToolCall("read_file", {"path": "src/main.rs"})
    rec = Recorder()
    Engine(
        TimedModel("m2", [(20, call), (60, "done")], clock), tools=[read_file], observers=[rec], clock=clock
    ).run("t", run_id="fake")
    Engine(ScriptedModel([call, "done"], name="m2"), tools=[read_file], observers=[rec]).run(
        "t", run_id="wall"
    )
    runs = audit(rec).usage()
    assert table(runs, "run_id", "models", "turns", "input_tokens", "output_tokens", "clock") == [
        ["fake", "m2", "2", "20", "10", "simulated"],
        ["wall", "m2", "2", None, None, "wall"],
    ]
    wall = rec.turns.loc[rec.turns["run_id"] == "wall", "latency_ms"].sum()
    assert pd.isna(runs.loc[0, "latency_ms"]) and runs.loc[1, "latency_ms"] == pytest.approx(wall)
    assert runs["cost_usd"].isna().all() and runs["unpriced"].notna().all()
    assert len(audit(rec).usage("turn")) == 4 and audit(rec).usage("model")["turns"].tolist() == [4]


def test_two_files_reusing_a_run_id_are_two_runs(tmp_path):
    """The same hard run, recorded twice under the run id 'r', in two files."""
    for name in ("a.jsonl", "b.jsonl"):
        recorded(hard_run("r")).save(tmp_path / name)
    with pytest.warns(RecordingWarning, match=r"b\.jsonl: run r also in .*a\.jsonl"):
        turns, events = load_many(tmp_path), load_many(tmp_path, table="events")
    a = audit(turns, events)
    assert table(a.by_producer(), "producer", "turns", "runs", "errors") == [
        ["breaker_open", "2", "2", "2"],
        ["recovery_gave_up", "2", "2", "2"],
        ["tool_recovery_exhausted", "2", "2", "2"],
    ]
    retries = table(a.retries(), "run_id", "turn", "retries", "outcome")
    assert retries == [["r", "1", "1", "gave_up"], ["r", "3", "5", "exhausted"]] * 2
    assert table(a.breakers(), "target", "trips", "refusals") == [["read_file", "2", "2"]]
    s = a.summary().set_index("metric")["value"]
    assert (s["runs"], s["runs ended hard"], s["calls past the ceiling"]) == ("2", "2", "2")


def test_stacking_two_recordings_that_reuse_a_run_id_without_a_source_is_an_error(tmp_path):
    for name in ("a.jsonl", "b.jsonl"):
        recorded(typo_run("r")).save(tmp_path / name)
    both = pd.concat([load(tmp_path / "a.jsonl").turns, load(tmp_path / "b.jsonl").turns])
    with pytest.raises(ValueError, match=r"turn 1 of run_id 'r' more than once.*'source' column"):
        audit(both)


def test_a_frame_that_is_not_a_turns_frame_is_a_clear_error():
    rec = recorded(typo_run())
    with pytest.raises(ValueError, match=r"the turns frame is missing columns tools, .*looks like an events"):
        audit(rec.events)
    with pytest.raises(ValueError, match=r"the turns frame is missing columns .*looks like an events"):
        audit((rec.events, rec.turns))
    with pytest.raises(ValueError, match=r"the turns frame is missing columns run_id, turn, seq, channel"):
        audit(pd.DataFrame({"a": [1]}))
    with pytest.raises(ValueError, match=r"the events frame is missing columns kind, .*looks like a turns"):
        audit(rec.turns, rec.turns)
    with pytest.raises(TypeError, match=r"audit\(\): events must be a DataFrame, got list"):
        audit(rec.turns, [])
    bad = rec.turns.assign(channel=rec.turns["channel"].astype(str).replace("ok", "fine"))
    with pytest.raises(ValueError, match=r"audit\(\): the turns frame: column 'channel'"):
        audit(bad)


def test_turns_and_events_from_different_loaders_are_a_clear_error(tmp_path):
    rec = recorded(typo_run())
    rec.save(tmp_path / "a.jsonl")
    with pytest.raises(
        ValueError, match=r"the turns frame has a 'source' column .* the events frame has none"
    ):
        audit(load_many(tmp_path), rec.events)
    with pytest.raises(
        ValueError, match=r"the events frame has a 'source' column .* the turns frame has none"
    ):
        audit(rec.turns, load_many(tmp_path, table="events"))


def test_categorical_columns_unused_categories_and_any_index_change_nothing():
    rec = recorded(typo_run("r1"), hard_run("r2"), loop_run(), breaker_run())
    t = rec.turns.copy()
    for column in ("run_id", "model", "tools"):
        t[column] = t[column].astype("category").cat.add_categories(["unused"])
    t = t.iloc[::-1].set_axis(pd.Index([f"row{i}" for i in range(len(t))]))
    plain = audit(rec)
    shaped = Audit(t, rec.events.iloc[::-1], simulated=plain.simulated)
    for name in (
        "by_producer",
        "recovery_episodes",
        "recovery",
        "retries",
        "breakers",
        "loops",
        "models",
        "summary",
    ):
        pd.testing.assert_frame_equal(getattr(shaped, name)(), getattr(plain, name)(), obj=name)


def test_a_frame_of_only_ok_turns():
    rec = recorded(typo_run("r1"), breaker_run())
    a = audit(rec.turns[rec.turns["channel"] == "ok"], rec.events)
    for name in ("by_producer", "recovery_episodes", "recovery", "retries", "loops"):
        assert len(getattr(a, name)()) == 0, name
    s = a.summary().set_index("metric")
    assert s.loc["ok turns", "value"] == "4" and s.loc["ok turns", "detail"] == "100%"
    assert s.loc["recovered on its own", "detail"] == "-"
    assert table(a.models(), "model", "turns", "ok", "soft") == [["scripted", "4", "4", "0"]]


def streaks_by_hand(channels: dict[str, list[tuple[int, str]]]) -> list[tuple[str, int, int, str]]:
    """(run, first turn, length, outcome) of every soft streak, walking each run's turns."""
    out = []
    for run, turns in sorted(channels.items()):
        turns = sorted(turns)
        i = 0
        while i < len(turns):
            if turns[i][1] != "soft":
                i += 1
                continue
            j = i + 1
            while j < len(turns) and turns[j][1] == "soft" and turns[j][0] == turns[j - 1][0] + 1:
                j += 1
            nxt = turns[j][1] if j < len(turns) and turns[j][0] == turns[j - 1][0] + 1 else None
            out.append(
                (run, turns[i][0], j - i, {"ok": "recovered", "hard": "ended_hard"}.get(nxt, "unfinished"))
            )
            i = j
    return out


@pytest.mark.parametrize("seed", range(5))
def test_soft_streaks_of_shuffled_runs_with_holes_match_a_walk_by_hand(seed):
    import random

    rng = random.Random(seed)
    runs, kept = [], {}
    for r in range(6):
        outcomes = [("tool_error" if rng.random() < 0.5 else "ok", 0) for _ in range(rng.randint(0, 9))]
        runs.append(script_run(outcomes, "cancelled" if rng.random() < 0.5 else None, run_id=f"run{r}"))
    turns = recorded(*runs).turns
    turns = turns[[rng.random() < 0.8 for _ in range(len(turns))]].sample(frac=1, random_state=seed)
    for run, n, channel in zip(turns["run_id"], turns["turn"], turns["channel"].astype(str), strict=True):
        kept.setdefault(run, []).append((int(n), channel))
    ep = audit(turns).recovery_episodes()
    got = list(zip(ep["run_id"], ep["first_turn"], ep["soft_turns"], ep["outcome"].astype(str), strict=True))
    assert got == streaks_by_hand(kept)
