"""``loopnb demo`` end to end: the per-turn tables, the summary and the exit code."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from loopnb import scenarios
from loopnb.cli import format_outcome, main, turn_rows

ROOT = Path(__file__).resolve().parents[1]


def demo(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["demo", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_demo_runs_every_scenario_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = demo(capsys, "--width", "120")
    assert code == 0
    for name in scenarios.names():
        assert f"== {name}: " in out
    n = len(scenarios.names())
    assert out.rstrip().splitlines()[-1].endswith(f"{n}/{n} as declared")
    assert out.count(", as declared") == n
    for tag in (" ok ", " soft ", " hard "):
        assert tag in out


def test_the_spec_example_prints_exactly_this_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = demo(capsys, "mistyped_path", "--width", "120")
    assert code == 0
    assert out.splitlines()[3:8] == [
        "   turn  channel  producer    tools      what the model read",
        "   1     soft     tool_error  read_file  file src/mian.rs not found",
        "   2     ok       -           read_file  fn main() {}",
        "   3     ok       -           -          (final answer) src/main.rs is `fn main() {}`: "
        "it prints nothing.",
        "   ended ok: 'src/main.rs is `fn main() {}`: it prints nothing.', as declared",
    ]
    assert out.rstrip().splitlines()[-1] == (
        "1 scenarios, 3 turns (1 soft): 1 ended ok, 0 hard; 1/1 as declared"
    )


def test_a_hard_ending_is_tagged_hard_with_the_text_that_ended_it(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = demo(capsys, "stubborn_loop", "--width", "200")
    assert code == 0
    rows = [line.split() for line in out.splitlines() if line.startswith("   ") and line.split()[0].isdigit()]
    assert [r[1:3] for r in rows] == [["soft", "tool_error"]] * 3 + [["soft", "loop_refusal"]] * 2 + [
        ["hard", "loop_detected"]
    ]
    assert "(run ended) loop detected: read_file" in out
    assert "ended hard: LoopDetected (loop_detected), as declared" in out


def test_the_model_column_appears_when_a_fallback_answered(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = demo(capsys, "fallback_chain", "recovery_success", "--width", "120")
    assert "producer            model    tools" in out
    assert "retries" in out  # recovery_success retried once


def test_seed_changes_the_simulated_models_slips(capsys: pytest.CaptureFixture[str]) -> None:
    _, default, _ = demo(capsys, "mistyped_path")
    code, seeded, _ = demo(capsys, "mistyped_path", "--seed", "0")
    assert code == 0
    assert "src/mian.rs" in default and "src/mani.rs" in seeded


def test_list_names_every_scenario_and_its_ending(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = demo(capsys, "--list")
    assert code == 0
    lines = out.splitlines()
    assert [line.split()[0] for line in lines] == scenarios.names()
    assert any(line.split()[:3] == ["recovery_ceiling", "ends", "tool_recovery_exhausted"] for line in lines)


def test_an_unknown_scenario_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = demo(capsys, "no_such_thing")
    assert code == 2 and out == ""
    assert "no scenario named 'no_such_thing'" in err and "mistyped_path" in err


def test_a_scenario_that_misses_its_declaration_makes_the_exit_code_1(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    wrong = dataclasses.replace(scenarios.get("mistyped_path"), ending="loop_detected")
    monkeypatch.setitem(scenarios.SCENARIOS, "mistyped_path", wrong)
    code, out, _ = demo(capsys, "mistyped_path", "hook_veto")
    assert code == 1
    assert "NOT as declared: ended ok, declared loop_detected" in out
    assert out.rstrip().endswith("1/2 as declared (not as declared: mistyped_path)")


def test_no_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([])
    assert exit_info.value.code == 2


def test_rows_come_from_turn_finished_events_alone() -> None:
    outcome = scenarios.get("flaky_tool_breaker").run()
    rows = turn_rows(outcome)
    assert [r["channel"] for r in rows] == ["soft", "soft", "soft", "ok", "ok", "ok"]
    assert rows[2]["what the model read"] == "tool temporarily unavailable: circuit breaker open"
    assert len(rows) == len(outcome.turns)
    assert format_outcome(outcome, width=80).count("\n") == len(rows) + 5


def test_record_writes_one_recording_per_scenario_or_says_it_cannot(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = demo(capsys, "mistyped_path", "--record", str(tmp_path / "runs"))
    if importlib.util.find_spec("loopnb.record") is None:
        assert code == 2 and "recording is unavailable" in err
    else:
        assert code == 0
        assert (tmp_path / "runs" / "mistyped_path.jsonl").stat().st_size > 0


def test_audit_is_routed_to_the_record_package(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = importlib.util.find_spec("loopnb.record") is None
    if missing:
        assert main(["audit", str(tmp_path / "none.jsonl")]) == 2
        assert "auditing is unavailable" in capsys.readouterr().err
    else:
        assert isinstance(main(["audit", str(tmp_path / "none.jsonl")]), int)


def test_the_module_runs_as_a_command() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "loopnb.cli", "demo", "registry_miss"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Tool not found: fetch_file. Available: read_file, list_dir" in done.stdout
