"""An injected ``hang`` or ``slow`` inside an engine waits on the run's clock, under its timeout: on a
``FakeClock`` no real time passes, and the simulated clock moves as the wait says."""

from __future__ import annotations

import time

import pandas as pd
import pytest

from loopnb import Engine, FakeClock, Recorder, ScriptedModel, ToolCall, faults, inject, tool


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


@tool
async def fetch(url: str) -> str:
    """Fetch a page."""
    return f"page {url}"


def run(tools, calls, *, timeout=None):
    """A scripted run on a FakeClock: its dispatches (text, producer, injected, latency) and the clock."""
    clock = FakeClock()
    recorder = Recorder()
    engine = Engine(
        ScriptedModel([*calls, "done"]), tools=tools, clock=clock, timeout=timeout, observers=[recorder]
    )
    started = time.perf_counter()
    engine.run("t")
    real = time.perf_counter() - started
    e = recorder.events
    rows = e[e["kind"] == "tool_dispatched"]
    columns = [rows[c].astype(object).tolist() for c in ("text", "producer", "injected", "latency_ms")]
    seen = [tuple(None if pd.isna(v) else v for v in row) for row in zip(*columns, strict=True)]
    return seen, clock.monotonic(), real


READ = ToolCall("read_file", {"path": "a.txt"})


@pytest.mark.parametrize("timeout", [0.5, 5.0])
def test_a_hang_longer_than_the_timeout_times_out_on_the_runs_clock(timeout: float) -> None:
    seen, clock, real = run(
        inject([read_file], {"read_file": faults.hang(30).first(1)}), [READ, READ], timeout=timeout
    )
    assert seen[0][:3] == (f"Tool 'read_file' timed out after {timeout:g}s", "timeout", "hang(30.0).first(1)")
    assert seen[0][3] == pytest.approx(timeout * 1000)
    assert seen[1][:3] == ("contents of a.txt", None, None)
    assert clock == pytest.approx(timeout) and real < 0.4  # simulated, not slept


def test_a_hang_with_no_timeout_fails_after_its_seconds_on_the_runs_clock() -> None:
    seen, clock, real = run(inject([read_file], {"read_file": faults.hang(30).first(1)}), [READ])
    assert seen[0][1:3] == ("tool_error", "hang(30.0).first(1)")
    assert clock == pytest.approx(30.0) and real < 0.4


def test_a_slow_call_runs_late_on_the_runs_clock_and_a_shorter_timeout_fires_first() -> None:
    seen, clock, real = run(inject([read_file], {"read_file": faults.slow(2)}), [READ])
    assert seen[0][:3] == ("contents of a.txt", None, "slow(2.0)") and clock == pytest.approx(2.0)
    seen, clock, real = run(inject([read_file], {"read_file": faults.slow(2)}), [READ], timeout=1.5)
    assert seen[0][:3] == ("Tool 'read_file' timed out after 1.5s", "timeout", "slow(2.0)")
    assert clock == pytest.approx(1.5) and real < 0.4


def test_an_async_tool_waits_on_the_runs_clock_too() -> None:
    call = ToolCall("fetch", {"url": "x"})
    seen, clock, real = run(inject([fetch], {"fetch": faults.slow(3)}), [call], timeout=10)
    assert seen[0][:3] == ("page x", None, "slow(3.0)") and clock == pytest.approx(3.0) and real < 0.4
    seen, clock, real = run(inject([fetch], {"fetch": faults.hang(60)}), [call], timeout=10)
    assert seen[0][1:3] == ("timeout", "hang(60.0)") and clock == pytest.approx(10.0) and real < 0.4
