"""Files: JSON Lines and Parquet round trips, streaming, damaged files, load_many."""

from __future__ import annotations

import json
import pathlib
import re
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopnb import (
    Engine,
    FakeClock,
    FunctionModel,
    ScriptedModel,
    Skip,
    ToolCall,
    ToolError,
    load,
    load_many,
    scenarios,
    tool,
)
from loopnb.cli._write import write_recordings
from loopnb.record import Recorder, RecordingError, RecordingWarning
from loopnb.record import _jsonl as jsonl
from loopnb.record._jsonl import VERSION
from loopnb.scenarios import names as scenario_names

from .conftest import engine_typo, hard_run, reply, run_engine, typo_run


def test_jsonl_and_parquet_round_trips_are_exact(recorder, tmp_path):
    recorder.save(tmp_path / "r.jsonl")
    recorder.save(tmp_path / "r.parquet")
    j, p = load(tmp_path / "r.jsonl"), load(tmp_path / "r.parquet")
    for loaded in (j, p):
        pd.testing.assert_frame_equal(loaded.turns, recorder.turns)
        pd.testing.assert_frame_equal(loaded.events, recorder.events)
        assert loaded.event_objects == recorder.event_objects
    assert j.meta["run_ids"] == p.meta["run_ids"] == ["r1", "r2"]
    assert j.meta["n_turns"] == p.meta["n_turns"] == 6
    assert j.meta["format"] == "loopnb.recording" and j.meta["version"] == VERSION == 2
    assert "loopnb_version" in p.meta and "created_at" in p.meta


def test_engine_run_round_trips(tmp_path):
    rec = Recorder(tmp_path / "stream.jsonl")
    engine_typo(rec).run("What does src/main.rs do?")
    rec.save(tmp_path / "saved.parquet")
    streamed = load(tmp_path / "stream.jsonl")
    pd.testing.assert_frame_equal(streamed.turns, rec.turns)
    pd.testing.assert_frame_equal(load(tmp_path / "saved.parquet").turns, streamed.turns)
    assert streamed.event_objects == rec.event_objects


def test_streaming_flushes_when_a_turn_ends(tmp_path):
    path = tmp_path / "live.jsonl"
    rec = Recorder(path)
    events = typo_run().events
    finished = [i for i, e in enumerate(events) if e.kind == "turn_finished"]
    for e in events[: finished[0] + 1]:
        rec(e)
    # readable by another reader while the writer is still open
    assert len(load(path).turns) == 1
    for e in events[finished[0] + 1 :]:
        rec(e)
    assert len(load(path).turns) == 3
    rec.close()


def test_the_streamed_file_holds_every_event_once_in_order_and_byte_for_byte(tmp_path):
    from loopnb.record._lines import dump_event

    path = tmp_path / "s.jsonl"
    events = typo_run().events + hard_run().events
    with Recorder(path, redact=None) as rec:
        for i, e in enumerate(events):
            rec(e)
            lines = path.read_text().count("\n")
            if e.kind in ("turn_finished", "run_finished"):
                assert lines == 1 + (i + 1)  # the header and every event so far
            else:
                assert lines < 1 + (i + 1)  # a turn's events wait for its end
    lines = path.read_text().splitlines()
    assert lines[1:] == [dump_event(e) for e in events]


def test_close_writes_the_events_of_an_unfinished_turn(tmp_path):
    path = tmp_path / "u.jsonl"
    events = typo_run().events
    rec = Recorder(path)
    for e in events[:-3]:  # stops inside the last turn
        rec(e)
    written = len(path.read_text().splitlines())
    rec.close()
    assert len(path.read_text().splitlines()) == 1 + len(events) - 3 > written
    rec(events[-3])  # after close: kept in memory only
    assert len(path.read_text().splitlines()) == 1 + len(events) - 3
    assert len(rec) == len(events) - 2


