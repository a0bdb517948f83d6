"""Shared fixtures for the recording tests: hand-built runs (no engine) and engine runs."""

from __future__ import annotations

import pytest

from loopnb import Engine, ScriptedModel, ToolCall, ToolError, tool
from loopnb.record import Recorder
from loopnb.record.synthetic import Call, RunBuilder


@tool
def read_file(path: str) -> str:
    """Read a UTF-8 text file."""
    if path != "src/main.rs":
        raise ToolError(f"file {path} not found")
    return "fn main() {}"


def typo_run(run_id: str = "r1") -> RunBuilder:
    """The spec's classic: a misspelt path (soft), the right one, the answer. 3 turns."""
    b = RunBuilder(run_id)
    b.tool_turn(Call("read_file", content="file src/mian.rs not found", error="tool_error"))
    b.tool_turn(Call("read_file", content="fn main() {}"))
    b.final("It prints nothing.")
    return b


def hard_run(run_id: str = "r2") -> RunBuilder:
    """A breaker trips (soft refusal), recovery gives up, then recovery runs past the ceiling."""
    b = RunBuilder(run_id, model="other")
    b.breaker("read_file", "open")
    b.tool_turn(
        Call(
            "read_file",
            content="tool temporarily unavailable: circuit breaker open",
            error="breaker_open",
            executed=False,
        )
    )
    b.tool_turn(Call("read_file", content="file x not found", error="tool_error", retries=1, gave_up="fail"))
    b.hard(
        "tool_recovery_exhausted",
        "recovery of read_file asked for retry 6 after 6 calls; the ceiling is 5 retries",
        Call("read_file", content="file y not found", error="tool_error", retries=5),
    )
    return b


def recorded(*runs: RunBuilder, **options: object) -> Recorder:
    """A ``Recorder(**options)`` that has observed every event of ``runs``."""
    rec = Recorder(**options)  # type: ignore[arg-type]
    for run in runs:
        for e in run.events:
            rec(e)
    return rec


@pytest.fixture
def recorder() -> Recorder:
    rec = Recorder()
    for e in typo_run().events + hard_run().events:
        rec(e)
    return rec


def engine_typo(recorder: Recorder) -> Engine:
    return Engine(
        model=ScriptedModel(
            [
                ToolCall("read_file", {"path": "src/mian.rs"}),
                ToolCall("read_file", {"path": "src/main.rs"}),
                "It prints nothing.",
            ]
        ),
        tools=[read_file],
        observers=[recorder],
    )
