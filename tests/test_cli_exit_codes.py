"""Every exit code a subcommand's ``--help`` states is the one it returns, case by case."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import signal
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from loopnb import scenarios
from loopnb.cli import main
from loopnb.scenarios import Scenario

ROOT = Path(__file__).resolve().parents[1]


def code_of(argv: list[str]) -> int:
    """The exit code of ``loopnb ARGV``, argparse's own included."""
    try:
        return main(argv)
    except SystemExit as exit_info:
        assert isinstance(exit_info.code, int)
        return exit_info.code


def documented(command: str, capsys: pytest.CaptureFixture[str]) -> set[int]:
    """The exit codes ``loopnb COMMAND --help`` states."""
    assert code_of([command, "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    sentence = re.search(r"Exit code: (.*?)\.(?: |$)", text)
    assert sentence is not None, f"loopnb {command} --help states no exit code"
    return {int(n) for n in re.findall(r"\b(\d+)(?: when| for| on|,|$)", sentence.group(1))}


@pytest.fixture
def recording(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    assert main(["demo", "mistyped_path", "--record", str(tmp_path / "runs")]) == 0
    capsys.readouterr()
    return tmp_path / "runs" / "mistyped_path.jsonl"


def damaged(recording: Path) -> Path:
    lines = recording.read_bytes().splitlines(keepends=True)
    path = recording.with_name("damaged.jsonl")
    path.write_bytes(b"".join([lines[0], b"{not json\n", *lines[1:]]))
    return path


def newer(recording: Path) -> Path:
    header = json.loads(recording.read_bytes().partition(b"\n")[0])
    path = recording.with_name("newer.jsonl")
    path.write_text(json.dumps({**header, "version": 99}) + "\n")
    return path


def interrupted(monkeypatch: pytest.MonkeyPatch) -> int:
    cancelled = scenarios.get("cancelled_run").run()

    def run_until_ctrl_c(self: Scenario, **kwargs: object) -> object:
        with contextlib.suppress(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
        return cancelled

    monkeypatch.setattr(Scenario, "run", run_until_ctrl_c)
    return code_of(["demo", "mistyped_path", "hook_veto"])


def misdeclared(monkeypatch: pytest.MonkeyPatch) -> int:
    wrong = dataclasses.replace(scenarios.get("mistyped_path"), ending="loop_detected")
    monkeypatch.setitem(scenarios.SCENARIOS, "mistyped_path", wrong)
    return code_of(["demo", "mistyped_path"])


def other(recording: Path) -> Path:
    """The same scenario on another seed: a run that differs from ``recording``."""
    assert main(["demo", "mistyped_path", "--seed", "3", "--record", str(recording.parent / "seed3")]) == 0
    return recording.parent / "seed3" / "mistyped_path.jsonl"


COUNT = "select count(*) as n from turns"


def without_duckdb(monkeypatch: pytest.MonkeyPatch, recording: Path) -> int:
    monkeypatch.setitem(sys.modules, "duckdb", None)  # import duckdb raises ImportError
    return code_of(["query", COUNT, str(recording)])


Case = Callable[[Path, Path, pytest.MonkeyPatch], int]

CASES: dict[str, list[tuple[str, int, Case]]] = {
    "demo": [
        ("every scenario as declared", 0, lambda rec, tmp, mp: code_of(["demo", "mistyped_path"])),
        ("a scenario not as declared", 1, lambda rec, tmp, mp: misdeclared(mp)),
        ("an unknown scenario", 2, lambda rec, tmp, mp: code_of(["demo", "no_such_scenario"])),
        ("a width that is no number", 2, lambda rec, tmp, mp: code_of(["demo", "--width", "wide"])),
        ("--record at a file", 2, lambda rec, tmp, mp: code_of(["demo", "--record", str(rec)])),
        ("Ctrl-C", 130, lambda rec, tmp, mp: interrupted(mp)),
    ],
    "audit": [
        ("every recording read", 0, lambda rec, tmp, mp: code_of(["audit", str(rec)])),
        ("a damaged recording", 1, lambda rec, tmp, mp: code_of(["audit", str(rec), str(damaged(rec))])),
        ("a newer format version", 1, lambda rec, tmp, mp: code_of(["audit", str(newer(rec))])),
        ("a file that is no recording", 2, lambda rec, tmp, mp: code_of(["audit", str(ROOT / "README.md")])),
        (
            "no recording beside a recording",
            2,
            lambda rec, tmp, mp: code_of(["audit", str(rec), str(ROOT / "README.md")]),
        ),
        ("a file that is not there", 2, lambda rec, tmp, mp: code_of(["audit", str(tmp / "none.jsonl")])),
        ("a folder without recordings", 2, lambda rec, tmp, mp: code_of(["audit", str(tmp / "empty")])),
        ("a pattern matching nothing", 2, lambda rec, tmp, mp: code_of(["audit", str(tmp / "x*.jsonl")])),
        ("no path", 2, lambda rec, tmp, mp: code_of(["audit"])),
    ],
    "convert": [
        ("DST written", 0, lambda rec, tmp, mp: code_of(["convert", str(rec), str(tmp / "a.parquet")])),
        (
            "SRC damaged",
            1,
            lambda rec, tmp, mp: code_of(["convert", str(damaged(rec)), str(tmp / "b.parquet")]),
        ),
        ("a DST suffix it cannot write", 2, lambda rec, tmp, mp: code_of(["convert", str(rec), "a.csv"])),
        (
            "SRC not there",
            2,
            lambda rec, tmp, mp: code_of(["convert", str(tmp / "none.jsonl"), str(tmp / "c.parquet")]),
        ),
        (
            "an unknown --format",
            2,
            lambda rec, tmp, mp: code_of(["convert", str(rec), str(tmp / "d.parquet"), "--format", "otlpp"]),
        ),
    ],
    "compare": [
        ("two runs that differ", 0, lambda rec, tmp, mp: code_of(["compare", str(rec), str(other(rec))])),
        ("A damaged", 1, lambda rec, tmp, mp: code_of(["compare", str(damaged(rec)), str(rec)])),
        ("B not there", 2, lambda rec, tmp, mp: code_of(["compare", str(rec), str(tmp / "none.jsonl")])),
        (
            "a file that is no recording",
            2,
            lambda rec, tmp, mp: code_of(["compare", str(rec), str(ROOT / "README.md")]),
        ),
    ],
    "query": [
        ("every recording read", 0, lambda rec, tmp, mp: code_of(["query", COUNT, str(rec)])),
        (
            "one damaged, the rest queried",
            1,
            lambda rec, tmp, mp: code_of(["query", COUNT, str(rec), str(damaged(rec))]),
        ),
        (
            "a path that is not there",
            2,
            lambda rec, tmp, mp: code_of(["query", COUNT, str(tmp / "none.jsonl")]),
        ),
        (
            "SQL that does not run",
            2,
            lambda rec, tmp, mp: code_of(["query", "select nothing from nowhere", str(rec)]),
        ),
        ("DuckDB not installed", 2, lambda rec, tmp, mp: without_duckdb(mp, rec)),
    ],
    "schema": [
        ("the turns", 0, lambda rec, tmp, mp: code_of(["schema"])),
        ("a table there is not", 2, lambda rec, tmp, mp: code_of(["schema", "nothing"])),
    ],
}


@pytest.mark.parametrize("command", list(CASES))
def test_help_states_exactly_the_codes_the_command_returns(
    command: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    recording: Path,
    tmp_path: Path,
) -> None:
    (tmp_path / "empty").mkdir()
    stated = documented(command, capsys)
    returned = {}
    for what, _expected, case in CASES[command]:
        with monkeypatch.context() as mp:
            returned[what] = case(recording, tmp_path, mp)
        capsys.readouterr()
    assert returned == {what: expected for what, expected, _ in CASES[command]}
    assert stated == {expected for _, expected, _ in CASES[command]}


def test_the_readme_is_bad_input_to_audit_and_named(capsys: pytest.CaptureFixture[str]) -> None:
    assert code_of(["audit", str(ROOT / "README.md")]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(
        f"loopnb audit: error: {ROOT / 'README.md'}: not a recording loopnb knows. loopnb reads"
    )
    assert "pydantic-ai" in err and "otlp" in err  # every format it reads is named


def test_a_file_that_is_no_recording_is_named_and_the_others_audited(
    capsys: pytest.CaptureFixture[str], recording: Path
) -> None:
    assert code_of(["audit", str(recording), str(damaged(recording)), str(ROOT / "README.md")]) == 2
    out, err = capsys.readouterr()
    assert out.startswith(
        "loopnb audit: 3 files, 1 is not a recording loopnb reads and 1 could not be read (named above)\n"
    )
    assert "\nSummary\n" in out
    assert len(err.splitlines()) == 2
