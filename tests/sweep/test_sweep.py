"""Sweeps on a real Dask cluster of worker processes: what lands on disk, and what reads it back."""

from __future__ import annotations

import json
import multiprocessing

import pandas as pd
import pyarrow.dataset as ds
import pytest

import loopnb
from loopnb import scenarios
from loopnb.record import Recorder

SCENARIOS = ["mistyped_path", "stubborn_loop"]


def _runs(turns):
    """Per (config, seed): the channels and producers of its turns, in order."""
    out = {}
    for (config, seed), rows in turns.groupby(["config", "seed"], observed=True, sort=False):
        out[config, int(seed)] = [
            (c, None if pd.isna(p) else p) for c, p in zip(rows.channel, rows.producer, strict=True)
        ]
    return out


def _outcome(name, seed):
    outcome = scenarios.get(name).run(seed=seed)
    return [(t.channel, t.producer) for t in outcome.turns]


def test_a_sweep_on_a_local_cluster_of_two_processes_runs_every_config_and_seed(tmp_path):
    out = tmp_path / "two"
    before = set(multiprocessing.active_children())
    result = loopnb.sweep(SCENARIOS, seeds=6, out=out, workers=2, batch=2, progress=False)
    assert set(multiprocessing.active_children()) <= before  # the cluster it started is closed
    turns = result.turns
    assert list(turns.columns[:3]) == ["config", "seed", "run_id"]
    assert list(turns.columns[2:]) == list(loopnb.record.TURNS.names)
    assert list(turns.config.cat.categories) == SCENARIOS
    runs = turns.groupby(["config", "seed"], observed=True).run_id.unique()
    assert len(runs) == 12 and all(len(ids) == 1 for ids in runs)
    assert turns.run_id.nunique() == 12
    # each run is the very run the scenario makes on its own with that seed
    assert _runs(turns) == {(n, s): _outcome(n, s) for n in SCENARIOS for s in range(6)}
    figures = result.figures
    assert sorted(zip(figures.config, figures.batch, strict=True)) == [
        (n, i) for n in SCENARIOS for i in range(3)
    ]
    assert figures.runs.sum() == 12 and figures.turns.sum() == len(turns)
    assert figures.pid.nunique() == 2  # both worker processes ran batches
    assert result.complete and result.missing() == []
    plan = json.loads((out / "_sweep.json").read_text())
    assert plan["seeds"] == {"range": [0, 6]} and plan["batch"] == 2
    assert [c["scenario"] for c in plan["configs"]] == SCENARIOS


def test_the_results_are_a_hive_dataset_each_file_a_recording(tmp_path, client):
    out = tmp_path / "hive"
    result = loopnb.sweep(SCENARIOS, seeds=5, out=out, cluster=client, batch=2, progress=False)
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.parquet"))
    assert files == [f"config={n}/part-{i:06d}.parquet" for n in SCENARIOS for i in range(3)]
    table = ds.dataset(out, format="parquet", partitioning="hive").to_table()
    assert table.num_rows == len(result.turns)
    counts = table.group_by("config").aggregate([("run_id", "count_distinct")]).to_pylist()
    assert {r["config"]: r["run_id_count_distinct"] for r in counts} == dict.fromkeys(SCENARIOS, 5)
    part = loopnb.load(out / "config=stubborn_loop" / "part-000002.parquet")
    assert part.run_ids == ["stubborn_loop-4"]
    assert part.meta["sweep"]["seeds"] == [4] and part.meta["sweep"]["config"] == "stubborn_loop"
    assert len(part.turns) == 6 and part.turns.channel.iloc[-1] == "hard"
    by_sql = loopnb.query(
        "select config, count(distinct run_id) runs, count(*) turns from turns group by 1 order by 1", out
    )
    assert by_sql.to_dict("records") == [
        {"config": n, "runs": 5, "turns": int((result.turns.config == n).sum())} for n in SCENARIOS
    ]
    seeds = loopnb.query("select distinct seed from turns where config = 'mistyped_path' order by 1", out)
    assert seeds.seed.tolist() == list(range(5))
    events = loopnb.query(
        "select config, seed, count(*) n from events where kind = 'run_finished' group by all order by all",
        out,
    )
    assert events[["config", "seed"]].values.tolist() == [[n, s] for n in SCENARIOS for s in range(5)]
    assert set(events.n) == {1}
    # a sweep and a plain recording together: one turns view, the recording's rows without config
    recorder = Recorder(tmp_path / "one.jsonl")
    scenarios.get("stubborn_loop").run(observers=[recorder])
    recorder.close()
    both = loopnb.query(
        "select config is null plain, count(*) n from turns group by 1 order by 1",
        out,
        tmp_path / "one.jsonl",
    )
    assert both.n.tolist() == [len(result.turns), 6]


