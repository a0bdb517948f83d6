"""A sweep writes no secret: its plan (``_sweep.json``) is redacted like its batch files, and
``resume=True`` still finishes the same sweep and still refuses another (issue 24)."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

import loopnb
from loopnb import SweepConfig

KEY = "sk-proj-Zq8rT2wX9vLm4NcB7yHd3KpF6sJg"  # an OpenAI-shaped key the default redactor knows
TASK = f"Read src/mian.rs with token {KEY} and say what it does."


def _config(text: str = "failed ({error}); upstream said token " + KEY) -> SweepConfig:
    return SweepConfig(
        "keyed",
        model={"fallible": {"mistakes": ["typo"]}},
        tools=["read_file"],
        error_text={"read_file": text},
    )


def _sweep(out, client, **kwargs):
    return loopnb.sweep(
        TASK, seeds=2, configs=[_config()], out=out, cluster=client, batch=1, progress=False, **kwargs
    )


def _assert_no_key_under(out):
    files = [p for p in out.rglob("*") if p.is_file()]
    assert files
    for path in files:
        assert KEY.encode() not in path.read_bytes(), path
        if path.suffix == ".parquet":  # compressed columns: look at what they hold, too
            parquet = pq.ParquetFile(path)
            assert KEY not in str(parquet.schema_arrow.metadata), path
            assert KEY not in json.dumps(parquet.read().to_pylist(), default=str), path


def test_no_file_of_a_sweep_holds_a_secret_of_its_task_or_configs(tmp_path, client):
    out = tmp_path / "s"
    result = _sweep(out, client)
    assert "[REDACTED]" in result.turns.error_text.dropna().iloc[0]  # the key reached the model's text
    _assert_no_key_under(out)
    plan = json.loads((out / "_sweep.json").read_text())
    assert plan["task"] == "Read src/mian.rs with token [REDACTED] and say what it does."
    assert plan["configs"][0]["error_text"] == {
        "read_file": "failed ({error}); upstream said token [REDACTED]"
    }
    assert KEY not in result.name


def test_a_redacted_plan_still_resumes_the_same_sweep_and_refuses_another(tmp_path, client):
    out = tmp_path / "r"
    _sweep(out, client)
    parts = sorted(out.glob("config=*/part-*.parquet"))
    assert len(parts) == 2
    parts[0].unlink()
    with pytest.raises(ValueError, match=r"already holds a sweep .*pass resume=True"):
        _sweep(out, client)
    again = _sweep(out, client, resume=True)
    assert again.figures.batch.tolist() == [0] and again.complete
    _assert_no_key_under(out)
    other = SweepConfig("keyed", model={"fallible": {"mistakes": ["typo"]}}, tools=["read_file"])
    with pytest.raises(ValueError, match=r"cannot resume .*: its configs differ") as refused:
        loopnb.sweep(TASK, seeds=2, configs=[other], out=out, cluster=client, resume=True, progress=False)
    assert KEY not in str(refused.value)  # the message quotes the plan as written
    with pytest.raises(ValueError, match=r"cannot resume .*: its task differ"):
        loopnb.sweep(
            TASK.replace("src/mian.rs", "README"),
            seeds=2,
            configs=[_config()],
            out=out,
            cluster=client,
            resume=True,
            progress=False,
        )
