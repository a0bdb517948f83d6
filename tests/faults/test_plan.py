"""``FaultPlan.decide``: the one per-call decision, its schedules, its seed and its log."""

from __future__ import annotations

import subprocess
import sys

import pytest

from loopnb import faults
from loopnb.faults import FaultPlan, Injection


def fired(
    plan: FaultPlan, n: int, tool: str = "read_file", run: str = "r1", **arguments: object
) -> list[bool]:
    return [plan.decide(tool, arguments, run=run, call_id=f"c{i}") is not None for i in range(n)]


def test_always_fails_every_call_and_logs_each() -> None:
    plan = FaultPlan({"read_file": faults.error("disk busy")})
    assert fired(plan, 3) == [True, True, True]
    assert plan.injections[0] == Injection("c0", "read_file", 'error("disk busy")', "r1")
    assert len(plan.injections) == 3


def test_first_k_fails_the_first_calls_of_each_run() -> None:
    plan = FaultPlan({"read_file": 'error("x").first(2)'})
    assert fired(plan, 4, run="a") == [True, True, False, False]
    assert fired(plan, 3, run="b") == [True, True, False]
    assert [i.run_id for i in plan.injections] == ["a", "a", "b", "b"]


def test_first_zero_never_fires() -> None:
    assert fired(FaultPlan({"t": faults.error().first(0)}), 3, tool="t") == [False] * 3


def test_when_fails_only_the_calls_with_those_arguments_and_counts_only_them() -> None:
    plan = FaultPlan({"read_file": faults.error().when(path="a").first(1)})
    calls = ["b", "a", "b", "a"]
    got = [plan.decide("read_file", {"path": p}, run="r") is not None for p in calls]
    assert got == [False, True, False, False]
    assert plan.decide("read_file", None) is None  # no arguments to match


def test_a_tool_with_no_fault_is_never_touched() -> None:
    plan = FaultPlan({"read_file": faults.error()})
    assert plan.decide("list_dir", {}) is None and plan.injections == []


def test_sometimes_is_the_same_for_the_same_seed_and_tool() -> None:
    def pattern(seed: int, tool: str = "t", run: str = "r") -> list[bool]:
        return fired(FaultPlan({tool: faults.error().sometimes(0.5)}, seed=seed), 40, tool=tool, run=run)

    assert pattern(0) == pattern(0)
    assert pattern(0, run="r") == pattern(0, run="another")  # each run draws the same sequence
    assert pattern(0) != pattern(1)
    assert pattern(0, tool="t") != pattern(0, tool="u")
    share = sum(pattern(7)) / 40
    assert 0.25 < share < 0.75


def test_sometimes_is_the_same_in_another_process() -> None:
    code = (
        "from loopnb import faults; from loopnb.faults import FaultPlan;"
        "p = FaultPlan({'t': faults.error().sometimes(0.5)}, seed=3);"
        "print(''.join('1' if p.decide('t', {}, run='r') else '0' for _ in range(30)))"
    )
    runs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout for _ in "ab"}
    here = FaultPlan({"t": faults.error().sometimes(0.5)}, seed=3)
    mine = "".join("1" if here.decide("t", {}, run="r") else "0" for _ in range(30))
    assert runs == {mine + "\n"}


def test_sometimes_zero_and_one() -> None:
    assert fired(FaultPlan({"t": faults.error().sometimes(0)}), 5, tool="t") == [False] * 5
    assert fired(FaultPlan({"t": faults.error().sometimes(1)}), 5, tool="t") == [True] * 5


def test_an_argument_whose_equality_raises_does_not_match() -> None:
    class Odd:
        def __eq__(self, other: object) -> bool:
            raise RuntimeError("no")

    plan = FaultPlan({"t": faults.error().when(path="a")})
    assert plan.decide("t", {"path": Odd()}) is None


def test_a_plan_refuses_what_is_not_a_fault_or_a_seed() -> None:
    with pytest.raises(TypeError, match=r"inject: faults\['t'\] must be a Fault"):
        FaultPlan({"t": 3})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="inject: seed must be an int, got True"):
        FaultPlan({}, seed=True)
    with pytest.raises(TypeError, match="inject: faults must be a mapping"):
        FaultPlan([("t", faults.error())])  # type: ignore[arg-type]


def test_a_long_lived_plan_forgets_old_runs() -> None:
    plan = FaultPlan({"t": faults.error().first(1)})
    for i in range(3000):
        plan.decide("t", {}, run=f"r{i}")
    assert len(plan._counts) <= 1024
    assert len(plan.injections) == 3000
