"""A sweep under attack: a full disk, two sweeps into one folder at once, a config whose own code
raises in a worker. Each stops the sweep with an error saying what and where, keeps every batch
already written, and ``resume=True`` finishes once the cause is gone.

The tests that patch loopnb or register a scenario run on an in-process cluster (its worker is a
thread of this process, so it sees the patch); the others on the conftest's cluster of processes.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import loopnb
from loopnb.record import RecordingError
from loopnb.scenarios import SCENARIOS, Build, get
from tests.sweep.conftest import running_cluster


@pytest.fixture(scope="module")
def local() -> Iterator[Any]:
    """A cluster of one worker thread in this process."""
    with running_cluster(workers=1, processes=False) as client:
        yield client


def _parts(out: Path) -> list[str]:
    return sorted(p.name for p in out.glob("config=*/part-*.parquet"))


def _left_over(out: Path) -> list[str]:
    """Temporary files a failed write left behind."""
    return sorted(p.name for p in out.rglob("*.tmp"))


def test_a_full_disk_stops_the_sweep_naming_the_folder_and_resume_finishes(tmp_path, local, monkeypatch):
    import loopnb.record._parquet as parquet

    out, room = tmp_path / "full", [3]  # the last batch meets the full disk: none is left in flight
    real = parquet.insert_before_footer

    def filling(path: Path, parts: Any) -> None:
        if not room[0]:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        room[0] -= 1
        real(path, parts)

    monkeypatch.setattr(parquet, "insert_before_footer", filling)
    with pytest.raises(RecordingError) as caught:
        loopnb.sweep(["mistyped_path"], seeds=4, out=out, cluster=local, batch=1, progress=False)
    assert caught.value.path == str(out)
    assert str(caught.value).startswith(
        f"{out}: the disk is full (No space left on device) writing batch 3 of config mistyped_path; "
        "the batches written before are kept: free some space, then the same sweep with resume=True finishes"
    )
    assert _parts(out) == [f"part-{i:06d}.parquet" for i in range(3)] and _left_over(out) == []
    assert loopnb.Sweep(out).turns.run_id.nunique() == 3  # what was written reads whole

    monkeypatch.setattr(parquet, "insert_before_footer", real)  # space freed
    done = loopnb.sweep(["mistyped_path"], seeds=4, out=out, cluster=local, resume=True, progress=False)
    assert len(done.figures) == 1 and done.complete
    assert sorted(done.turns.seed.unique()) == list(range(4))


def _mount_tmpfs(folder: Path, size: str) -> bool:
    folder.mkdir()
    command = ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)]
    try:
        return subprocess.run(command, capture_output=True, check=False).returncode == 0
    except OSError:
        return False


def _settled(out: Path, quiet: float = 0.5, limit: float = 30.0) -> list[str]:
    """The parts in ``out`` once no batch has landed for ``quiet`` seconds."""
    deadline, parts = time.monotonic() + limit, _parts(out)
    while time.monotonic() < deadline:
        time.sleep(quiet)
        now = _parts(out)
        if now == parts:
            return now
        parts = now
    raise AssertionError(f"{out} kept changing for {limit}s")


def test_a_real_full_disk_keeps_what_was_written(tmp_path, client):
    """The same on a small tmpfs, where pyarrow meets ENOSPC (needs root to mount; skipped elsewhere)."""
    disk = tmp_path / "disk"
    if not _mount_tmpfs(disk, "120k"):
        pytest.skip("mounting a tmpfs needs root")
    try:
        out = disk / "s"
        with pytest.raises(
            RecordingError, match=r"the disk is full \(No space left on device\) writing batch"
        ):
            loopnb.sweep(["mistyped_path"], seeds=40, out=out, cluster=client, batch=1, progress=False)
        assert 1 <= len(_parts(out)) < 40
        subprocess.run(["mount", "-o", "remount,size=20m", str(disk)], check=True)
        # Batches a worker was already running when the first one met the full disk may still land
        # (each freed its temporary file): count what is written once the folder stops changing.
        written = _settled(out)
        done = loopnb.sweep(["mistyped_path"], seeds=40, out=out, cluster=client, resume=True, progress=False)
        assert done.complete and done.turns.run_id.nunique() == 40
        assert len(done.figures) == 40 - len(written)  # resume redid nothing that was written
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def test_a_second_sweep_into_a_folder_in_use_is_refused_naming_the_first(tmp_path, client):
    out, started, go = tmp_path / "busy", threading.Event(), threading.Event()
    results: dict[str, Any] = {}

    def waiting(done: int, total: int, figures: dict[str, Any]) -> None:
        started.set()
        assert go.wait(60), "the test never let the first sweep go on"

    def first() -> None:
        try:
            results["first"] = loopnb.sweep(
                ["mistyped_path"], seeds=4, out=out, cluster=client, batch=1, progress=waiting
            )
        except BaseException as exc:  # shown by the assertion below
            results["first"] = exc

    thread = threading.Thread(target=first)
    thread.start()
    try:
        assert started.wait(60)
        for resume in (False, True):
            with pytest.raises(ValueError) as caught:
                loopnb.sweep(
                    ["mistyped_path"], seeds=4, out=out, cluster=client, resume=resume, progress=False
                )
            assert str(caught.value).startswith(
                f"sweep: {out} is in use by another sweep "
                f"(process {os.getpid()} on {socket.gethostname()}, since "
            )
            assert str(caught.value).endswith(
                "two sweeps writing one folder would run each other's batches. Wait for it to end, or "
                "choose another out"
            )
    finally:
        go.set()
        thread.join(120)
    assert isinstance(results["first"], loopnb.Sweep) and results["first"].complete
    again = loopnb.sweep(["mistyped_path"], seeds=4, out=out, cluster=client, resume=True, progress=False)
    assert again.complete and len(again.figures) == 0  # the folder is free once the first has ended


def test_a_killed_sweep_leaves_its_folder_free(tmp_path, client):
    """The lock is the operating system's: a holder killed outright releases it."""
    out = tmp_path / "killed"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path; from loopnb._sweep._lock import holding\n"
            f"with holding(Path({str(out)!r})):\n    print('held', flush=True); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(loopnb.__file__).parents[1],
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(ValueError, match=rf"is in use by another sweep \(process {holder.pid} on "):
            loopnb.sweep(["mistyped_path"], seeds=2, out=out, cluster=client, progress=False)
    finally:
        holder.kill()
        holder.wait()
    done = loopnb.sweep(["mistyped_path"], seeds=2, out=out, cluster=client, progress=False)
    assert done.complete


