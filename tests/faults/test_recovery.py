"""``audit(rec).recovery_rate(by=...)`` and ``audit(rec).false_success()`` on runs built by hand,
whose answers are counted here call by call."""

from __future__ import annotations

import contextlib

import pandas as pd
import pytest

from loopnb import (
    Engine,
    LoopError,
    Recorder,
    ScriptedModel,
    ToolCall,
    ToolError,
    audit,
    faults,
    inject,
    tool,
)


@tool
def read_file(path: str) -> str:
    """Read a file."""
    if path == "missing":
        raise ToolError(f"file {path} not found")
    return "text"


@tool
def search(query: str) -> str:
    """Search."""
    return "hits"


def call(name: str, cid: str, **arguments: str) -> ToolCall:
    return ToolCall(name, arguments, id=cid)


def record(runs: list[tuple[str, list, dict]]) -> Recorder:
    """Each run: (run id, the model's steps, the faults injected for it)."""
    recorder = Recorder()
    for run_id, steps, planned in runs:
        tools = inject([read_file, search], planned) if planned else [read_file, search]
        engine = Engine(
            ScriptedModel(steps), tools=tools, observers=[recorder], loop_detector=None, max_turns=20
        )
        with contextlib.suppress(LoopError):
            engine.run("t", run_id=run_id)
    return recorder


RUNS = [
    # a: an injected transient error on read_file, recovered two calls later; the misspelt tool
    #    between (registry_miss) is no tool's error
    (
        "a",
        [
            call("read_file", "a1", path="x"),
            call("read_fil", "a2", path="x"),
            call("read_file", "a3", path="x"),
            "done a",
        ],
        {"read_file": faults.error("disk busy").first(1)},
    ),
    # b: a natural error on read_file never followed by a success, then a final answer: false success;
    #    two calls in one turn, search injected and then recovered
    (
        "b",
        [
            [call("read_file", "b1", path="missing"), call("search", "b2", query="q")],
            call("search", "b3", query="q"),
            "done b",
        ],
        {"search": faults.crash(ValueError("index gone")).first(1)},
    ),
    # c: a permanent injected error, twice, never recovered; the run ends hard (max_turns):
    #    no false success
    (
        "c",
        [call("read_file", "c1", path="x"), call("read_file", "c2", path="x")]
        + [call("search", f"s{i}", query="q") for i in range(20)],
        {"read_file": faults.error("locked")},
    ),
    # d: an implicit fault: a wrong result with no error flag is counted as a success (invisible)
    ("d", [call("read_file", "d1", path="x"), "done d"], {"read_file": faults.wrong("nonsense")}),
]


@pytest.fixture(scope="module")
def checked() -> audit:
    return audit(record(RUNS))


def rows(frame: pd.DataFrame) -> list[tuple]:
    return [tuple(None if pd.isna(v) else v for v in r) for r in frame.itertuples(index=False)]


def test_recovery_rate_by_run(checked) -> None:
    frame = checked.recovery_rate()
    assert list(frame.columns) == ["run_id", "soft_errors", "recovered", "rate"]
    assert rows(frame) == [("a", 1, 1, 1.0), ("b", 2, 1, 0.5), ("c", 2, 0, 0.0), ("d", 0, 0, None)]
    assert str(frame["rate"].dtype) == "Float64" and str(frame["soft_errors"].dtype) == "Int64"


def test_recovery_rate_by_tool(checked) -> None:
    frame = checked.recovery_rate(by="tool")
    assert list(frame.columns) == ["tool", "soft_errors", "recovered", "rate"]
    assert rows(frame) == [("read_file", 4, 1, 0.25), ("search", 1, 1, 1.0)]


def test_recovery_rate_by_fault_splits_injected_from_natural(checked) -> None:
    frame = checked.recovery_rate(by="fault")
    assert list(frame.columns) == ["fault", "soft_errors", "recovered", "rate"]
    assert rows(frame) == [
        ('crash(ValueError("index gone")).first(1)', 1, 1, 1.0),
        ('error("disk busy").first(1)', 1, 1, 1.0),
        ('error("locked")', 2, 0, 0.0),
        (None, 1, 0, 0.0),  # the real error: read_file's missing file in run b
    ]


def test_false_success_names_the_tool_its_last_error_and_the_answer(checked) -> None:
    frame = checked.false_success()
    assert list(frame.columns) == ["run_id", "tool", "turn", "error_text", "final_output"]
    assert rows(frame) == [("b", "read_file", 1, "file missing not found", "done b")]


def test_a_filtered_audit_measures_only_its_runs(checked) -> None:
    turns = checked.turns
    only_a = audit(turns[turns["run_id"] == "a"], checked.events)
    assert rows(only_a.recovery_rate()) == [("a", 1, 1, 1.0)]
    assert len(only_a.false_success()) == 0


def test_both_need_the_events(checked) -> None:
    turns_only = audit(checked.turns)
    with pytest.raises(ValueError, match=r"recovery_rate\(\) needs the events: audit\(recording\)"):
        turns_only.recovery_rate()
    with pytest.raises(ValueError, match=r"false_success\(\) needs the events"):
        turns_only.false_success()


def test_an_unknown_key_is_refused(checked) -> None:
    with pytest.raises(
        ValueError, match=r"recovery_rate\(by='turn'\): by is one of 'run', 'tool' or 'fault'"
    ):
        checked.recovery_rate(by="turn")  # type: ignore[arg-type]


def test_nothing_to_measure() -> None:
    a = audit(record([("z", ["nothing to do"], {})]))
    assert rows(a.recovery_rate()) == [("z", 0, 0, None)]
    assert len(a.recovery_rate(by="tool")) == 0 and len(a.false_success()) == 0
