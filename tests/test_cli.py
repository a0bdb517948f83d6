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
from loopnb.cli import main
from loopnb.cli._outcome_text import format_outcome, turn_rows

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
        "1 scenario, 3 turns (1 soft): 1 ended ok, 0 hard; 1/1 as declared"
    )


def test_a_hard_ending_is_tagged_hard_with_the_text_that_ended_it(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = demo(capsys, "stubborn_loop", "--width", "200")
    assert code == 0
    rows = [line.split() for line in out.splitlines() if line.startswith("   ") and line.split()[0].isdigit()]
    assert [r[1:3] for r in rows] == [["soft", "tool_error"]] * 3 + [["soft", "loop_refusal"]] * 2 + [
        ["hard", "loop_detected"]
    ]
    lines = out.splitlines()
    hard_row = next(line for line in lines if line.split()[:2] == ["6", "hard"])
    assert hard_row.endswith("(run ended: the cause is below)")
    ending = lines.index("   ended hard: LoopDetected (loop_detected), as declared")
    cause = [line.strip() for line in lines[ending + 1 :] if line.startswith("   ") and line.strip()]
    assert cause[0].startswith("cause: loop detected: read_file")
    assert " ".join(cause).removeprefix("cause: ") == outcome_of("stubborn_loop").turns[-1].error_text


def test_a_hard_cause_is_printed_in_full_however_narrow_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = demo(capsys, "fallback_chain", "--width", "50")
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("   cause: "))
    cause = []
    for line in lines[start:]:
        if not line.startswith("   "):
            break
        cause.append(line.strip())
    expected = outcome_of("fallback_chain").turns[-1].error_text
    assert expected is not None and len(expected) > 60
    assert " ".join(cause).removeprefix("cause: ") == expected
    assert "..." not in " ".join(cause)
    assert all(len(line) <= 50 for line in lines[start : start + len(cause)])


def outcome_of(name: str) -> scenarios.Outcome:
    return scenarios.get(name).run()


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


def test_record_says_where_it_wrote_and_what_to_run_next(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    folder = tmp_path / "my runs"
    code, out, _ = demo(capsys, "mistyped_path", "hook_veto", "--record", str(folder))
    assert code == 0
    assert out.rstrip().splitlines()[-2:] == [
        f"wrote 2 recordings to {folder} (one NAME.jsonl per scenario)",
        f"next: loopnb audit '{folder}'",
    ]
    assert main(["audit", str(folder)]) == 0  # the command it names works
    assert capsys.readouterr().out.startswith("loopnb audit: 2 recordings\n")
    code, out, _ = demo(capsys, "mistyped_path", "--record", str(tmp_path / "one"))
    assert f"wrote 1 recording to {tmp_path / 'one'} " in out


def test_words_agree_with_their_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    _, one, _ = demo(capsys, "context_overflow")
    assert one.rstrip().splitlines()[-1] == "1 scenario, 1 turn (0 soft): 0 ended ok, 1 hard; 1/1 as declared"
    _, two, _ = demo(capsys, "mistyped_path", "hook_veto")
    assert two.rstrip().splitlines()[-1].startswith("2 scenarios, 6 turns (2 soft): 2 ended ok, 0 hard")


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
