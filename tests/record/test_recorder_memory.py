"""Long runs in memory (issue 30, item 3): what a recorder keeps stays out of the cyclic garbage
collector's way, its turns frame is made reading each event once, and its frames, rows and events
equal those of the events observed, whatever the stream (runs interleaved, events missing, events
of a subclass)."""

from __future__ import annotations

import gc
import sys
import tempfile
from dataclasses import fields
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopnb import (
    Engine,
    FakeClock,
    ModelReply,
    RecordingError,
    ScriptedModel,
    ToolCall,
    ToolResult,
    faults,
    inject,
    load,
    scenarios,
)
from loopnb.engine._events import EVENT_TYPES
from loopnb.record import Recorder
from loopnb.record._frames import event_table, turn_table
from loopnb.record._lines import dump_event, parse_event
from loopnb.record._rows import EVENT_LAYOUTS, turn_rows

from .conftest import context_run, hard_run, read_file, script_run, typo_run


def _alive(*classes: type) -> int:
    """How many objects of exactly these classes are alive. ``type(o)``, not ``isinstance``: the
    latter asks each object its ``__class__``, and some modules' lazy proxies (openai's module
    client) build something when asked."""
    gc.collect()
    wanted = set(classes)
    return sum(1 for o in gc.get_objects() if type(o) in wanted)


def _long_run(rec: Recorder) -> None:
    """200 turns, every other one failing (a different call each time: no loop forms)."""
    steps = [ToolCall("read_file", {"path": "src/main.rs" if i % 2 else f"src/{i}.rs"}) for i in range(199)]
    engine = Engine(ScriptedModel([*steps, "done"]), [read_file], observers=[rec], clock=FakeClock())
    engine.run("task", run_id="long")


def test_a_recorder_keeps_no_event_object_alive():
    """The recorder keeps each event's values, not the event: after the run, none of the 800
    events it observed is alive (each would be walked again at every full collection)."""
    before = _alive(*EVENT_TYPES)
    rec = Recorder()
    _long_run(rec)
    assert _alive(*EVENT_TYPES) - before == 0
    assert len(rec) == 2 + 4 * 200 + 99 and len(rec.turns) == 200
    assert rec.turns["n_errors"].sum() == 100 == len(rec.events.query("kind == 'soft_error_returned'"))


