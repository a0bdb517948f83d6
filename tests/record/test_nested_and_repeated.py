"""Damage no writer makes but files suffer: JSON nested past the parser's depth, and lines repeated
or reordered (a double append, a bad merge). Each is a ``RecordingError`` naming the file and line,
never a ``RecursionError`` or a recording with doubled turns."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from loopnb import Audit, load, load_many
from loopnb.record import Recorder, RecordingError, RecordingWarning
from loopnb.record._jsonl import make_header
from loopnb.record._lines import dump_event

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture
def lines() -> list[str]:
    """The lines of a version-2 recording of one run (14 events, 3 turns)."""
    rec = load(GOLDEN / "v1" / "ok_soft_then_ok.jsonl")
    return [json.dumps(make_header(redacted=True)), *(dump_event(e) for e in rec.event_objects)]


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# -- deeply nested JSON ---------------------------------------------------------------------------


def test_a_deeply_nested_header_is_a_recording_error_naming_line_1(tmp_path):
    path = write(tmp_path / "deep.jsonl", [DEEP])
    for read in (load, Recorder):
        with pytest.raises(
            RecordingError,
            match=r"deep\.jsonl, line 1: not a loopnb recording: its header line is JSON nested too deeply",
        ):
            read(path)


def test_a_deeply_nested_event_line_is_a_recording_error_naming_its_line(tmp_path, lines):
    body = [*lines[:3], '{"kind":"run_started","x":' + DEEP + "}", *lines[3:]]
    with pytest.raises(RecordingError, match=r"e\.jsonl, line 4: not valid JSON: ") as info:
        load(write(tmp_path / "e.jsonl", body))
    # the parser's own words for its depth limit follow loopnb's, whatever they are today
    (error,) = info.value.__cause__.errors()
    assert error["type"] == "json_invalid" and error["msg"] in str(info.value)


def test_a_deeply_nested_version_1_event_line_is_a_recording_error(tmp_path):
    v1 = (GOLDEN / "v1" / "ok_soft_then_ok.jsonl").read_text(encoding="utf-8").splitlines()
    path = write(tmp_path / "v1.jsonl", [*v1[:2], DEEP, *v1[2:]])
    with pytest.raises(RecordingError, match=r"v1\.jsonl, line 3: not valid JSON: JSON nested too deeply"):
        load(path)


def test_a_deeply_nested_parquet_header_is_a_recording_error(tmp_path):
    table = pq.read_table(GOLDEN / "parquet-v1-layout" / "ok_soft_then_ok.parquet")
    path = tmp_path / "deep.parquet"
    pq.write_table(table.replace_schema_metadata({"loopnb": DEEP}), path)
    with pytest.raises(RecordingError, match=r"deep\.parquet, line 1: .*nested too deeply"):
        load(path)


def test_load_many_skips_and_audit_names_a_deeply_nested_file(tmp_path, lines, capsys):
    from loopnb.cli import main

    write(tmp_path / "a.jsonl", lines)
    write(tmp_path / "b.jsonl", [DEEP])
    with pytest.warns(RecordingWarning, match=r"skipped, not loaded: .*b\.jsonl, line 1"):
        df = load_many(tmp_path, errors="skip")
    assert len(df) == 3
    assert main(["audit", str(tmp_path)]) == 2  # a file that is no recording is bad input
    out, err = capsys.readouterr()
    assert f"loopnb audit: error: {tmp_path / 'b.jsonl'}, line 1: not a loopnb recording" in err
    assert out.startswith("loopnb audit: 2 files, 1 is not a recording loopnb reads (named above)\n")


# -- repeated and reordered lines -----------------------------------------------------------------


def test_lines_appended_twice_are_a_recording_error_naming_the_first_repeat(tmp_path, lines):
    path = write(tmp_path / "dup.jsonl", lines + lines[1:])
    with pytest.raises(RecordingError) as caught:
        load(path)
    assert caught.value.line == 16 and caught.value.path == str(path)
    assert "seq 0 of run 'golden-ok_soft_then_ok' comes after its seq 13 (line 15)" in str(caught.value)
    assert "lines duplicated (a double append, a bad merge) or out of order" in str(caught.value)


def test_one_repeated_line_and_two_swapped_lines_are_named(tmp_path, lines):
    repeated = write(tmp_path / "r.jsonl", [*lines[:6], lines[5], *lines[6:]])
    with pytest.raises(RecordingError, match=r"r\.jsonl, line 7: seq 4 of run .* its seq 4 \(line 6\)"):
        load(repeated)
    swapped = write(tmp_path / "s.jsonl", [*lines[:3], lines[4], lines[3], *lines[5:]])
    with pytest.raises(RecordingError, match=r"s\.jsonl, line 5: seq 2 of run .* its seq 3 \(line 4\)"):
        load(swapped)


def test_interleaved_runs_each_in_order_load(tmp_path, lines):
    other = [line.replace("golden-ok_soft_then_ok", "other") for line in lines[1:]]
    mixed = [lines[0]] + [line for pair in zip(lines[1:], other, strict=True) for line in pair]
    rec = load(write(tmp_path / "two.jsonl", mixed))
    assert rec.run_ids == ["golden-ok_soft_then_ok", "other"]
    assert len(rec.turns) == 6


def test_a_repeated_parquet_event_line_is_named(tmp_path):
    src = GOLDEN / "parquet-v1-layout" / "ok_soft_then_ok.parquet"
    table = pq.read_table(src)
    column = table.column("event_json").to_pylist()
    last = max(i for i, v in enumerate(column) if v is not None)
    column[last] = column[last - 1]
    i = table.schema.get_field_index("event_json")
    path = tmp_path / "dup.parquet"
    pq.write_table(table.set_column(i, "event_json", pa.array(column, pa.large_string())), path)
    with pytest.raises(
        RecordingError, match=r"dup\.parquet: event 14: seq 12 of run .* its seq 12 \(event 13\)"
    ):
        _ = load(path).event_objects


def test_audit_names_the_file_with_repeated_lines_and_audits_the_others(tmp_path, lines, capsys):
    from loopnb.cli import main

    good = write(tmp_path / "good.jsonl", lines)
    dup = write(tmp_path / "dup.jsonl", lines + lines[1:])
    assert main(["audit", str(good), str(dup)]) == 1
    out, err = capsys.readouterr()
    assert err.startswith(f"loopnb audit: error: {dup}, line 16: seq 0 of run")
    assert out.startswith("loopnb audit: 2 recordings, 1 could not be read (named above)\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(Audit(load(good).turns).summary())