def test_a_refused_batch_stops_the_stream_and_recording_goes_on_in_memory(tmp_path):
    calls = []

    def breaking(text):
        calls.append(text)
        return text.replace("It prints nothing.", 'It "prints')

    path = tmp_path / "b.jsonl"
    rec = Recorder(path, redact=breaking)
    events = typo_run().events
    with pytest.warns(
        RecordingWarning, match=r"b\.jsonl: streaming stopped, this turn could not be written .*invalid JSON"
    ):
        for e in events:
            rec(e)
    assert len(rec.event_objects) == len(events)  # nothing lost in memory
    assert len(rec.turns) == 3
    rec.close()
    assert len(load(path).turns) == 2  # the file keeps the turns before, whole
    assert sum("It prints nothing." in c for c in calls) == 1  # not offered again
    with pytest.raises(RecordingError, match="invalid JSON"):
        rec.save(tmp_path / "all.jsonl")  # the hook still breaks it: said, not written
    assert not (tmp_path / "all.jsonl").exists()


def test_a_full_disk_stops_the_stream_and_save_writes_it_all_later(tmp_path, monkeypatch):
    path = tmp_path / "d.jsonl"
    rec = Recorder(path)
    events = typo_run().events
    real_put = jsonl.JsonlWriter._put
    turns_written = []

    def filling(self, file, data):
        if turns_written:
            raise OSError(28, "No space left on device")
        turns_written.append(data)
        real_put(self, file, data)

    monkeypatch.setattr(jsonl.JsonlWriter, "_put", filling)
    with pytest.warns(RecordingWarning, match="No space left on device"):
        for e in events:
            rec(e)
    monkeypatch.setattr(jsonl.JsonlWriter, "_put", real_put)
    assert len(load(path).turns) == 1
    rec.save(tmp_path / "later.jsonl")
    assert len(load(tmp_path / "later.jsonl").turns) == 3


def test_appending_to_an_existing_recording(tmp_path):
    path = tmp_path / "a.jsonl"
    with Recorder(path) as rec:
        for e in typo_run("r1").events:
            rec(e)
    with Recorder(path) as rec:
        for e in typo_run("r2").events:
            rec(e)
    text = path.read_text().splitlines()
    assert sum(1 for line in text if '"format"' in line) == 1
    assert load(path).run_ids == ["r1", "r2"]


def test_appending_cuts_a_torn_tail_first(tmp_path):
    path = tmp_path / "a.jsonl"
    with Recorder(path) as rec:
        for e in typo_run("r1").events:
            rec(e)
    with path.open("ab") as f:
        f.write(b'{"seq": 99, "run_id": "r1", "at"')
    with pytest.warns(RecordingWarning, match="torn last line"), Recorder(path) as rec:
        for e in typo_run("r2").events:
            rec(e)
    assert load(path).run_ids == ["r1", "r2"]


def _write(path, header, *lines, end=b"\n"):
    data = json.dumps(header).encode() + b"\n" + b"\n".join(lines)
    path.write_bytes(data + end if lines else data)
    return path


def _good_lines():
    from loopnb.record._lines import dump_event

    return [dump_event(e).encode() for e in typo_run().events]


HEADER = {"format": "loopnb.recording", "version": VERSION}


def test_torn_last_line_loads_with_a_warning_naming_path_and_line(tmp_path):
    lines = _good_lines()
    path = _write(tmp_path / "t.jsonl", HEADER, *lines[:-1], lines[-1][:20], end=b"")
    with pytest.warns(RecordingWarning, match=rf"t\.jsonl, line {len(lines) + 1}: torn"):
        rec = load(path)
    assert len(rec.event_objects) == len(lines) - 1
    assert len(rec.turns) == 3


