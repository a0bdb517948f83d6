"""``loopnb demo --fault TOOL=FAULT``: the labels' language on the command line, read, never evaluated."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopnb import load
from loopnb.cli import main


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def usage_error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(list(args))
    assert exit_info.value.code == 2
    return capsys.readouterr().err


def test_a_bare_fault_and_its_schedule(capsys) -> None:
    code, out, err = run(
        capsys, "demo", "mistyped_path", "--fault", "read_file=error.first(2)", "--width", "140"
    )
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert "injected" in lines[3]  # the table's head has the column
    assert [line.split()[3] for line in lines[4:6]] == ["error().first(2)"] * 2
    assert "injected error" in lines[4]  # what the model read: the default text
    assert ", with faults injected" in out


def test_the_label_form_and_several_faults_recorded(capsys, tmp_path: Path) -> None:
    code, out, _ = run(
        capsys,
        "demo",
        "mistyped_path",
        "hanging_tool",
        "--fault",
        'read_file=error("disk busy").first(1)',
        "--fault",
        "search_logs=hang(30).first(1)",
        "--record",
        str(tmp_path),
    )
    assert code == 0
    assert "disk busy" in out and "timed out after" in out
    first = load(tmp_path / "mistyped_path.jsonl").turns
    assert first["injected"].iloc[0] == 'error("disk busy").first(1)'
    hung = load(tmp_path / "hanging_tool.jsonl").turns
    assert hung["injected"].iloc[0] == "hang(30).first(1)" and hung["producer"].iloc[0] == "timeout"


def test_a_fault_spec_that_cannot_be_read_says_what_was_expected(capsys) -> None:
    err = usage_error(capsys, "demo", "--fault", "read_file=erorr.first(2)")
    assert err.splitlines()[-1] == (
        "loopnb demo: error: argument --fault: read_file=erorr.first(2): fault 'erorr.first(2)': unknown "
        "fault 'erorr'; expected one of error, crash, hang, wrong, empty, slow, unavailable; did you mean "
        "'error'? (at column 1)"
    )
    err = usage_error(capsys, "demo", "--fault", "error.first(2)")
    assert err.splitlines()[-1] == (
        "loopnb demo: error: argument --fault: expected TOOL=FAULT, e.g. read_file=error.first(2); "
        "got 'error.first(2)'"
    )
    err = usage_error(capsys, "demo", "--fault", "read_file=error(__import__('os').getcwd())")
    assert "expected a literal" in err.splitlines()[-1]


def test_a_tool_no_scenario_has_is_named_with_the_tools_they_have(capsys) -> None:
    code, out, err = run(capsys, "demo", "mistyped_path", "--fault", "read_fil=error()")
    assert (code, out) == (2, "")
    assert err == (
        "loopnb demo: error: --fault names 'read_fil', a tool none of these scenarios has; they have "
        "read_file; did you mean 'read_file'?\n"
    )


def test_a_tool_named_twice_is_refused(capsys) -> None:
    code, _, err = run(
        capsys, "demo", "mistyped_path", "--fault", "read_file=empty()", "--fault", "read_file=error()"
    )
    assert code == 2
    assert err == "loopnb demo: error: --fault names read_file twice (empty() and error()); give one\n"


def test_a_scenario_without_the_tool_runs_as_it_is(capsys) -> None:
    code, out, _ = run(capsys, "demo", "mistyped_path", "converging_answers", "--fault", "read_file=empty()")
    assert code == 0
    assert "empty()" in out
