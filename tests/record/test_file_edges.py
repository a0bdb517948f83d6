"""Files a user meets in the wild: appending to odd files, saving to odd places."""

from __future__ import annotations

import json
import os
import threading

import pytest

from loopnb import load
from loopnb.record import Recorder, RecordingError, RecordingWarning
from loopnb.record._jsonl import VERSION
from loopnb.record._lines import dump_event

from .conftest import typo_run

HEADER = {"format": "loopnb.recording", "version": VERSION}


def _append_run(path, run_id="a1"):
    with Recorder(path) as rec:
        for e in typo_run(run_id).events:
            rec(e)


def _lines(run_id="r1"):
    return [dump_event(e).encode() for e in typo_run(run_id).events]


# -- appending -----------------------------------------------------------------------------------


def test_appending_keeps_a_whole_last_line_that_lacks_only_its_newline(tmp_path, recwarn):
    path = tmp_path / "a.jsonl"
    path.write_bytes(json.dumps(HEADER).encode() + b"\n" + b"\n".join(_lines()))
    assert len(load(path).turns) == 3  # the reader keeps the last line...
    _append_run(path)
    loaded = load(path)  # ...and so does the writer
    assert loaded.run_ids == ["r1", "a1"] and len(loaded.turns) == 6
    assert not recwarn.list


def test_appending_to_a_header_without_its_newline(tmp_path):
    path = tmp_path / "h.jsonl"
    path.write_bytes(json.dumps(HEADER).encode())
    _append_run(path)
    assert load(path).run_ids == ["a1"]


@pytest.mark.parametrize("tail", [b"\n", b"\n\n", b"\n \r\n\t\n", b"\n\n  "])
def test_blank_lines_at_the_end_are_ignored_and_trimmed_before_appending(tmp_path, recwarn, tail):
    path = tmp_path / "b.jsonl"
    path.write_bytes(json.dumps(HEADER).encode() + b"\n" + b"\n".join(_lines()) + tail)
    assert len(load(path).turns) == 3
    _append_run(path)
    loaded = load(path)
    assert loaded.run_ids == ["r1", "a1"] and len(loaded.turns) == 6
    assert b"\n\n" not in path.read_bytes()
    assert not recwarn.list


def test_a_blank_line_before_the_last_event_is_still_damage(tmp_path):
    lines = _lines()
    path = tmp_path / "m.jsonl"
    path.write_bytes(b"\n".join([json.dumps(HEADER).encode(), *lines[:-1], b"", lines[-1]]) + b"\n")
    with pytest.raises(RecordingError, match=rf"line {len(lines) + 1}: empty line"):
        load(path)


@pytest.mark.parametrize("version", [True, 1.0, "1", None])
def test_a_header_version_must_be_the_integer(tmp_path, version):
    path = tmp_path / "v.jsonl"
    path.write_bytes(json.dumps({**HEADER, "version": version}).encode() + b"\n")
    with pytest.raises(RecordingError, match=rf"line 1: format version {version!r} is not supported"):
        load(path)
    with pytest.raises(RecordingError, match="is not supported"):
        Recorder(path)


def test_a_recorder_on_a_folder_is_a_recording_error(tmp_path):
    (tmp_path / "d.jsonl").mkdir()
    with pytest.raises(RecordingError, match=r"d\.jsonl: cannot append to it: Is a directory"):
        Recorder(tmp_path / "d.jsonl")


def test_a_recorder_that_cannot_open_its_file_says_so(tmp_path, monkeypatch):
    from loopnb.record import _jsonl as jsonl

    def refuse(path):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(jsonl, "_open_append", refuse)
    with pytest.raises(RecordingError, match=r"x\.jsonl: cannot append to it: Permission denied"):
        Recorder(tmp_path / "x.jsonl")


