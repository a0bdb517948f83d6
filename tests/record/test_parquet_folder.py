"""A folder of Parquet recordings reads as one table of turns in DuckDB, polars and
``pyarrow.dataset``: each file's rows are its turns, in the columns of the turns frame exactly, of
types that unify across files; the events are kept out of the table's way."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import duckdb
import pandas as pd
import polars as pl
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from loopnb import load
from loopnb.record import Recorder
from loopnb.record._schema import TURN_COLUMNS
from tests.record.conftest import context_run, hard_run, recorded, typo_run


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """Three recordings, each with its own channels and producers: ok and soft turns; soft and a
    hard ending; turns dropped with their scratchpad."""
    runs = tmp_path / "runs"
    for name, run in (("typo", typo_run("t")), ("hard", hard_run("h")), ("ctx", context_run("c"))):
        recorded(run).save(runs / f"{name}.parquet")
    return runs


def expected(folder: Path) -> pd.DataFrame:
    return pd.concat([load(p).turns for p in sorted(folder.glob("*.parquet"))], ignore_index=True)


def test_each_row_is_a_turn_in_exactly_the_turns_frames_columns(folder):
    for path in folder.glob("*.parquet"):
        assert pq.read_schema(path).names == list(TURN_COLUMNS)
        assert pq.ParquetFile(path).metadata.num_rows == len(load(path).turns)


def test_the_naive_duckdb_query_over_a_folder_counts_turns_by_channel(folder):
    rows = duckdb.sql(f"select channel, count(*) from '{folder}/*.parquet' group by 1 order by 1").fetchall()
    counts = expected(folder)["channel"].astype(str).value_counts()
    assert rows == sorted(counts.items())
    assert None not in dict(rows)


def test_pyarrow_dataset_reads_a_folder_of_different_channel_sets_as_one_table(folder):
    producers = {
        p.name: set(load(p).turns["producer"].dropna().astype(str)) for p in folder.glob("*.parquet")
    }
    assert len({frozenset(v) for v in producers.values()}) == 3  # each file its own set of values
    table = ds.dataset(folder).to_table()
    assert table.num_rows == len(expected(folder))
    assert table.schema.names == list(TURN_COLUMNS)
    assert sorted(table.column("channel").to_pylist()) == sorted(expected(folder)["channel"].astype(str))


def test_polars_reads_a_glob_of_recordings(folder):
    df = pl.read_parquet(f"{folder}/*.parquet")
    assert df.columns == list(TURN_COLUMNS)
    assert df.height == len(expected(folder))
    assert df["run_id"].unique().sort().to_list() == ["c", "h", "t"]


def test_a_large_recording_keeps_a_small_footer_and_loads_whole(tmp_path, monkeypatch):
    """100,000 turns, the events in several compressed parts (1 MiB of lines each here)."""
    from loopnb.record import _trailer as trailer

    monkeypatch.setattr(trailer, "PART_BYTES", 1 << 20)
    template = typo_run("r").events
    recorder = Recorder()
    n_runs = 33_334  # 3 turns each
    for k in range(n_runs):
        for event in template:
            recorder(dataclasses.replace(event, run_id=f"r{k}"))
    path = recorder.save(tmp_path / "big.parquet")
    footer = pq.ParquetFile(path).metadata
    assert footer.num_rows == 3 * n_runs
    parts = json.loads(footer.metadata[b"loopnb"])["event_parts"]
    assert len(parts) > 3
    events_size = sum(z for z, _, _ in parts)
    assert footer.serialized_size < min(events_size / 2, 1 << 20)  # mostly the run ids, not the events
    loaded = load(path)
    assert loaded.meta["n_events"] == len(template) * n_runs
    assert len(loaded.turns) == 3 * n_runs
    events = loaded.event_objects
    assert len(events) == len(template) * n_runs
    assert events[-1] == dataclasses.replace(template[-1], run_id=f"r{n_runs - 1}")
    assert duckdb.sql(f"select count(*) from '{path}'").fetchall() == [(3 * n_runs,)]


def test_an_empty_recording_is_an_empty_table_with_the_turns_columns(tmp_path):
    path = Recorder().save(tmp_path / "empty.parquet")
    assert pq.read_schema(path).names == list(TURN_COLUMNS)
    loaded = load(path)
    assert (len(loaded.turns), len(loaded.events), loaded.event_objects) == (0, 0, [])
    assert duckdb.sql(f"select count(*) from '{path}'").fetchall() == [(0,)]
