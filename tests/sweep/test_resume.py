"""A sweep that stops (interrupted, or a worker killed) loses at most its in-flight batches, and
``resume=True`` finishes it without running again what is written."""

from __future__ import annotations

import multiprocessing
import os
import signal

import pytest

import loopnb
from loopnb import SweepConfig, ToolError, tool
from loopnb.scenarios import FILES


def test_resume_runs_only_the_batches_not_written(tmp_path, client):
    out = tmp_path / "r"
    first = loopnb.sweep(["mistyped_path"], seeds=6, out=out, cluster=client, batch=2, progress=False)
    parts = sorted(out.glob("config=*/part-*.parquet"))
    assert len(parts) == 3 and len(first.figures) == 3
    before = {p.name: p.stat().st_mtime_ns for p in parts}
    parts[1].unlink()
    again = loopnb.sweep(["mistyped_path"], seeds=6, out=out, cluster=client, resume=True, progress=False)
    assert again.figures[["config", "batch", "runs"]].to_dict("records") == [
        {"config": "mistyped_path", "batch": 1, "runs": 2}
    ]
    after = {p.name: p.stat().st_mtime_ns for p in sorted(out.glob("config=*/part-*.parquet"))}
    assert after.keys() == before.keys()
    assert all(after[n] == before[n] for n in before if n != parts[1].name)  # untouched
    assert again.turns.drop(columns=["started_at", "latency_ms"]).equals(
        first.turns.drop(columns=["started_at", "latency_ms"])
    )
    done = loopnb.sweep(["mistyped_path"], seeds=6, out=out, cluster=client, resume=True, progress=False)
    assert len(done.figures) == 0 and done.complete  # nothing left to run


def test_an_existing_sweep_is_not_run_again_or_resumed_with_another_plan(tmp_path, client):
    out = tmp_path / "r"
    loopnb.sweep(["mistyped_path"], seeds=2, out=out, cluster=client, progress=False)
    with pytest.raises(ValueError, match=r"already holds a sweep .*pass resume=True"):
        loopnb.sweep(["mistyped_path"], seeds=2, out=out, cluster=client, progress=False)
    with pytest.raises(ValueError, match=r"cannot resume .*: its seeds differ"):
        loopnb.sweep(["mistyped_path"], seeds=3, out=out, cluster=client, resume=True, progress=False)
    with pytest.raises(ValueError, match=r"cannot resume .*: its batch differ"):
        loopnb.sweep(
            ["mistyped_path"], seeds=2, out=out, cluster=client, resume=True, batch=7, progress=False
        )


def test_an_interrupt_cancels_the_rest_closes_the_cluster_and_resume_finishes(tmp_path):
    out = tmp_path / "i"

    def interrupt(done, total, figures):
        raise KeyboardInterrupt

    before = set(multiprocessing.active_children())
    with pytest.raises(KeyboardInterrupt):
        loopnb.sweep(["stubborn_loop"], seeds=40, out=out, workers=1, batch=1, progress=interrupt)
    assert set(multiprocessing.active_children()) <= before  # the cluster it started is closed
    written = len(list(out.glob("config=*/part-*.parquet")))
    assert 1 <= written < 40  # the queued batches were cancelled; what was written stays
    sweep = loopnb.Sweep(out)
    assert len(sweep.missing()) == 40 - written and not sweep.complete
    assert loopnb.query("select count(distinct run_id) n from turns", out).n[0] == written
    rest = loopnb.sweep(["stubborn_loop"], seeds=40, out=out, workers=1, resume=True, progress=False)
    assert len(rest.figures) == 40 - written and rest.complete
    assert rest.turns.run_id.nunique() == 40


def _fragile_tool(marker, log):
    """``read_file`` that kills its own worker process on the third call of a batch (the last run
    of a batch of three), once in the whole sweep: the first process to create ``marker`` dies."""
    calls = []  # one list per batch: the tool is unpickled afresh with each batch

    @tool
    def read_file(path: str) -> str:
        """Read a UTF-8 text file from the workspace."""
        calls.append(path)
        with open(log, "a") as f:
            f.write(f"{os.getpid()}\n")
        if len(calls) == 3:
            try:
                fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
            except FileExistsError:
                pass
            else:
                os.write(fd, str(os.getpid()).encode())
                os.close(fd)
                os.kill(os.getpid(), signal.SIGKILL)
        if path not in FILES:
            raise ToolError(f"file {path} not found")
        return FILES[path]

    return read_file


def test_a_killed_worker_loses_at_most_its_batch_and_the_sweep_completes(tmp_path, client):
    marker, log = tmp_path / "killed", tmp_path / "calls.log"
    config = SweepConfig(
        "fragile", model={"fallible": {"mistakes": []}}, tools=[_fragile_tool(str(marker), str(log))]
    )
    result = loopnb.sweep(
        "What does src/main.rs do?",
        seeds=12,
        configs=[config],
        out=tmp_path / "k",
        cluster=client,
        batch=3,
        progress=False,
    )
    dead = int(marker.read_text())  # a worker did die, on the last run of its batch
    assert result.complete and result.turns.run_id.nunique() == 12
    assert (result.turns.groupby("run_id").size() == 2).all()  # every run whole: a call, then the answer
    calls = [int(pid) for pid in log.read_text().split()]
    # one call per run, and the three runs of the batch in flight when its worker died again:
    # that batch, and nothing written before it, was run twice
    assert len(calls) == 12 + 3 and calls.count(dead) == 3
    assert len(result.figures) == 4 and dead not in set(result.figures.pid)