def test_an_out_that_is_a_file_is_refused(tmp_path, client):
    out = tmp_path / "a-file"
    out.write_text("not a folder")
    with pytest.raises(ValueError, match=rf"^sweep: out {out} is a file; the results go into a folder$"):
        loopnb.sweep(["mistyped_path"], seeds=1, out=out, cluster=client, progress=False)


class FactoryError(Exception):
    """What a scenario's builder of the user's own raises."""


def test_a_config_that_raises_in_a_worker_stops_the_sweep_naming_config_and_seed(
    tmp_path, local, monkeypatch
):
    base, broken = get("mistyped_path"), [True]

    def builder(build: Build) -> dict[str, Any]:
        if broken[0] and build.seed == 3:
            raise FactoryError("no workspace for seed 3")
        return base.builder(build)

    monkeypatch.setitem(SCENARIOS, "flaky", dataclasses.replace(base, name="flaky", builder=builder))
    out = tmp_path / "flaky"
    with pytest.raises(FactoryError) as caught:  # the config's own error, as it raised it
        loopnb.sweep(["flaky"], seeds=6, out=out, cluster=local, batch=2, progress=False)
    assert str(caught.value) == "no workspace for seed 3"
    assert caught.value.__notes__ == [
        "in run flaky-3 of the sweep (config flaky, seed 3); the batches written before are kept: fix the "
        "config, then the same sweep with resume=True finishes",
        "in sweep batch 1 of config flaky (seeds 2..3)",
    ]
    assert "part-000000.parquet" in _parts(out) and "part-000001.parquet" not in _parts(out)

    broken[0] = False  # the config mended
    done = loopnb.sweep(["flaky"], seeds=6, out=out, cluster=local, resume=True, progress=False)
    assert done.complete and sorted(done.turns.seed.unique()) == list(range(6))
