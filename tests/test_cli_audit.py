"""``loopnb audit`` on bad input: every path that names nothing is named, and a recording that
cannot be read says why, with no traceback."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from loopnb.cli import main


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_audit_without_paths_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["audit"])
    assert exit_info.value.code == 2
    assert "the following arguments are required: PATH" in capsys.readouterr().err


@pytest.fixture
def recording(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> Path:
    assert main(["demo", "mistyped_path", "--record", str(tmp_path / "runs")]) == 0
    capsys.readouterr()
    return tmp_path / "runs" / "mistyped_path.jsonl"


def test_audit_names_a_pattern_that_matches_nothing(
    capsys: pytest.CaptureFixture[str], recording: Path, tmp_path: Path
) -> None:
    pattern = str(tmp_path / "nomatch*.jsonl")
    code, out, err = run(capsys, "audit", str(recording), pattern)
    assert code == 2 and out == ""
    assert err == f"loopnb audit: error: {pattern}: matches no file\n"


def test_audit_names_a_folder_without_recordings(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "audit", str(tmp_path))
    assert code == 2
    assert err == f"loopnb audit: error: {tmp_path}: no .jsonl or .parquet file in this folder\n"


def test_audit_of_parquet_without_pyarrow_says_what_to_install(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "run.parquet"
    path.write_bytes(b"PAR1")
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    code, out, err = run(capsys, "audit", str(path))
    assert code == 1 and out == ""
    assert err.startswith(f"loopnb audit: error: {path}: Parquet recordings need pyarrow")


def test_audit_prints_to_the_commands_output(capsys: pytest.CaptureFixture[str], recording: Path) -> None:
    code, out, err = run(capsys, "audit", str(recording))
    assert code == 0 and err == ""
    assert out.startswith("loopnb audit: 1 recording\n")


def test_audit_names_a_damaged_recording_and_audits_the_others(
    capsys: pytest.CaptureFixture[str], recording: Path
) -> None:
    damaged = recording.with_name("damaged.jsonl")
    lines = recording.read_bytes().splitlines(keepends=True)
    damaged.write_bytes(b"".join([lines[0], b"{not json\n", *lines[1:]]))
    code, out, err = run(capsys, "audit", str(recording.parent))
    assert code == 1
    assert err.startswith(f"loopnb audit: error: {damaged}, line 2:")
    assert out.startswith("loopnb audit: 2 recordings, 1 could not be read (named above)\n")
    assert "Soft and hard turns per producer" in out


def test_audit_of_only_damaged_recordings_prints_no_audit(
    capsys: pytest.CaptureFixture[str], recording: Path
) -> None:
    header = json.loads(recording.read_bytes().partition(b"\n")[0])
    recording.write_text(json.dumps({**header, "version": 99}) + "\n")
    code, out, err = run(capsys, "audit", str(recording))
    assert (code, out) == (1, "")
    assert "format version 99 is not supported" in err


@pytest.mark.parametrize(("table", "column"), [("turns", "error_text"), ("events", "kind")])
def test_schema_prints_the_frames_json_schema(
    capsys: pytest.CaptureFixture[str], table: str, column: str
) -> None:
    from loopnb.record import EVENT_SCHEMA, TURN_SCHEMA

    code, out, err = run(capsys, "schema", table)
    assert (code, err) == (0, "")
    printed = json.loads(out)
    assert printed == (TURN_SCHEMA if table == "turns" else EVENT_SCHEMA)
    assert printed["properties"][column]["description"]


def test_schema_prints_the_turns_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    from loopnb.record import TURN_SCHEMA

    assert json.loads(run(capsys, "schema")[1]) == TURN_SCHEMA
