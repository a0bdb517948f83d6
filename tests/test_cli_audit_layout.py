"""``loopnb audit`` reads well: short lines, numbers beside their labels, shares as percentages, the
turns no model answered, every hard cause in full, and simulated time kept apart from latency."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from loopnb import Engine, FakeClock, ScriptedModel, ToolCall, load, scenarios, tool
from loopnb.cli import main
from loopnb.cli._audit_text import duration
from loopnb.record import Recorder


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("every_scenario") / "runs"
    with io.StringIO() as sink:
        import contextlib

        with contextlib.redirect_stdout(sink):
            assert main(["demo", "--record", str(folder)]) == 0
    return folder


def audit_text(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    capsys.readouterr()
    assert main(["audit", *args]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return out


def section(text: str, title: str) -> list[str]:
    """The lines of one section, up to the blank line before the next title."""
    after = text.split(f"\n{title}\n", 1)[1]
    lines = []
    for line in after.splitlines():
        if line and not line.startswith("  "):
            break
        lines.append(line)
    while lines and not lines[-1]:
        lines.pop()
    return lines


@pytest.mark.parametrize("width", [100, 80])
def test_no_line_is_wider_than_asked(capsys: pytest.CaptureFixture[str], runs: Path, width: int) -> None:
    text = audit_text(capsys, str(runs), "--width", str(width))
    too_wide = [line for line in text.splitlines() if len(line) > width]
    assert too_wide == []


def test_summary_numbers_sit_beside_their_labels(capsys: pytest.CaptureFixture[str], runs: Path) -> None:
    summary = section(audit_text(capsys, str(runs), "--width", "100"), "Summary")
    rows = {m.group(1): m.group(2) for m in (re.match(r"  (\S.*?\S)  +(\S+)", line) for line in summary) if m}
    assert rows["runs"] == "16" and rows["turns"] == "52"
    ok = next(line for line in summary if line.startswith("  ok turns "))
    assert re.fullmatch(r"  ok turns +\d+  \d+%", ok)
    label_end = max(len(m.group(1)) for m in (re.match(r"  (\S.*?\S)  +\d", line) for line in summary) if m)
    assert all(len(line) < label_end + 20 or "  " in line[label_end + 2 :] for line in summary)


def test_shares_and_rates_are_percentages(capsys: pytest.CaptureFixture[str], runs: Path) -> None:
    text = audit_text(capsys, str(runs))
    producers = section(text, "Soft and hard turns per producer")
    assert producers[0].split() == ["producer", "channel", "turns", "runs", "share", "errors"]
    assert all(re.search(r" \d{1,3}% +\d+$", line) for line in producers[1:])
    recovery = section(text, "Self-recovery after soft errors")
    assert all(re.search(r" \d{1,3}% ", line) for line in recovery[1:])


def test_the_turns_no_model_answered_are_shown(capsys: pytest.CaptureFixture[str], runs: Path) -> None:
    models = section(audit_text(capsys, str(runs), "--width", "120"), "Per model")
    counted = [line.split() for line in models[1:] if line.startswith("  ") and line.split()[1].isdigit()]
    no_model = next(r for r in models if r.startswith("  (no model)  "))
    assert no_model.split()[2:7] == ["2", "2", "0", "0", "2"]  # turns, runs, ok, soft, hard
    in_table = sum(int(r[1]) for r in counted) + 2
    assert in_table == 52  # every turn is in the table: the models' and the two the runs ended on


def test_every_hard_cause_is_printed_in_full(capsys: pytest.CaptureFixture[str], runs: Path) -> None:
    text = audit_text(capsys, str(runs), "--width", "60")
    hard = section(text, "Runs that ended hard (6)")
    causes = " ".join(line.strip() for line in hard if line.startswith("    "))
    for path in sorted(runs.glob("*.jsonl")):
        turns = load(path).turns
        for cause in turns.loc[turns["channel"] == "hard", "error_text"]:
            assert " ".join(cause.split()) in causes, path.name
    assert "..." not in causes


def test_simulated_time_is_not_latency(capsys: pytest.CaptureFixture[str], runs: Path) -> None:
    """flaky_tool_breaker waits out a 30 s cooldown on a FakeClock: that is simulated, not spent."""
    one = runs / "flaky_tool_breaker.jsonl"
    assert load(one).event_objects[0].settings["clock"] == "simulated"
    models = section(audit_text(capsys, str(one), "--width", "120"), "Per model")
    scripted = next(line for line in models if line.startswith("  scripted "))
    assert scripted.split()[7:] == ["-", "-", "-"]  # turn median, turn mean, request median
    notes = " ".join(line.strip() for line in models)
    assert "6 turns (scripted) ran on a simulated clock (a FakeClock): 30.00 s of simulated time" in notes
    timed = section(audit_text(capsys, str(runs / "mistyped_path.jsonl"), "--width", "120"), "Per model")
    fallible = next(line for line in timed if line.startswith("  fallible "))
    assert fallible.split()[7] != "-" and fallible.split()[8] == "ms"


def test_a_run_on_the_system_clock_is_marked_wall() -> None:
    @tool
    def echo(text: str) -> str:
        """Say it back."""
        return text

    for clock, expected in ((FakeClock(), "simulated"), (None, "wall")):
        recorder = Recorder()
        Engine(
            ScriptedModel([ToolCall("echo", {"text": "x"}), "done"]),
            tools=[echo],
            clock=clock,
            observers=[recorder],
        ).run("t")
        started = recorder.exported_events()[0][0]
        assert started.kind == "run_started" and started.settings["clock"] == expected


def test_the_models_table_splits_rather_than_run_past_the_width(
    capsys: pytest.CaptureFixture[str], runs: Path
) -> None:
    models = section(audit_text(capsys, str(runs), "--width", "60"), "Per model")
    headers = [line.split() for line in models if line.startswith("  model ")]
    assert len(headers) == 2
    assert headers[0][:4] == ["model", "turns", "runs", "ok"] and "median" in headers[1]
    assert all(len(line) <= 60 for line in models)


def test_durations_carry_their_unit() -> None:
    assert [duration(0.0), duration(0.083), duration(12.345), duration(250.0), duration(30000.0)] == [
        "0 ms",
        "0.08 ms",
        "12.3 ms",
        "250 ms",
        "30.00 s",
    ]
    assert duration(None) == "-"


def test_counts_are_of_what_the_audit_was_given(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    outcome = scenarios.get("mistyped_path")
    assert outcome is not None
    assert main(["demo", "mistyped_path", "hook_veto", "--record", str(tmp_path)]) == 0
    (tmp_path / "hook_veto.jsonl").write_bytes(
        (tmp_path / "hook_veto.jsonl").read_bytes().splitlines(keepends=True)[0] + b"{torn\n{torn\n"
    )
    capsys.readouterr()
    assert main(["audit", str(tmp_path)]) == 1
    out, _ = capsys.readouterr()
    assert out.startswith("loopnb audit: 2 recordings, 1 could not be read (named above)\n")
