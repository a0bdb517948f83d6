"""What a new user trips on at the command line (issue 29, items 5 and 6): one exit scheme stated
once, a missing extra said in one line, --format, no raw bytes, no nested parentheses, the error:
prefix everywhere, and a narrow compare that still shows where two calls differ."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import loopnb
from loopnb.cli import main
from loopnb.cli._main import EXIT_CODES

COUNT = "select count(*) as n from turns"


@pytest.fixture
def runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path]:
    assert main(["demo", "mistyped_path", "--record", str(tmp_path / "a")]) == 0
    assert main(["demo", "mistyped_path", "--seed", "3", "--record", str(tmp_path / "b")]) == 0
    capsys.readouterr()
    return tmp_path / "a" / "mistyped_path.jsonl", tmp_path / "b" / "mistyped_path.jsonl"


def said(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("command", ["audit", "compare", "convert", "query"])
def test_every_reading_command_states_the_one_scheme(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert " ".join(EXIT_CODES.split()) in help_text


def test_query_without_duckdb_says_so_in_one_line(
    runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "duckdb", None)
    code, out, err = said(["query", COUNT, str(runs[0])], capsys)
    assert code == 2
    assert out == ""
    assert err == "loopnb query: error: SQL over recordings needs duckdb: pip install 'loopnb[sql]'\n"


def test_query_leaves_out_a_damaged_recording_names_it_and_queries_the_rest(
    runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    damaged = tmp_path / "damaged.jsonl"
    lines = runs[0].read_bytes().splitlines(keepends=True)
    damaged.write_bytes(b"".join([lines[0], b"{not json\n", *lines[1:]]))
    code, out, err = said(["query", COUNT, str(runs[0]), str(damaged), str(runs[1])], capsys)
    assert code == 1
    assert err.startswith(f"loopnb query: warning: left out {damaged}, line 2: ")
    both = len(loopnb.load(runs[0]).turns) + len(loopnb.load(runs[1]).turns)
    assert out.split() == ["n", str(both)]


def test_every_missing_path_is_the_same_mistake(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = str(tmp_path / "none.jsonl")
    for argv in (["audit", missing], ["compare", missing, missing], ["convert", missing, "x.parquet"],
                 ["query", COUNT, missing]):  # fmt: skip
        code, _, err = said(argv, capsys)
        assert code == 2, argv
        assert err.startswith(f"loopnb {argv[0]}: error: {missing}: no such file"), err


def test_a_suffix_convert_cannot_write_is_an_error_line(
    runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = said(["convert", str(runs[0]), "out.csv"], capsys)
    assert code == 2
    assert (
        err == "loopnb convert: error: out.csv: give DST a .jsonl or .parquet suffix (it picks the format)\n"
    )


def test_format_reads_a_file_as_that_format(
    runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    renamed = tmp_path / "run.txt"  # no suffix to tell it by; the content still says loopnb
    renamed.write_bytes(runs[0].read_bytes())
    code, out, _ = said(["audit", str(renamed), "--format", "jsonl"], capsys)
    assert code == 0 and "Summary" in out
    code, _, err = said(["audit", str(runs[0]), "--format", "otlp"], capsys)
    assert code == 1  # read as OTLP spans, a loopnb recording is damaged OTLP
    assert f"loopnb audit: error: {runs[0]}" in err
    code, _, err = said(["compare", str(runs[0]), str(runs[1]), "--format", "pydantic_ai"], capsys)
    assert code == 2
    assert err.startswith(
        "loopnb compare: error: --format pydantic_ai: no such format (did you mean pydantic-ai?)"
    )


def test_a_file_no_format_knows_is_named_without_nested_parentheses(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    odd = tmp_path / "odd.json"
    odd.write_text('{"a": 1}')
    code, _, err = said(["audit", str(odd)], capsys)
    assert code == 2
    depth = deepest = 0
    for ch in err:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        deepest = max(deepest, depth)
    assert deepest == 1, err
    assert "--format NAME" in err and "format=NAME" in err
    assert "otlp: OpenTelemetry spans" in err


def test_a_binary_file_is_named_not_dumped(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    binary = tmp_path / "blob.jsonl"
    binary.write_bytes(bytes(range(256)) * 4)
    code, _, err = said(["audit", str(binary)], capsys)
    assert code == 2
    assert "found binary data" in err
    assert "\\x" not in err and len(err) < 400


def test_a_narrow_compare_still_shows_where_the_calls_differ(
    runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = said(["compare", str(runs[0]), str(runs[1]), "--width", "80"], capsys)
    assert code == 0
    row = next(line for line in out.splitlines() if re.match(r"\s+1\s+call\s", line))
    assert len(row) <= 80
    assert "mian.rs" in row and "mani.rs" in row, row  # the two misspellings, one per side
