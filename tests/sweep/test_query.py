"""``loopnb.query`` over recordings of every kind gives the counts ``audit`` gives."""

from __future__ import annotations

import pandas as pd
import pytest

import loopnb
from loopnb import scenarios
from loopnb.cli import main
from loopnb.record import Recorder, RecordingError

NAMES = ["mistyped_path", "vague_error", "stubborn_loop", "flaky_tool_breaker", "cancelled_run"]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """The same runs as a JSON Lines recording and as its Parquet copy, in two folders."""
    root = tmp_path_factory.mktemp("recordings")
    (root / "jsonl").mkdir()
    (root / "parquet").mkdir()
    recorder = Recorder(root / "jsonl" / "runs.jsonl")
    for name in NAMES:
        scenarios.get(name).run(observers=[recorder])
    recorder.close()
    loopnb.load(root / "jsonl" / "runs.jsonl").save(root / "parquet" / "runs.parquet")
    return root


BY_PRODUCER = """
    select producer, any_value(channel) channel, count(*) turns, count(distinct run_id) runs
    from turns where producer is not null group by producer order by producer
"""
ERRORS = """
    select producer, count(*) errors from events
    where kind in ('soft_error_returned', 'hard_error_raised') group by producer order by producer
"""


@pytest.mark.parametrize("kind", ["jsonl", "parquet"])
def test_query_counts_what_audit_counts(recorded, kind):
    path = recorded / kind / f"runs.{kind}"
    expected = (
        loopnb.audit(loopnb.load(path)).by_producer().sort_values("producer", key=lambda s: s.astype(str))
    )
    got = loopnb.query(BY_PRODUCER, path)
    assert got.producer.tolist() == expected.producer.astype(str).tolist()
    assert got.channel.tolist() == expected.channel.astype(str).tolist()
    assert got.turns.tolist() == expected.turns.tolist()
    assert got.runs.tolist() == expected.runs.tolist()
    errors = loopnb.query(ERRORS, path)
    assert errors.errors.tolist() == expected.errors.tolist()
    assert len(loopnb.query("select * from turns", path)) == len(loopnb.load(path).turns)


def test_jsonl_and_parquet_give_the_same_rows_and_types(recorded):
    sql = "select * exclude (started_at) from turns order by run_id, turn"
    a = loopnb.query(sql, recorded / "jsonl")
    b = loopnb.query(sql, recorded / "parquet")
    assert a.equals(b) and len(a) > 20
    both = loopnb.query("select count(*) n from turns", recorded / "jsonl", str(recorded / "*" / "runs.*"))
    assert both.n[0] == 2 * len(a)  # the folder once, the glob's two files once more each: deduplicated
    ts = loopnb.query("select started_at from turns limit 1", recorded / "parquet").started_at
    assert isinstance(ts.dtype, pd.DatetimeTZDtype) and str(ts.dtype.tz) == "UTC"


def test_clear_errors(tmp_path, recorded):
    # DuckDB's exception class says what went wrong; its words (and its quotes) are its own
    with pytest.raises(ValueError, match=r"(?s)query: ParserException: .*\n\(the views are turns and events"):
        loopnb.query("selec channel from turns", recorded / "jsonl")
    with pytest.raises(ValueError, match=r"query: BinderException: .*nope"):
        loopnb.query("select nope from turns", recorded / "jsonl")
    (tmp_path / "empty").mkdir()
    with pytest.raises(RecordingError, match=r"no recordings found in .*empty"):
        loopnb.query("select 1", tmp_path / "empty")
    with pytest.raises(RecordingError, match=r"missing.parquet: no such file or folder"):
        loopnb.query("select 1", tmp_path / "missing.parquet")
    (tmp_path / "stray.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(RecordingError, match=r"stray.parquet: not a readable Parquet file"):
        loopnb.query("select 1", tmp_path / "stray.parquet")
    with pytest.raises(ValueError, match="give at least one recording"):
        loopnb.query("select 1")


def test_the_command_line_prints_the_result_and_exits_by_what_happened(recorded, capsys, tmp_path):
    assert (
        main(
            ["query", "select channel, count(*) n from turns group by 1 order by 1", str(recorded / "jsonl")]
        )
        == 0
    )
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["channel", "n"] and [line.split()[0] for line in out[1:]] == [
        "hard",
        "ok",
        "soft",
    ]
    assert main(["query", "selec", str(recorded / "jsonl")]) == 2
    assert "loopnb query: error: ParserException" in capsys.readouterr().err
    assert main(["query", "select 1", str(tmp_path / "none")]) == 2  # a path naming nothing: as audit
    assert "loopnb query: error:" in capsys.readouterr().err