def test_writers_that_create_one_file_at_once_write_one_header(tmp_path):
    path = tmp_path / "race.jsonl"
    barrier = threading.Barrier(4)
    recorders = []

    def start():
        barrier.wait()
        recorders.append(Recorder(path))

    threads = [threading.Thread(target=start) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, rec in enumerate(recorders):
        for e in typo_run(f"w{i}").events:
            rec(e)
        rec.close()
    assert path.read_text().count('"format"') == 1
    assert sorted(load(path).run_ids) == ["w0", "w1", "w2", "w3"]


def test_a_recorder_refuses_to_stream_into_a_parquet_name(tmp_path):
    with pytest.raises(ValueError, match=r"streams JSON Lines, not Parquet.*'r\.parquet'"):
        Recorder(tmp_path / "r.parquet")
    assert not (tmp_path / "r.parquet").exists()


# -- saving --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["d.jsonl", "d.parquet"])
def test_saving_onto_a_folder_is_a_recording_error_and_leaves_nothing(recorder, tmp_path, name):
    (tmp_path / name).mkdir()
    with pytest.raises(RecordingError, match="it is a folder"):
        recorder.save(tmp_path / name)
    assert [p.name for p in tmp_path.iterdir()] == [name]


@pytest.mark.parametrize("name", ["x.jsonl", "x.parquet"])
def test_a_failed_save_leaves_the_old_file_and_no_temporary_file(recorder, tmp_path, monkeypatch, name):
    path = tmp_path / name
    path.write_bytes(b"the old file")

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(RecordingError, match=rf"{name}: cannot write: No space left on device"):
        recorder.save(path)
    assert path.read_bytes() == b"the old file"
    assert [p.name for p in tmp_path.iterdir()] == [name]


def test_saving_into_a_folder_that_cannot_be_written(recorder, tmp_path, monkeypatch):
    real_open = os.open

    def denied(path, flags, *args, **kwargs):
        if flags & os.O_EXCL:
            raise PermissionError(13, "Permission denied")
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", denied)
    with pytest.raises(RecordingError, match=r"x\.jsonl: cannot write: Permission denied"):
        recorder.save(tmp_path / "x.jsonl")


@pytest.mark.parametrize("name", ["x.jsonl", "x.parquet"])
def test_a_saved_recording_has_the_permissions_of_any_new_file(recorder, tmp_path, name):
    old = os.umask(0o022)
    try:
        recorder.save(tmp_path / name)
    finally:
        os.umask(old)
    assert (tmp_path / name).stat().st_mode & 0o777 == 0o644


def test_saving_onto_the_file_being_streamed_is_refused(tmp_path):
    path = tmp_path / "s.jsonl"
    _append_run(path, "before")
    rec = Recorder(path)
    for e in typo_run("s1").events:
        rec(e)
    with pytest.raises(ValueError, match="is the file this recorder streams to"):
        rec.save(tmp_path / "." / "s.jsonl")
    for e in typo_run("s2").events:
        rec(e)
    rec.close()
    assert load(path).run_ids == ["before", "s1", "s2"]
    rec.save(path)  # closed: the recorder no longer writes there, so a save may replace it
    assert load(path).run_ids == ["s1", "s2"]


# -- values that parse but fit no column ---------------------------------------------------------


def _tampered(tmp_path, index, field, value):
    lines = _lines()
    event = json.loads(lines[index])
    shift = value - event[field] if field == "seq" else 0
    event[field] = value
    lines[index] = json.dumps(event).encode()
    for later in range(index + 1, len(lines)):  # a run's seqs only grow: the later ones move up too
        if shift:
            moved = json.loads(lines[later])
            moved["seq"] += shift
            lines[later] = json.dumps(moved).encode()
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"\n".join([json.dumps(HEADER).encode(), *lines]) + b"\n")
    return path


@pytest.mark.parametrize(
    ("kind", "field", "value", "table"),
    [
        ("turn_finished", "seq", 10**30, "events"),
        ("turn_finished", "seq", 2**63, "turns"),
        ("turn_finished", "at", 1e300, "events"),
        ("turn_started", "at", -1e20, "turns"),  # a turn's start time is its turn_started's
        ("turn_finished", "at", 253_402_300_800.0, "events"),
    ],
)
@pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")
def test_a_value_no_column_can_hold_is_an_error_naming_the_line(tmp_path, kind, field, value, table):
    index = next(i for i, line in enumerate(_lines()) if f'"{kind}"'.encode() in line)
    recording = load(_tampered(tmp_path, index, field, value))
    with pytest.raises(
        RecordingError, match=rf"t\.jsonl, line {index + 2}: a value of this event does not fit"
    ):
        getattr(recording, table)
    assert len(recording.event_objects) == len(_lines())  # the events themselves are kept


