"""A file a live ``Recorder`` streams to is never replaced under it: a save onto it (from another
recorder, a loaded recording or another process) is a ``RecordingError`` naming the file and the
stream, and the streamer's later turns all reach the file."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from loopnb import load
from loopnb.record import Recorder, RecordingError
from tests.record.conftest import recorded, typo_run


def streaming(path: Path, run_id: str = "live") -> Recorder:
    rec = Recorder(path)
    for e in typo_run(run_id).events:
        rec(e)
    return rec


def test_another_recorder_saving_onto_a_streamed_file_is_refused_naming_both(tmp_path):
    path = tmp_path / "live.jsonl"
    live = streaming(path)
    other = recorded(typo_run("other"))
    with pytest.raises(RecordingError) as caught:
        other.save(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: cannot replace it: a live Recorder of this process streams to it")
    assert f"(as {path})" in message and "close that recorder first" in message
    for e in typo_run("later").events:
        live(e)
    live.close()
    assert load(path).run_ids == ["live", "later"]  # every turn reached the file


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_a_save_under_another_name_of_the_same_file_is_refused(tmp_path, suffix):
    path = tmp_path / "live.jsonl"
    live = streaming(path)
    alias = tmp_path / f"alias{suffix}"
    os.link(path, alias)
    with pytest.raises(RecordingError, match=rf"alias\{suffix}: cannot replace it: .*\(as {path}\)"):
        recorded(typo_run("other")).save(alias)
    live.close()


def test_once_the_streamer_is_closed_or_gone_the_file_may_be_replaced(tmp_path):
    path = tmp_path / "live.jsonl"
    live = streaming(path)
    live.close()
    recorded(typo_run("other")).save(path)
    assert load(path).run_ids == ["other"]
    gone = streaming(path, "gone")
    del gone  # collected unclosed: its file closes, and with it the lock
    recorded(typo_run("third")).save(path)
    assert load(path).run_ids == ["third"]


def test_two_recorders_still_stream_to_one_file(tmp_path):
    path = tmp_path / "shared.jsonl"
    first, second = Recorder(path), Recorder(path)
    for e in typo_run("a").events:
        first(e)
    for e in typo_run("b").events:
        second(e)
    first.close()
    second.close()
    assert load(path).run_ids == ["a", "b"]


def test_a_save_onto_a_file_another_process_streams_to_is_refused(tmp_path):
    path = tmp_path / "live.jsonl"
    child = textwrap.dedent(
        f"""
        import sys
        from loopnb.record import Recorder
        from tests.record.conftest import typo_run
        rec = Recorder({str(path)!r})
        for e in typo_run("child").events:
            rec(e)
        print("streaming", flush=True)
        sys.stdin.readline()
        for e in typo_run("after").events:
            rec(e)
        rec.close()
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", child],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "streaming\n"
        with pytest.raises(
            RecordingError, match=rf"{path}: cannot replace it: another process has a Recorder"
        ):
            recorded(typo_run("other")).save(path)
    finally:
        proc.communicate("go\n", timeout=60)
    assert proc.returncode == 0
    assert load(path).run_ids == ["child", "after"]
