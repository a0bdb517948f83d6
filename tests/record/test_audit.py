"""Audit numbers checked against hand-counted runs."""

from __future__ import annotations

import asyncio
import io
import re

import pandas as pd
import pytest

from loopnb import (
    CircuitBreaker,
    Engine,
    FakeClock,
    ScriptedModel,
    ToolCall,
    ToolError,
    load,
    load_many,
    tool,
)
from loopnb.analysis import Audit, audit
from loopnb.cli._commands import audit_command
from loopnb.record import Recorder

from .conftest import Run, hard_run, read_file, reply, run_engine, timed_model, typo_run


def loop_run() -> Run:
    """The same failing call 6 times, answered by m3 (10 tokens in, 5 out each): three failures,
    two refusals, then the loop detector stops the run. 6 turns, every one with m3's reply."""
    call = ToolCall("read_file", {"path": "src/mian.rs"})
    model = ScriptedModel([reply(call, usage=(10, 5))] * 6, name="m3")
    return run_engine(Engine(model, [read_file], clock=FakeClock()), run_id="r3")


def breaker_run() -> Run:
    """A breaker on 'search' (threshold 1, cooldown 1 s; the model takes 1 s a request) opens,
    half-opens and closes, a state at the end of each of turns 1-3. Turn 1: search fails (soft
    tool_error), its breaker opens. Turn 2: read_file times out (soft timeout); a search call
    with a wrong argument half-opens the breaker and leaves it so (invalid arguments do not count
    on it). Turn 3: search works and closes the breaker, read_file works (ok). Turn 4: the answer.
    Recovered within 2 turns. 4 turns."""
    clock = FakeClock()
    searched: list[str] = []

    @tool
    def search(q: str) -> str:
        """Down on its first call."""
        searched.append(q)
        if len(searched) == 1:
            raise ToolError("search is down")
        return "hit"

    @tool(name="read_file")
    async def slow_read_file(path: str) -> str:
        """Hangs on slow.rs."""
        if path == "slow.rs":
            await asyncio.sleep(60)
        return "fn main() {}"

    steps = [
        ToolCall("search", {"q": "main"}),
        [ToolCall("read_file", {"path": "slow.rs"}), ToolCall("search", {"query": "main"})],
        [ToolCall("search", {"q": "main"}), ToolCall("read_file", {"path": "src/main.rs"})],
        "done",
    ]
    engine = Engine(
        timed_model(clock, steps, seconds=1.0),
        [slow_read_file, search],
        breakers={"search": CircuitBreaker(failure_threshold=1, cooldown=1.0)},
        timeout=0.02,
        clock=clock,
    )
    return run_engine(engine, run_id="r4")


@pytest.fixture
def rec() -> Recorder:
    r = Recorder()
    for b in (typo_run("r1"), hard_run("r2"), loop_run(), breaker_run()):
        for e in b.events:
            r(e)
    return r


def as_dict(df: pd.DataFrame, key: str) -> dict:
    return {
        str(k): {c: (None if pd.isna(v) else v) for c, v in row.items()}
        for k, row in df.set_index(key).to_dict("index").items()
    }


def test_by_producer(rec):
    t = as_dict(audit(rec).by_producer(), "producer")
    assert {p: r["turns"] for p, r in t.items()} == {
        "tool_error": 5,
        "timeout": 1,
        "loop_refusal": 2,
        "recovery_gave_up": 1,
        "breaker_open": 1,
        "loop_detected": 1,
        "tool_recovery_exhausted": 1,
    }
    assert t["tool_error"]["runs"] == 3 and t["tool_error"]["channel"] == "soft"
    assert t["loop_detected"]["channel"] == "hard"
    assert t["tool_error"]["errors"] == 5 and t["tool_recovery_exhausted"]["errors"] == 1
    assert t["tool_error"]["share"] == pytest.approx(5 / 16)
    # turns only: same turn counts, no per-error counts
    turns_only = audit(rec.turns).by_producer()
    assert turns_only["turns"].tolist() == audit(rec).by_producer()["turns"].tolist()
    assert turns_only["errors"].isna().all()


def test_recovery(rec):
    a = audit(rec)
    ep = a.recovery_episodes()
    assert ep[["run_id", "first_turn", "producer", "soft_turns", "outcome"]].astype(str).values.tolist() == [
        ["r1", "1", "tool_error", "1", "recovered"],
        ["r2", "1", "recovery_gave_up", "2", "ended_hard"],
        ["r3", "1", "tool_error", "5", "ended_hard"],
        ["r4", "1", "tool_error", "2", "recovered"],
    ]
    t = as_dict(a.recovery(), "producer")
    assert t["tool_error"] == {
        "episodes": 3,
        "recovered": 2,
        "rate": pytest.approx(2 / 3),
        "median_turns": 1.5,
        "max_turns": 2,
        "ended_hard": 1,
        "unfinished": 0,
    }
    assert t["recovery_gave_up"]["recovered"] == 0 and t["recovery_gave_up"]["ended_hard"] == 1


def test_retries_against_the_ceiling(rec):
    r = audit(rec).retries()
    assert r[["run_id", "turn", "retries", "calls", "ceiling", "last_decision", "outcome"]].astype(
        str
    ).values.tolist() == [
        ["r2", "1", "1", "2", "5", "fail", "gave_up"],
        ["r2", "3", "5", "6", "5", "retry", "exhausted"],
    ]
    turns_only = audit(rec.turns).retries()
    assert turns_only[["turn", "retries", "outcome"]].astype(str).values.tolist() == [
        ["1", "1", "gave_up"],
        ["3", "5", "exhausted"],
    ]


