"""``Sweep.compact`` (issue 30, item 5): a sweep's batch files merged into a few large ones keep
every row, config, seed and event; ``Sweep``, ``loopnb.query`` and a resumed sweep read them as
before; a compaction stopped half way is read once and finished by the next; a damaged batch or
a sweep at work stops it before anything is replaced; a finished sweep of many files compacts
itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest

import loopnb
from loopnb._sweep import Sweep, SweepConfig
from loopnb._sweep._batch import batch_files, batches_of, partition, run_batch, written
from loopnb._sweep._compact import COMPACT_AFTER, _groups, _merge, compact
from loopnb._sweep._lock import holding
from loopnb._sweep._plan import PLAN_FILE, plan
from loopnb.record import RecordingError

CONFIGS = [
    SweepConfig("default", scenario="stubborn_loop"),
    SweepConfig("tight", scenario="stubborn_loop", loop_detector={"warn_after": 1, "stop_after": 2}),
]
SQL = "select config, seed, channel, producer, count(*) n from turns group by all order by all"


def written_sweep(root: Path, seeds: int = 7, batch: int = 1, only: set[int] | None = None) -> Sweep:
    """A sweep's folder written batch by batch as the Dask tasks write it (no cluster); with
    ``only``, just those batches of each config."""
    chosen = plan(None, seeds=seeds, configs=CONFIGS, batch=batch)
    root.mkdir(parents=True, exist_ok=True)
    (root / PLAN_FILE).write_text(json.dumps(chosen.to_json()), encoding="utf-8")
    for b in chosen.batches(str(root)):
        if only is None or b.index in only:
            run_batch(b)
    return Sweep(root)


def everything(sweep: Sweep) -> dict[str, Any]:
    """What a sweep holds, in a fixed order: its turns, its events, a query over it."""
    keys = ["config", "seed", "turn"]
    turns = sweep.turns.sort_values(keys, kind="stable").reset_index(drop=True)
    events = sweep.events.sort_values(["config", "seed", "seq"], kind="stable").reset_index(drop=True)
    return {"turns": turns, "events": events, "sql": loopnb.query(SQL, sweep.path)}


def same(before: dict[str, Any], after: dict[str, Any]) -> None:
    for name in before:
        pd.testing.assert_frame_equal(after[name], before[name])


def names(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.glob("config=*/part-*.parquet"))


def test_compaction_keeps_every_row_config_seed_and_event(tmp_path: Path) -> None:
    sweep = written_sweep(tmp_path / "s")
    before = everything(sweep)
    assert len(sweep.files()) == 14
    sweep.compact()
    assert names(sweep.path) == [
        "config=default/part-000000-000006.parquet",
        "config=tight/part-000000-000006.parquet",
    ]
    same(before, everything(Sweep(sweep.path)))
    assert sweep.complete and sweep.missing() == [] and len(sweep.files()) == 2
    merged = loopnb.load(
        sweep.path / "config=tight" / "part-000000-000006.parquet"
    )  # a recording in its own right
    assert merged.meta["sweep"]["seeds"] == list(range(7)) and merged.meta["sweep"]["batches"] == [0, 6]
    assert merged.run_ids == [f"tight-{s}" for s in range(7)]
    assert len(merged.event_objects) == len(merged.events) == int((before["events"].config == "tight").sum())
    assert "14/14 batches written" in repr(Sweep(sweep.path))


def test_files_merge_up_to_a_number_of_turns_and_only_consecutive_batches(tmp_path: Path) -> None:
    sweep = written_sweep(tmp_path / "s", only={0, 1, 2, 4, 5, 6})  # batch 3 is not written yet
    before = everything(sweep)
    rows = pq.ParquetFile(sweep.files()[0]).metadata.num_rows
    assert compact(sweep.path, sweep.configs, rows=2 * rows) == 6
    assert [n.split("/")[1] for n in names(sweep.path) if n.startswith("config=default")] == [
        "part-000000-000001.parquet",
        "part-000002.parquet",
        "part-000004-000005.parquet",
        "part-000006.parquet",
    ]
    same(before, everything(Sweep(sweep.path)))
    assert Sweep(sweep.path).missing() == [("default", 3), ("tight", 3)]


def test_the_turns_are_written_in_full_row_groups(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import loopnb.record._parquet as parquet

    sweep = written_sweep(tmp_path / "s")
    turns = sum(
        pq.ParquetFile(p).metadata.num_rows for _, _, p in batch_files(partition(sweep.path, "default"))
    )
    monkeypatch.setattr(parquet, "ROW_GROUP", 10)
    sweep.compact()
    (path,) = sweep.path.glob("config=default/part-*.parquet")
    meta = pq.ParquetFile(path).metadata
    groups = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    assert sum(groups) == turns and all(g == 10 for g in groups[:-1]) and 0 < groups[-1] <= 10


def test_a_compaction_stopped_half_way_is_read_once_and_finished_next_time(tmp_path: Path) -> None:
    sweep = written_sweep(tmp_path / "s")
    before = everything(sweep)
    folder = partition(sweep.path, "default")
    (group,) = list(_groups(folder, 1 << 21))
    _merge(group, folder)  # merged, and stopped before the files it holds were removed
    assert len(names(sweep.path)) == 15
    same(before, everything(Sweep(sweep.path)))  # each batch read once
    assert written(sweep.path, sweep.configs) == {(c, i) for c in sweep.configs for i in range(7)}
    sweep.compact()
    assert len(names(sweep.path)) == 2
    same(before, everything(Sweep(sweep.path)))


def test_a_damaged_batch_stops_compaction_before_anything_is_replaced(tmp_path: Path) -> None:
    sweep = written_sweep(tmp_path / "s")
    damaged = partition(sweep.path, "tight") / "part-000004.parquet"
    damaged.write_bytes(damaged.read_bytes()[:-100])
    listed = names(sweep.path)
    with pytest.raises(RecordingError, match=r"part-000004\.parquet"):
        sweep.compact()
    assert [n for n in names(sweep.path) if n.startswith("config=tight")] == [
        n for n in listed if n.startswith("config=tight")
    ]


def test_compaction_waits_for_no_sweep_it_is_refused_while_one_writes(tmp_path: Path) -> None:
    sweep = written_sweep(tmp_path / "s")
    with holding(sweep.path), pytest.raises(ValueError, match="is in use by another sweep"):
        sweep.compact()
    assert len(names(sweep.path)) == 14


def test_a_resumed_sweep_after_compaction_runs_only_what_is_missing(tmp_path: Path, client: Any) -> None:
    root = tmp_path / "s"
    written_sweep(root, only={0, 1, 2, 5, 6}).compact()
    assert len(names(root)) == 4
    done = loopnb.sweep(
        None, seeds=7, configs=CONFIGS, out=root, cluster=client, batch=1, resume=True, progress=False
    )
    assert sorted(zip(done.figures.config, done.figures.batch, strict=True)) == [
        (c, i) for c in ("default", "tight") for i in (3, 4)
    ]
    whole = written_sweep(tmp_path / "whole")
    ours, theirs = everything(done), everything(whole)
    pd.testing.assert_frame_equal(ours["sql"], theirs["sql"])
    drop = ["started_at", "latency_ms"]
    pd.testing.assert_frame_equal(ours["turns"].drop(columns=drop), theirs["turns"].drop(columns=drop))
    again = loopnb.sweep(
        None, seeds=7, configs=CONFIGS, out=root, cluster=client, resume=True, progress=False
    )
    assert len(again.figures) == 0 and again.complete


def test_a_finished_sweep_of_many_files_compacts_itself(tmp_path: Path, client: Any) -> None:
    seeds = COMPACT_AFTER + 2
    out = tmp_path / "many"
    done = loopnb.sweep(["stubborn_loop"], seeds=seeds, out=out, cluster=client, batch=1, progress=False)
    assert names(out) == [f"config=stubborn_loop/part-000000-{seeds - 1:06d}.parquet"]
    assert done.turns.groupby("seed").run_id.first().tolist() == [f"stubborn_loop-{s}" for s in range(seeds)]
    assert loopnb.query("select count(distinct seed) n from turns", out).n[0] == seeds


@pytest.mark.parametrize(
    ("name", "span"),
    [
        ("part-000003.parquet", (3, 3)),
        ("part-000000-000009.parquet", (0, 9)),
        ("part-0.parquet", (0, 0)),
        ("part-000009-000002.parquet", None),
        ("part-a.parquet", None),
        ("part-1-2-3.parquet", None),
        ("part--1.parquet", None),
    ],
)
def test_a_files_name_says_which_batches_it_holds(name: str, span: tuple[int, int] | None) -> None:
    assert batches_of(Path(name)) == span


def test_a_recording_that_is_no_batch_file_is_refused_by_name(tmp_path: Path) -> None:
    sweep = written_sweep(tmp_path / "s", seeds=2)
    stranger = partition(sweep.path, "default") / "part-000002.parquet"
    loopnb.load(sweep.files()[0]).save(stranger)  # a loopnb recording, without the seed column
    with pytest.raises(
        RecordingError, match=r"part-000002\.parquet.*no seed column|no seed column.*part-000002"
    ):
        sweep.compact()
    assert len(names(sweep.path)) == 5