def test_a_nan_time_is_an_error_naming_the_line(tmp_path):
    lines = _lines()
    lines[2] = lines[2].replace(b'"at":', b'"at":NaN,"was":')
    path = tmp_path / "n.jsonl"
    path.write_bytes(b"\n".join([json.dumps(HEADER).encode(), *lines]) + b"\n")
    with pytest.raises(RecordingError, match=r"line 4: .*NaN"):
        _ = load(path).events


def test_times_past_the_year_9999_raise_instead_of_wrapping_around():
    from datetime import UTC, datetime

    from loopnb.record._frames import time_column

    with pytest.raises((ValueError, OverflowError)):
        time_column([0.0, 1e300])
    with pytest.raises((ValueError, OverflowError)):
        time_column([253_402_300_800.0])
    edge = time_column([-62_135_596_800.0, 253_402_300_799.0])
    assert list(edge) == [datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)]


# -- load_many -----------------------------------------------------------------------------------


def test_load_many_of_a_folder_skips_folders_named_like_recordings(recorder, tmp_path):
    from loopnb import load_many

    recorder.save(tmp_path / "a.jsonl")
    (tmp_path / "old.jsonl").mkdir()
    (tmp_path / "notes.txt").write_text("not a recording")
    assert load_many(tmp_path).source.unique().tolist() == [str(tmp_path / "a.jsonl")]


def test_load_many_takes_a_name_with_brackets_literally(recorder, tmp_path):
    from loopnb import load_many

    path = recorder.save(tmp_path / "run[1].jsonl")
    assert len(load_many(str(path))) == 6


def test_load_many_raises_on_a_damaged_recording_or_skips_it_when_asked(recorder, tmp_path):
    from loopnb import load_many

    recorder.save(tmp_path / "a.jsonl")
    header = (tmp_path / "a.jsonl").read_bytes().partition(b"\n")[0]
    (tmp_path / "b.jsonl").write_bytes(header + b'\n{"kind": "nothing"}\n{"kind": "nothing"}\n')
    with pytest.raises(RecordingError, match=r"b\.jsonl, line 2"):
        load_many(tmp_path)
    with pytest.warns(RecordingWarning, match=r"skipped, not loaded: .*b\.jsonl, line 2") as caught:
        frame = load_many(tmp_path, errors="skip")
    assert len(caught) == 1
    assert frame.source.unique().tolist() == [str(tmp_path / "a.jsonl")]
    assert len(frame) == len(load_many(tmp_path / "a.jsonl"))
    with pytest.raises(ValueError, match="errors must be 'raise' or 'skip'"):
        load_many(tmp_path, errors="ignore")


def test_load_many_warns_of_a_run_it_meets_in_two_files(recorder, tmp_path):
    from loopnb import load_many

    recorder.save(tmp_path / "a.jsonl")
    recorder.save(tmp_path / "a.parquet")
    with pytest.warns(
        RecordingWarning, match=r"a\.parquet: run r1, r2 also in .*a\.jsonl; both copies"
    ) as caught:
        frame = load_many(tmp_path)
    assert len(caught) == 1
    assert frame.groupby("source").size().tolist() == [6, 6]  # both copies kept, told apart by source


def test_load_many_is_quiet_about_distinct_runs(recorder, tmp_path, recwarn):
    from loopnb import load_many

    recorder.save(tmp_path / "a.jsonl")
    _append_run(tmp_path / "b.jsonl", "other")
    assert load_many(tmp_path).run_id.unique().tolist() == ["r1", "r2", "other"]
    assert not recwarn.list