def _calls_to_build_turns(n: int) -> int:
    """The Python calls ``recorder.turns`` makes for a run of ``n`` plain turns and its answer."""
    rec = Recorder()
    for e in script_run([("ok", 0), ("tool_error", 0)] * (n // 2), None, run_id="calls").events:
        rec(e)
    calls = 0

    def count(frame: object, event: str, arg: object) -> None:
        nonlocal calls
        calls += event == "call"

    sys.setprofile(count)
    try:
        assert len(rec.turns) == n + 1
    finally:
        sys.setprofile(None)
    return calls


def test_the_turns_frame_reads_each_event_once():
    """A plain turn's row is made in one go as its events are read: a few Python calls a turn,
    where putting each turn back together and reading its 22 columns took about 40."""
    per_turn = (_calls_to_build_turns(400) - _calls_to_build_turns(200)) / 200
    assert per_turn <= 4


def _marked(event: object) -> object:
    """The same event, of a subclass of its class (which the recorder keeps as itself)."""
    cls = type(event)
    sub = _SUBCLASSES.setdefault(cls, type(f"Marked{cls.__name__}", (cls,), {}))
    return sub(**{f.name: getattr(event, f.name) for f in fields(cls) if f.name != "kind"})


_SUBCLASSES: dict[type, type] = {}


@pytest.fixture(autouse=True)
def _forget_the_subclasses():
    """The row layouts learn each subclass they meet: forget these when a test is done."""
    yield
    for sub in _SUBCLASSES.values():
        EVENT_LAYOUTS.pop(sub, None)


def _injected_run() -> list:
    rec: list = []
    tools = inject([read_file], {"read_file": faults.error("disk busy").first(2)})
    engine = Engine(ScriptedModel([ToolCall("read_file", {"path": "src/main.rs"})] * 3 + ["done"]), tools)
    engine.subscribe(rec.append)
    engine.run("task", run_id="injected")
    return rec


RUNS = [
    *(scenarios.get(name).run().events for name in scenarios.names()),
    typo_run("typo").events,
    hard_run("hard").events,
    context_run("ctx").events,
    script_run([("ok", 0), ("tool_error", 2), ("ok", 1)], "loop_detected", run_id="scripted").events,
    _injected_run(),
]


@st.composite
def streams(draw: st.DrawFn) -> list:
    """Events of a few runs, interleaved, some left out, some of a subclass."""
    chosen = draw(st.lists(st.sampled_from(range(len(RUNS))), min_size=1, max_size=4))
    queues = [list(RUNS[i]) for i in chosen]
    order = draw(st.permutations([k for k, q in enumerate(queues) for _ in q]))
    merged = [queues[k].pop(0) for k in order]
    dropped = draw(st.sets(st.integers(0, len(merged) - 1), max_size=3))
    marked = draw(st.sets(st.integers(0, len(merged) - 1), max_size=2))
    return [_marked(e) if i in marked else e for i, e in enumerate(merged) if i not in dropped]


@settings(max_examples=150, deadline=None)
@given(streams(), st.booleans())
def test_the_frames_rows_and_events_equal_those_of_the_events_observed(events, streaming):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "s.jsonl"
        rec = Recorder(path, redact=None) if streaming else Recorder()
        for e in events:
            rec(e)
        rec.close()
        pd.testing.assert_frame_equal(rec.turns, turn_table(events))
        pd.testing.assert_frame_equal(rec.events, event_table(events))
        assert rec.turn_rows() == turn_rows(events)
        # a streaming recorder's events are read back as written (an event of a subclass as its class's)
        assert rec.event_objects == ([parse_event(dump_event(e)) for e in events] if streaming else events)
        assert rec.run_ids == list(dict.fromkeys(e.run_id for e in events))
        assert len(rec) == len(events)


def test_rows_made_as_events_arrive_equal_those_made_at_once():
    """The rows are made in steps (each listener's row as its turn ends, a frame now and then) as
    they are at once; a listener's row is marked dropped only by the recorder's later rows."""
    events = [e for run in RUNS for e in run]
    rec, live = Recorder(), []
    rec.subscribe(lambda event, row: live.append(row) if row is not None else None)
    for e in events:
        rec(e)
        if e.kind == "run_finished":
            pd.testing.assert_frame_equal(rec.turns, turn_table(rec.event_objects))
    discarded = {e.run_id for e in events if e.kind == "run_finished" and e.scratchpad_discarded}
    assert "ctx" in discarded
    for row in live:
        row["dropped"] = row["dropped"] or row["run_id"] in discarded
    assert live == turn_rows(events)


def test_a_streaming_recorder_keeps_only_what_its_frames_read(tmp_path):
    """The replies and results of the turns written are in the file: the recorder keeps of them only
    what the frames read (an in-memory one keeps the run's own objects, to give the events back)."""
    before = _alive(ModelReply, ToolResult)
    streaming, memory = Recorder(tmp_path / "s.jsonl"), Recorder()
    _long_run(streaming)
    assert _alive(ModelReply, ToolResult) - before == 0
    _long_run(memory)
    assert _alive(ModelReply, ToolResult) - before == 200 + 199  # a reply a turn, a result a call
    streaming.close()
    pd.testing.assert_frame_equal(streaming.turns, memory.turns)
    pd.testing.assert_frame_equal(streaming.events, memory.events)
    assert streaming.turn_rows() == memory.turn_rows()


def test_a_streaming_recorder_reads_its_written_events_back_from_its_file(tmp_path):
    path = tmp_path / "s.jsonl"
    events = typo_run().events
    rec = Recorder(path, redact=lambda text: text.replace("mian", "MIAN"))
    for e in events:
        rec(e)
    written = load(path).event_objects
    assert rec.event_objects == written != events  # as written: redacted
    assert "src/mian.rs" in rec.turns["error_text"].iloc[0]  # the frames keep what the model read
    rec.close()
    after = hard_run("after").events
    for e in after:  # no longer streaming: kept whole, in memory
        rec(e)
    assert rec.event_objects == written + after
    saved = load(rec.save(tmp_path / "saved.jsonl"))
    assert saved.event_objects[: len(written)] == written
    assert len(saved.turns) == 6


def test_a_streamed_file_changed_under_the_recorder_is_named(tmp_path):
    path = tmp_path / "s.jsonl"
    rec = Recorder(path)
    for e in typo_run().events:
        rec(e)
    rec.close()
    path.write_bytes(path.read_bytes().replace(b"mian", b"main"))
    with pytest.raises(RecordingError, match="no longer holds the events this recorder wrote") as info:
        rec.save(tmp_path / "copy.jsonl")
    assert str(path) in str(info.value)
    assert len(rec.turns) == 3  # the frames are the recorder's own
