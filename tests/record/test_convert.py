"""``Recording.save``: a loaded recording saved in either format, redacted, atomically; and
``loopnb convert SRC DST`` on the command line."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest

from loopnb import load
from loopnb.cli import main
from loopnb.record import Recorder, RecordingError
from loopnb.record._schema import TURN_COLUMNS
from tests.record.conftest import hard_run, recorded, typo_run
from tests.record.test_redact_formats import FAKE, assert_no_secret, leaky_run
from tests.record.test_secrets_corpus import parquet_text

GOLDEN = Path(__file__).resolve().parents[1] / "golden"


def same(a, b) -> None:
    pd.testing.assert_frame_equal(a.turns, b.turns)
    pd.testing.assert_frame_equal(a.events, b.events)
    assert a.event_objects == b.event_objects
    assert a.run_ids == b.run_ids


def test_json_lines_to_parquet_and_back_keeps_every_turn_and_event(tmp_path):
    source = load(recorded(typo_run(), hard_run()).save(tmp_path / "a.jsonl"))
    parquet = load(source.save(tmp_path / "b.parquet"))
    same(parquet, source)
    back = load(parquet.save(tmp_path / "c.jsonl"))
    same(back, source)
    assert back.meta["created_at"] == source.meta["created_at"]  # when it was recorded, kept
    assert back.meta["version"] == 2


def test_a_version_1_recording_and_a_first_layout_parquet_are_saved_in_todays_format(tmp_path):
    v1 = load(GOLDEN / "v1" / "ok_soft_then_ok.jsonl")
    saved = v1.save(tmp_path / "v2.jsonl")
    assert json.loads(saved.read_text(encoding="utf-8").partition("\n")[0])["version"] == 2
    same(load(saved), v1)
    first = load(GOLDEN / "parquet-v1-layout" / "hard_tool_recovery_exhausted.parquet")
    import pyarrow.parquet as pq

    converted = first.save(tmp_path / "now.parquet")
    assert pq.read_schema(converted).names == list(TURN_COLUMNS)
    same(load(converted), first)


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_a_saved_recording_is_redacted_whatever_its_source_held(tmp_path, suffix):
    raw = Recorder(tmp_path / "raw.jsonl", redact=None)
    for e in leaky_run().events:
        raw(e)
    raw.close()
    assert FAKE["openai"].encode() in (tmp_path / "raw.jsonl").read_bytes()  # the user opted out
    path = load(tmp_path / "raw.jsonl").save(tmp_path / f"shared{suffix}")
    loaded = load(path)
    assert loaded.meta["redacted"] is True
    assert_no_secret(path.read_bytes() if suffix == ".jsonl" else parquet_text(path), str(path))
    assert_no_secret("\n".join(repr(e) for e in loaded.event_objects), f"events of {path.name}")
    assert_no_secret(loaded.turns.to_json(date_format="iso"), f"turns of {path.name}")


def test_saving_under_another_suffix_is_refused(tmp_path):
    rec = load(recorded(typo_run()).save(tmp_path / "a.jsonl"))
    with pytest.raises(ValueError, match=r"cannot save a recording as 'a\.csv': use a \.jsonl or \.parquet"):
        rec.save(tmp_path / "a.csv")
    assert not (tmp_path / "a.csv").exists()


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_a_failed_save_leaves_the_old_file_whole(tmp_path, monkeypatch, suffix):
    rec = load(recorded(typo_run()).save(tmp_path / "a.jsonl"))
    target = tmp_path / f"b{suffix}"
    target.write_bytes(b"the old file")

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(RecordingError, match=rf"b\{suffix}: cannot write: No space left on device"):
        rec.save(target)
    monkeypatch.undo()
    assert target.read_bytes() == b"the old file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", f"b{suffix}"]


def test_a_save_onto_a_file_a_live_recorder_streams_to_is_refused(tmp_path):
    live = Recorder(tmp_path / "live.jsonl")
    for e in typo_run("live").events:
        live(e)
    rec = load(recorded(typo_run("other")).save(tmp_path / "other.jsonl"))
    with pytest.raises(RecordingError, match=r"live\.jsonl: cannot replace it: a live Recorder"):
        rec.save(tmp_path / "live.jsonl")
    live.close()
    assert load(tmp_path / "live.jsonl").run_ids == ["live"]


# -- loopnb convert -------------------------------------------------------------------------------


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_convert_writes_the_other_format_and_says_what(capsys, tmp_path):
    src = recorded(typo_run(), hard_run()).save(tmp_path / "a.jsonl")
    code, out, err = run(capsys, "convert", str(src), str(tmp_path / "a.parquet"))
    assert (code, err) == (0, "")
    n_events = len(load(src).events)
    wrote = f"wrote {tmp_path / 'a.parquet'} (2 runs, 6 turns, {n_events} events, redacted)"
    assert out == f"loopnb convert: {wrote}\n"
    same(load(tmp_path / "a.parquet"), load(src))


def test_convert_with_a_bad_suffix_is_a_usage_error(capsys, tmp_path):
    src = recorded(typo_run()).save(tmp_path / "a.jsonl")
    code, out, err = run(capsys, "convert", str(src), str(tmp_path / "a.csv"))
    assert (code, out) == (2, "")
    assert "give DST a .jsonl or .parquet suffix" in err
    assert not (tmp_path / "a.csv").exists()


def test_convert_of_a_missing_or_damaged_recording_names_it(capsys, tmp_path):
    code, out, err = run(capsys, "convert", str(tmp_path / "none.jsonl"), str(tmp_path / "b.parquet"))
    assert (code, out, err) == (2, "", f"loopnb convert: error: {tmp_path / 'none.jsonl'}: no such file\n")
    damaged = tmp_path / "d.jsonl"
    lines = recorded(typo_run()).save(tmp_path / "a.jsonl").read_text(encoding="utf-8").splitlines()
    damaged.write_text("\n".join([*lines, *lines[1:]]) + "\n", encoding="utf-8")
    code, out, err = run(capsys, "convert", str(damaged), str(tmp_path / "b.parquet"))
    assert (code, out) == (1, "")
    assert err.startswith(f"loopnb convert: error: {damaged}, line {len(lines) + 1}: seq 0 of run")
    assert not (tmp_path / "b.parquet").exists()


def test_convert_never_replaces_a_file_that_is_not_a_recording(capsys, tmp_path):
    src = recorded(typo_run()).save(tmp_path / "a.jsonl")
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"my": "notes"}\n', encoding="utf-8")
    code, _, err = run(capsys, "convert", str(src), str(notes))
    assert code == 1
    refused = "exists and is not a loopnb recording: it is never replaced; move it or choose another name"
    assert err == f"loopnb convert: error: {notes}: {refused}\n"
    assert notes.read_text(encoding="utf-8") == '{"my": "notes"}\n'
    old = recorded(hard_run()).save(tmp_path / "old.parquet")
    assert run(capsys, "convert", str(src), str(old))[0] == 0  # a recording is replaced
    assert load(old).run_ids == ["r1"]


def test_convert_help_states_the_exit_codes(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["convert", "--help"])
    assert exit_info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "Exit code: 0 when everything named was read and done, 1 when a recording could not" in text
