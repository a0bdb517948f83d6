"""``loopnb demo --fault``: the label mini-language on the command line, parsed, never evaluated."""

from __future__ import annotations

import json

import pytest

from loopnb.cli import main


def said(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_a_fault_shows_injected_in_the_table_and_the_recording(tmp_path, capsys):
    code, out, err = said(
        [
            "demo",
            "mistyped_path",
            "--fault",
            'read_file=error("disk busy").first(2)',
            "--record",
            str(tmp_path),
        ],
        capsys,
    )
    assert code == 0, err
    injected = [
        line for line in out.splitlines() if '[injected error("disk busy").first(2)] disk busy' in line
    ]
    assert len(injected) == 2
    assert 'with faults injected: read_file=error("disk busy").first(2)' in out
    rows = [json.loads(line) for line in (tmp_path / "mistyped_path.jsonl").read_text().splitlines()]
    labels = [r.get("injected") for r in rows if r.get("kind") == "tool_dispatched"]
    assert labels[:2] == ['error("disk busy").first(2)'] * 2 and labels[2] is None


def test_the_bare_kind_takes_its_default_text(capsys):
    code, out, _ = said(["demo", "mistyped_path", "--fault", "read_file=error.first(1)"], capsys)
    assert code == 0
    assert "[injected error(" in out and ").first(1)]" in out


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("read_file", "expected TOOL=FAULT"),
        ("read_file=eror.first(2)", "no fault is called 'eror'"),
        ("read_file=error(__import__('os'))", "is not a literal"),
        ("read_fil=error", "has no tool named 'read_fil' (did you mean read_file?)"),
        ("read_file=error.first(0)", "a whole number >= 1"),
    ],
)
def test_a_bad_fault_is_one_clear_usage_error(spec, words, capsys):
    code, out, err = said(["demo", "mistyped_path", "--fault", spec], capsys)
    assert code == 2 and out == ""
    assert err.startswith("loopnb demo: ") and words in err and len(err.splitlines()) == 1