def test_sweep_audit_and_by_config_cover_every_run(tmp_path, client):
    result = loopnb.sweep(SCENARIOS, seeds=4, out=tmp_path / "a", cluster=client, progress=False)
    whole = result.audit().by_producer().set_index("producer")
    assert whole.loc["loop_detected", "runs"] == 4  # every stubborn_loop run ends hard
    assert whole.loc["tool_error", "errors"] == len(
        result.events.query("kind == 'soft_error_returned' and producer == 'tool_error'")
    )
    one = result.audit("mistyped_path").recovery()
    assert one.set_index("producer").loc["tool_error", "rate"] == 1.0
    table = result.by_config().set_index("config")
    assert table.loc["mistyped_path", "ended_ok"] == 4 and table.loc["stubborn_loop", "ended_hard"] == 4
    assert table.loc["mistyped_path", "recovery_rate"] == 1.0
    assert table.loc["stubborn_loop", "recovery_rate"] == 0.0
    with pytest.raises(
        ValueError, match="no config named 'nope'; its configs are mistyped_path, stubborn_loop"
    ):
        result.audit("nope")


def test_one_config_over_several_scenarios_is_named_per_scenario(tmp_path, client):
    terse = loopnb.SweepConfig("terse", loop_detector={"warn_after": 1, "stop_after": 2})
    result = loopnb.sweep(
        SCENARIOS, seeds=2, configs=[terse], out=tmp_path / "n", cluster=client, progress=False
    )
    assert result.configs == ["mistyped_path.terse", "stubborn_loop.terse"]
    stubborn = result.turns[result.turns.config == "stubborn_loop.terse"]
    # the stricter detector ends each run on its third identical call instead of the sixth
    assert stubborn.groupby("run_id").size().tolist() == [3, 3]


def test_the_dataset_is_readable_while_the_sweep_goes(tmp_path, client):
    out = tmp_path / "live"
    seen = []

    def progress(done, total, figures):
        seen.append((done, total, int(loopnb.query("select count(*) n from turns", out).n[0])))

    result = loopnb.sweep(["mistyped_path"], seeds=8, out=out, cluster=client, batch=1, progress=progress)
    assert [d for d, _, _ in seen] == list(range(1, 9)) and {t for _, t, _ in seen} == {8}
    counts = [n for _, _, n in seen]
    assert counts == sorted(counts) and counts[0] >= 3 and counts[-1] == len(result.turns) == 24


def test_a_sweep_audit_keeps_fake_clock_time_out_of_latency(tmp_path, client):
    result = loopnb.sweep(
        ["flaky_tool_breaker", "mistyped_path"], seeds=2, out=tmp_path / "c", cluster=client, progress=False
    )
    for audit in (result.audit(), result.audit(events=False), result.audit("flaky_tool_breaker")):
        usage = audit.usage(by="run").set_index("run_id")["latency_ms"]
        fake = usage[usage.index.str.startswith("flaky_tool_breaker")]
        assert len(fake) == 2 and fake.isna().all()  # a FakeClock's cooldowns are not latency
    wall = result.audit().usage(by="run").set_index("run_id")["latency_ms"]
    assert wall[wall.index.str.startswith("mistyped_path")].notna().all()
