"""``loopnb compare A B``: two recorded runs side by side, the exit codes, colour on a terminal only.

The recordings are two runs of the built-in ``stubborn_loop`` scenario: with the default loop
detector, and with a tighter one that refuses the repeated call at turn 2 (where they diverge).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import loopnb
from loopnb import scenarios
from loopnb._palette import PALETTE
from loopnb.cli import main
from loopnb.record import Recorder
from tests.test_cli_terminal import ANSI, on_a_pty, piped, rgb


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _stubborn(recorder: Recorder, tight: bool) -> None:
    options = {"loop_detector": loopnb.LoopDetector(warn_after=1, stop_after=2)} if tight else {}
    scenarios.get("stubborn_loop").run(observers=[recorder], **options)


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    """The default run in one file, the tight one in another."""
    paths = []
    for name, tight in (("default", False), ("tight", True)):
        rec = Recorder()
        _stubborn(rec, tight)
        paths.append(rec.save(tmp_path / f"{name}.jsonl"))
    return paths[0], paths[1]


@pytest.fixture
def both(tmp_path: Path) -> tuple[Path, list[str]]:
    """Both runs in one file, and their run ids."""
    rec = Recorder()
    _stubborn(rec, False)
    _stubborn(rec, True)
    return rec.save(tmp_path / "both.jsonl"), rec.run_ids


def test_compare_prints_totals_the_divergence_and_the_rows(
    capsys: pytest.CaptureFixture[str], pair: tuple[Path, Path]
) -> None:
    code, out, err = run(capsys, "compare", str(pair[0]), str(pair[1]), "--width", "110")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].startswith(f"loopnb compare: a = {pair[0]} (run ")
    assert re.search(r"^  turns\s+6\s+3  ≠$", out, re.M)
    assert re.search(r"^  ended\s+loop_detected\s+loop_detected$", out, re.M)
    assert "First divergence: turn 2 (a's numbering): producer differs: a tool_error, b loop_refusal" in out
    assert re.search(r"^\s+2  producer\s+t2 ▲ soft tool_error read_file", out, re.M)
    assert re.search(r"^\s+4  ended\s+t4 ▲ soft loop_refusal .*  -$", out, re.M)
    assert "Aligned turns, rows 1-5 of 6" in out and "1 more row" in out
    assert all(len(line) <= 110 for line in lines[1:]) and "\x1b" not in out  # the paths' line aside


def test_identical_runs_agree(capsys: pytest.CaptureFixture[str], pair: tuple[Path, Path]) -> None:
    code, out, _ = run(capsys, "compare", str(pair[0]), str(pair[0]), "--labels", "before", "after")
    assert code == 0
    assert "The two runs agree on every turn and end alike." in out
    assert "≠" not in out and "before = " in out and "after = " in out


def test_runs_of_one_file_are_picked_with_run(
    capsys: pytest.CaptureFixture[str], both: tuple[Path, list[str]]
) -> None:
    path, ids = both
    code, out, err = run(capsys, "compare", str(path), str(path))
    assert (code, out) == (2, "")
    assert err == (
        f"loopnb compare: A ({path}) holds 2 runs ({ids[0]}, {ids[1]}); pick one with --run RUN "
        "(once for both sides, or twice: the run of A, then the run of B)\n"
    )
    # --run=ID: a run id may begin with a dash
    code, out, err = run(capsys, "compare", str(path), str(path), f"--run={ids[0]}", f"--run={ids[1]}")
    assert (code, err) == (0, "")
    assert f"(run {ids[0]})" in out and f"(run {ids[1]})" in out and "First divergence: turn 2" in out
    code, _, err = run(capsys, "compare", str(path), str(path), "--run", "nope")
    assert code == 2 and f"has no run 'nope'; its runs are {ids[0]}, {ids[1]}" in err
    code, _, err = run(capsys, "compare", str(path), str(path), "--run", "x", "--run", "y", "--run", "z")
    assert code == 2 and "--run at most twice" in err


def test_bad_input_is_exit_2_and_an_unreadable_recording_exit_1(
    capsys: pytest.CaptureFixture[str], pair: tuple[Path, Path], tmp_path: Path
) -> None:
    missing = tmp_path / "missing.jsonl"
    code, out, err = run(capsys, "compare", str(missing), str(pair[1]))
    assert (code, out) == (2, "") and err == f"loopnb compare: error: {missing}: no such file\n"
    notes = tmp_path / "notes.txt"
    notes.write_text("just some notes\n")
    code, _, err = run(capsys, "compare", str(pair[0]), str(notes))
    assert code == 2 and err.startswith(f"loopnb compare: error: {notes}")
    header = json.loads(pair[1].read_bytes().partition(b"\n")[0])
    pair[1].write_text(json.dumps({**header, "version": 99}) + "\n")
    code, out, err = run(capsys, "compare", str(pair[0]), str(pair[1]))
    assert (code, out) == (1, "") and "format version 99 is not supported" in err


def test_html_writes_the_page(
    capsys: pytest.CaptureFixture[str], pair: tuple[Path, Path], tmp_path: Path
) -> None:
    page = tmp_path / "compare.html"
    code, out, _ = run(capsys, "compare", str(pair[0]), str(pair[1]), "--html", str(page))
    assert code == 0 and out.rstrip().endswith(f"wrote the comparison page to {page}")
    assert "first divergence" in page.read_text(encoding="utf-8")
    code, _, err = run(capsys, "compare", str(pair[0]), str(pair[1]), "--html", str(pair[0]))
    assert code == 1 and "is a loopnb recording" in err


def test_coloured_on_a_terminal_and_the_same_words_piped(pair: tuple[Path, Path]) -> None:
    args = ["compare", str(pair[0]), str(pair[1]), "--width", "100"]
    code, coloured = on_a_pty(args)
    assert code == 0
    for channel in ("soft", "hard"):  # the stubborn model never has an ok turn
        assert rgb(PALETTE[channel]) in coloured, channel
    code, plain = piped(args)
    assert code == 0 and "\x1b" not in plain
    assert ANSI.sub("", coloured) == plain
    assert on_a_pty(args, NO_COLOR="1")[1] == plain


def test_the_aligned_rows_show_a_calls_arguments_not_its_json(
    capsys: pytest.CaptureFixture[str], pair: tuple[Path, Path]
) -> None:
    code, out, _ = run(capsys, "compare", str(pair[0]), str(pair[1]), "--width", "140")
    assert code == 0
    rows = out.split("Aligned turns", 1)[1]
    assert "read_file(path=config.yaml)" in rows and '{"path"' not in rows
