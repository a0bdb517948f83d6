"""kill -9 of a recording process mid-run: every completed turn is still in the file."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from loopnb import load
from loopnb.record import RecordingWarning

ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import sys
    from loopnb import Engine, ScriptedModel, ToolCall, ToolError, tool
    from loopnb.record import Recorder

    @tool
    def read_file(path: str) -> str:
        '''Read a file.'''
        if path != "src/main.rs":
            raise ToolError(f"file {path} not found")
        return "fn main() {}" * 50

    rec = Recorder(sys.argv[1], fsync=sys.argv[2] == "fsync")
    done = 0

    def report(event, row):
        global done
        if row is not None:
            done += 1
            print(done, flush=True)

    rec.subscribe(report)
    while True:
        script = [ToolCall("read_file", {"path": "src/mian.rs"}),
                  ToolCall("read_file", {"path": "src/main.rs"}), "It prints nothing."]
        Engine(ScriptedModel(script), tools=[read_file], observers=[rec]).run("task")
    """
)


@pytest.mark.parametrize("mode", ["flush", "fsync"])
def test_kill_9_mid_run_leaves_every_completed_turn_readable(tmp_path, mode):
    path = tmp_path / "killed.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path), mode],
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        completed = 0
        assert child.stdout is not None
        while completed < 40:
            line = child.stdout.readline()
            assert line, "the child stopped before recording 40 turns"
            completed = int(line)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait(timeout=10)
    assert child.returncode == -signal.SIGKILL
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RecordingWarning)  # a torn last line is allowed
        rec = load(path)
    turns = rec.turns
    assert len(turns) >= completed
    # whole runs are whole: 3 turns each, soft then ok then ok
    complete_runs = turns.groupby("run_id", sort=False).size()
    assert (complete_runs.iloc[:-1] == 3).all()
    assert turns["channel"].tolist()[:3] == ["soft", "ok", "ok"]