def test_a_complete_last_line_without_newline_is_kept(tmp_path):
    path = _write(tmp_path / "t.jsonl", HEADER, *_good_lines(), end=b"")
    assert len(load(path).event_objects) == len(_good_lines())


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda lines: lines.__setitem__(3, b"{not json"), "line 5: not valid JSON"),
        (lambda lines: lines.__setitem__(3, b'{"kind": "alien", "seq": 1}'), "line 5: not a valid"),
        (lambda lines: lines.__setitem__(3, b'{"kind": "turn_started"}'), "line 5: not a valid"),
        (lambda lines: lines.__setitem__(3, b""), "line 5: empty line"),
        (lambda lines: lines.__setitem__(3, b"[1, 2]"), "line 5: not a valid"),
    ],
)
def test_a_damaged_line_inside_raises_naming_path_and_line(tmp_path, mutate, message):
    lines = _good_lines()
    mutate(lines)
    path = _write(tmp_path / "bad.jsonl", HEADER, *lines)
    with pytest.raises(RecordingError, match=rf"bad\.jsonl, {message}") as info:
        load(path)
    assert info.value.line == 5 and info.value.path.endswith("bad.jsonl")


@pytest.mark.parametrize("damaged", [0, 2, 3, 4, 6])
def test_a_damaged_line_is_named_wherever_it_is(tmp_path, damaged):
    from loopnb.record._lines import dump_event

    lines = _good_lines()
    assert len(lines) >= 7
    lines = lines[:7]
    good = _write(tmp_path / "good.jsonl", HEADER, *lines)
    assert [dump_event(e) for e in load(good).event_objects] == [line.decode() for line in lines]
    assert jsonl.parse_events([line.decode() for line in lines]) == load(good).event_objects
    lines[damaged] = re.sub(rb'"seq":\d+', b'"seq":"first"', lines[damaged])
    path = _write(tmp_path / "bad.jsonl", HEADER, *lines)
    with pytest.raises(RecordingError, match=rf"bad\.jsonl, line {damaged + 2}: not a valid event"):
        load(path)
    with pytest.raises(ValueError, match="seq"):
        jsonl.parse_events(lines)


def test_a_garbled_last_line_with_its_newline_is_an_error_not_a_tear(tmp_path):
    lines = _good_lines()
    path = _write(tmp_path / "g.jsonl", HEADER, *lines[:-1], b"{garbage")
    with pytest.raises(RecordingError, match=f"line {len(lines) + 1}: not valid JSON"):
        load(path)


def test_unknown_version_is_a_clear_error(tmp_path):
    path = _write(tmp_path / "v.jsonl", {**HEADER, "version": 99}, *_good_lines())
    with pytest.raises(RecordingError, match=r"format version 99 is not supported.*reads version 1"):
        load(path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty file"),
        (b"\n\n", "empty file"),
        (b'{"hello": 1}\n', "line 1: not a loopnb recording"),
        (b"PK\x03\x04garbage", "line 1: not a loopnb recording"),
    ],
)
def test_empty_or_foreign_files(tmp_path, content, message):
    path = tmp_path / "x.jsonl"
    path.write_bytes(content)
    with pytest.raises(RecordingError, match=message):
        load(path)


def test_missing_file(tmp_path):
    for name in ("nope.jsonl", "nope.parquet", "nope.log"):
        with pytest.raises(RecordingError, match="no such file"):
            load(tmp_path / name)


