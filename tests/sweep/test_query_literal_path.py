"""``loopnb.query`` reads a path that exists as that path only (issue 24, item 16).

DuckDB globs every path it reads, so a Parquet recording literally named ``*.parquet`` (or
``runs[1].parquet``, or one inside a folder named so) read its siblings too. A path that does not
exist and holds ``*``, ``?`` or ``[`` is still a glob pattern.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import loopnb
from loopnb import scenarios
from loopnb.record import Recorder


def record(path: Path, *names: str) -> int:
    """Record the scenarios ``names`` into ``path`` (by its suffix); returns its number of turns."""
    jsonl = path.with_name(path.name + ".tmp.jsonl")
    recorder = Recorder(jsonl)
    for name in names:
        scenarios.get(name).run(observers=[recorder])
    recorder.close()
    recording = loopnb.load(jsonl)
    jsonl.unlink()
    recording.save(path)
    return len(recording.turns)


COUNT = "select count(*) n, count(distinct run_id) runs from turns"


def counted(*paths: str | Path) -> tuple[int, int]:
    row = loopnb.query(COUNT, *paths).iloc[0]
    return int(row["n"]), int(row["runs"])


@pytest.mark.parametrize("name", ["*.parquet", "runs[1].parquet", "run?.parquet", "[x].parquet"])
def test_a_parquet_file_named_like_a_pattern_is_read_alone(tmp_path, name):
    literal = tmp_path / name
    turns = record(literal, "mistyped_path")
    record(tmp_path / "x.parquet", "stubborn_loop", "vague_error")  # what a glob of the name would find
    record(tmp_path / "runs1.parquet", "stubborn_loop")
    record(tmp_path / "runs.parquet", "vague_error")
    assert counted(literal) == (turns, 1)
    assert counted(str(literal)) == (turns, 1)


def test_a_sweep_like_folder_named_like_a_pattern_reads_its_own_files(tmp_path):
    """A folder named ``runs[1]`` holding Parquet recordings: the files found in it are read, not
    those of ``runs1``."""
    folder = tmp_path / "runs[1]"
    folder.mkdir()
    turns = record(folder / "a.parquet", "mistyped_path")
    (tmp_path / "runs1").mkdir()
    record(tmp_path / "runs1" / "a.parquet", "stubborn_loop", "vague_error")
    assert counted(folder) == (turns, 1)
    assert counted(folder / "a.parquet") == (turns, 1)


def test_a_pattern_that_is_no_file_still_globs_and_reads_each_match_alone(tmp_path):
    """``*.parquet`` when no file has that name: every Parquet file matches, and one whose own name
    holds a glob character (``[x].parquet``) is read alone, not as a pattern matching ``x.parquet``."""
    a = record(tmp_path / "a.parquet", "mistyped_path")
    b = record(tmp_path / "[x].parquet", "stubborn_loop")
    x = record(tmp_path / "x.parquet", "vague_error", "cancelled_run")
    assert counted(str(tmp_path / "*.parquet")) == (a + b + x, 4)


def test_a_literal_file_beside_a_pattern_it_matches_is_read_once_as_given(tmp_path):
    """``dir/*.parquet`` names the file literally called so when it exists, and only it."""
    literal = tmp_path / "*.parquet"
    turns = record(literal, "mistyped_path")
    record(tmp_path / "b.parquet", "stubborn_loop")
    assert counted(str(tmp_path / "*.parquet")) == (turns, 1)


def test_a_sweep_folder_named_like_a_pattern_is_read_as_a_sweep(tmp_path):
    """A sweep's layout (``config=NAME/part-*.parquet``) under a folder named ``sweep[1]``: its own
    parts only, with their ``config`` column; the parts of ``sweep1`` beside it are not read."""
    turns = 0
    for folder, names in (("sweep[1]", ["mistyped_path"]), ("sweep1", ["stubborn_loop", "vague_error"])):
        for config in ("a", "b"):
            part = tmp_path / folder / f"config={config}" / "part-0.parquet"
            part.parent.mkdir(parents=True)
            n = record(part, *names)
            turns += n if folder == "sweep[1]" else 0
    got = loopnb.query(
        "select config, count(*) n from turns group by config order by config", tmp_path / "sweep[1]"
    )
    assert got["config"].tolist() == ["a", "b"]
    assert int(got["n"].sum()) == turns