def test_breakers(rec):
    for a in (audit(rec), audit(rec.turns)):
        b = as_dict(a.breakers(), "target")
        assert {
            k: (v["trips"], v["half_opens"], v["closes"], v["refusals"], v["last_state"])
            for k, v in b.items()
        } == {
            "read_file": (1, 1, 0, 1, "half_open"),
            "search": (1, 1, 1, 0, "closed"),
        }


def test_loops(rec):
    for a in (audit(rec), audit(rec.turns)):
        t = a.loops()
        assert t.astype(str).values.tolist() == [["loop", "refuse", "2", "1"], ["loop", "stop", "1", "1"]]


def test_models(rec):
    m = as_dict(audit(rec).models(), "model")
    assert {k: (v["turns"], v["runs"], v["ok"], v["soft"], v["hard"]) for k, v in m.items()} == {
        "m3": (6, 1, 0, 5, 1),
        "other": (3, 1, 0, 2, 1),
        "scripted": (7, 2, 4, 3, 0),
    }
    assert (m["m3"]["input_tokens"], m["m3"]["output_tokens"]) == (60, 30)
    assert m["scripted"]["failures"] == 0


def test_summary(rec):
    s = dict(zip(audit(rec).summary()["metric"], audit(rec).summary()["value"], strict=True))
    assert s["runs"] == "4" and s["turns"] == "16"
    assert s["ok turns"] == "4" and s["soft turns"] == "10" and s["runs ended hard"] == "2"
    assert s["recovered on its own"] == "2" and s["median turns to recover"] == "1.5"
    assert s["most retries on one call"] == "5" and s["calls past the ceiling"] == "1"
    assert s["breaker trips"] == "2" and s["loops caught softly"] == "2"
    assert s["runs stopped by a detector"] == "1"


def test_audit_accepts_every_source(rec, tmp_path):
    rec.save(tmp_path / "all.parquet")
    loaded = load(tmp_path / "all.parquet")
    many = load_many([tmp_path / "all.parquet"])
    for source in (rec, loaded, (rec.turns, rec.events), many):
        assert len(audit(source).turns) == 16
    assert isinstance(audit(many), Audit) and audit(many).events is None
    with_events = audit(many, load_many(tmp_path, table="events"))
    assert with_events.retries()["outcome"].astype(str).tolist() == ["gave_up", "exhausted"]
    with pytest.raises(TypeError, match="audit\\(\\) takes"):
        audit(42)


def test_empty_recording_audits_cleanly():
    a = audit(Recorder())
    for name in (
        "by_producer",
        "recovery",
        "recovery_episodes",
        "retries",
        "breakers",
        "loops",
        "models",
        "summary",
    ):
        assert isinstance(getattr(a, name)(), pd.DataFrame)


def test_every_table_has_a_figure(rec):
    a = audit(rec)
    for name in Audit.FIGURES:
        fig = a.figure(name)
        assert fig.data, name
        fig.to_json()
    with pytest.raises(ValueError, match="no figure"):
        a.figure("nope")


def test_audit_command_prints_the_summary(rec, tmp_path):
    rec.save(tmp_path / "a.jsonl")
    out, err = io.StringIO(), io.StringIO()
    assert audit_command([str(tmp_path / "a.jsonl")], out=out, err=err) == 0
    text = out.getvalue()
    assert "Summary" in text and "recovered on its own" in text and "tool_recovery_exhausted" in text
    assert err.getvalue() == ""
    shares = re.search(r"producer +channel +turns +runs +share +errors\n(.*?)\n\n", text, re.S)
    assert shares is not None
    assert all(re.search(r" \d{1,3}% +\d+$", line) for line in shares.group(1).splitlines())


def test_terminal_cells_show_fractions_as_percentages_and_round_floats():
    from loopnb.cli._audit_text import cell_text as cell

    assert [cell("share", 0.173077), cell("rate", 1.0), cell("rate", 0.0)] == ["17%", "100%", "0%"]
    assert [cell("latency_ms_mean", 4285.714286), cell("x", 0.125594), cell("x", 3.0)] == [
        "4,285.71",
        "0.13",
        "3",
    ]
    assert [cell("x", None), cell("x", float("nan")), cell("x", pd.NA), cell("x", pd.NaT)] == ["-"] * 4
    assert [cell("tools", ["a", "b"]), cell("turns", 7), cell("model", "m")] == ["['a', 'b']", "7", "m"]


def test_audit_command_reports_errors_and_warnings(tmp_path):
    out, err = io.StringIO(), io.StringIO()
    assert audit_command([str(tmp_path / "missing.jsonl")], out=out, err=err) == 2
    assert "no such file" in err.getvalue()
    assert audit_command([], out=out, err=err) == 2
    r = Recorder(tmp_path / "t.jsonl")
    for e in typo_run().events:
        r(e)
    r.close()
    with (tmp_path / "t.jsonl").open("ab") as f:
        f.write(b'{"seq": 1')
    err = io.StringIO()
    assert audit_command([str(tmp_path / "t.jsonl")], out=io.StringIO(), err=err) == 0
    assert "torn last line" in err.getvalue()


def test_summary_counts_runs_that_ended_hard_not_producers():
    from loopnb import Engine, FallbackExhausted, ScriptedModel

    recorder = Recorder()
    for _ in range(3):  # three runs, one hard producer
        with pytest.raises(FallbackExhausted):
            Engine(ScriptedModel([]), observers=[recorder]).run("task")
    summary = audit(recorder).summary()
    s = dict(zip(summary["metric"], summary["value"], strict=True))
    assert s["runs"] == "3" and s["runs ended hard"] == "3"