def test_a_parquet_file_that_is_not_a_recording(tmp_path):
    pd.DataFrame({"a": [1]}).to_parquet(tmp_path / "plain.parquet")
    with pytest.raises(RecordingError, match="not a loopnb recording"):
        load(tmp_path / "plain.parquet")
    (tmp_path / "junk.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(RecordingError, match="not a readable Parquet file"):
        load(tmp_path / "junk.parquet")


def test_loading_never_executes_anything(tmp_path):
    # a pickle-looking payload and a python expression are just invalid lines
    lines = _good_lines()
    lines[2] = b"cos\nsystem\n(S'echo hacked'\ntR."
    path = _write(tmp_path / "p.jsonl", HEADER, *lines)
    with pytest.raises(RecordingError):
        load(path)
    lines = _good_lines()
    lines[2] = b'__import__("os").system("echo hacked")'
    with pytest.raises(RecordingError, match="not valid JSON"):
        load(_write(tmp_path / "e.jsonl", HEADER, *lines))


def test_save_rejects_other_suffixes(recorder, tmp_path):
    with pytest.raises(ValueError, match=r"\.jsonl or \.parquet"):
        recorder.save(tmp_path / "r.csv")


def test_load_many_from_folder_glob_and_list(tmp_path):
    a, b = Recorder(), Recorder()
    for e in typo_run("r1").events:
        a(e)
    for e in hard_run("r2").events:
        b(e)
    a.save(tmp_path / "a.jsonl")
    b.save(tmp_path / "b.parquet")
    (tmp_path / "notes.txt").write_text("not a recording")
    for source in (tmp_path, str(tmp_path / "[ab].*"), [tmp_path / "a.jsonl", tmp_path / "b.parquet"]):
        df = load_many(source)
        assert df.columns[0] == "source"
        assert df["run_id"].tolist() == ["r1"] * 3 + ["r2"] * 3
        assert df["source"].str.endswith(("a.jsonl", "b.parquet")).all()
        assert isinstance(df["channel"].dtype, pd.CategoricalDtype)
    ev = load_many(tmp_path, table="events")
    assert len(ev) == len(typo_run().events) + len(hard_run().events)
    with pytest.raises(RecordingError, match="no recordings found"):
        load_many(tmp_path / "*.none")


def test_write_recordings_one_file_per_run(recorder, tmp_path):
    paths = write_recordings(recorder, tmp_path / "out")
    assert [p.name for p in paths] == ["r1.jsonl", "r2.jsonl"]
    assert load(paths[1]).run_ids == ["r2"]
    pq = write_recordings(recorder, tmp_path / "pq", suffix=".parquet")
    pd.testing.assert_frame_equal(load(pq[0]).turns, load(paths[0]).turns)


def test_write_recordings_names_stay_inside_the_folder_and_distinct(tmp_path):
    rec = Recorder()
    for run_id in ("../../evil", "a/b", "a_b", ".hidden"):
        for e in typo_run(run_id).events:
            rec(e)
    paths = write_recordings(rec, tmp_path / "out")
    assert [p.name for p in paths] == ["_.._evil.jsonl", "a_b.jsonl", "a_b-2.jsonl", "hidden.jsonl"]
    assert all(p.parent == tmp_path / "out" for p in paths)
    assert [load(p).run_ids for p in paths] == [["../../evil"], ["a/b"], ["a_b"], [".hidden"]]


def test_recorder_recording_is_redacted_and_complete(recorder):
    rec = recorder.recording()
    pd.testing.assert_frame_equal(rec.turns, recorder.turns)
    assert rec.meta["redacted"] is True and rec.run_ids == ["r1", "r2"]


def test_to_html_writes_one_offline_report(recorder, tmp_path):
    path = recorder.recording().to_html(tmp_path / "r.html") or tmp_path / "r.html"
    html = pathlib.Path(path).read_text(encoding="utf-8")
    assert html.lstrip().lower().startswith("<!doctype html")
    assert not re.search(r"<script[^>]+src=[\"']?https?:", html), "scripts must be inlined, not fetched"


def test_a_short_write_is_finished_and_a_write_that_takes_nothing_raises(tmp_path, monkeypatch):
    import os

    from loopnb.record import _jsonl as jsonl

    real_write = os.write
    monkeypatch.setattr(jsonl.os, "write", lambda fd, data: real_write(fd, bytes(data[:7])))
    path = tmp_path / "short.jsonl"
    with Recorder(path) as rec:
        for e in typo_run().events:
            rec(e)
    assert load(path).event_objects == rec.event_objects
    monkeypatch.setattr(jsonl.os, "write", lambda fd, data: 0)
    with pytest.raises(RecordingError, match="took none"):
        Recorder(tmp_path / "none.jsonl")


# -- the streamed bytes are the serializers' bytes, whatever the run -----------------------------


def _streamed(path, events, redact=None):
    with Recorder(path, redact=redact) as rec:
        for e in events:
            rec(e)
    return path.read_text(encoding="utf-8").split("\n")[1:-1]


@pytest.mark.parametrize("name", scenario_names())
def test_every_scenario_streams_byte_for_byte(tmp_path, name):
    from loopnb.record import DEFAULT_REDACTOR
    from loopnb.record._lines import dump_event, redacted_lines

    events = scenarios.get(name).run().events
    assert _streamed(tmp_path / "plain.jsonl", events) == [dump_event(e) for e in events]
    # Redacted a turn at a time, the file equals the events redacted one line at a time.
    redacted = _streamed(tmp_path / "redacted.jsonl", events, redact=DEFAULT_REDACTOR)
    assert redacted == redacted_lines(events, DEFAULT_REDACTOR)


unicode_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=30)
plain_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    unicode_text,
)
nested_values = st.recursive(
    plain_values, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(unicode_text, inner, max_size=3)
)
arguments = st.dictionaries(unicode_text, nested_values, max_size=4)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.tuples(unicode_text, arguments, st.one_of(st.none(), unicode_text), st.booleans()),
        min_size=1,
        max_size=4,
    ),
    unicode_text,
    st.floats(),  # the clock's start: tiny, huge, negative zero, inf, nan...
    st.floats(min_value=0, allow_nan=False, allow_infinity=False),
)
def test_engine_runs_stream_byte_for_byte(tmp_path, turns, answer, start, step):
    """Each turn calls ``t`` (which fails with the drawn text; recovery skips it with the drawn
    note) with the drawn arguments as its payload, and an unadvertised name with odd characters
    with the arguments as they are; the reply carries the note as text and maybe huge usage."""
    from loopnb.record._lines import dump_event

    failures = iter(content for content, _, _, _ in turns)
    notes = iter(note for _, _, note, _ in turns)

    @tool
    def t(payload: Any) -> str:
        """Fails with the next drawn text."""
        raise ToolError(next(failures))

    class SkipWithNote:
        def decide(self, failure, attempt, max_attempts):
            return Skip(note=next(notes))

    clock = FakeClock(wall=start)
    steps = [
        reply(
            ToolCall("t", {"payload": args}),
            ToolCall("t\x00\x7f", args),
            text=note,
            usage=(len(content), 2**40) if usage else None,
        )
        for content, args, note, usage in turns
    ]
    script = iter([*steps, answer])

    def answer_next(messages, tools):
        clock.advance(step)
        return next(script)

    engine = Engine(FunctionModel(answer_next), [t], recovery=SkipWithNote(), loop_detector=None, clock=clock)
    run = run_engine(engine, answer, run_id='r\u2028"\\1')
    assert run.outcome.output == answer
    path = tmp_path / "h.jsonl"
    path.unlink(missing_ok=True)
    assert _streamed(path, run.events) == [dump_event(e) for e in run.events]


def test_a_lone_surrogate_is_written_as_its_escape_and_reads_back_the_same(tmp_path):
    from loopnb.record._lines import dump_event

    @tool
    def read_file(path: str) -> str:
        """Half a surrogate pair."""
        return "half a pair: \ud800"

    engine = Engine(ScriptedModel([ToolCall("read_file", {"path": "a"}), "done"]), [read_file])
    events = run_engine(engine).events
    assert events[3].kind == "tool_dispatched"
    assert '"half a pair: \\ud800"' in dump_event(events[3])
    path = tmp_path / "s.jsonl"
    rec = Recorder(path)
    for e in events:
        rec(e)
    assert load(path).event_objects == events
