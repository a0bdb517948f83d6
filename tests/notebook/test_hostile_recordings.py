"""Recordings that load (every event fits the schema) but that no engine wrote: the view and the
report show them rather than crash."""

from __future__ import annotations

import dataclasses

import pytest

from loopnb.notebook.render import T_OK
from loopnb.notebook.replay import replay
from loopnb.notebook.report import report_html
from loopnb.notebook.viewmodel import ViewModel
from loopnb.record import Recorder, load
from loopnb.record.synthetic import Call, RunBuilder


def saved(events, tmp_path):
    recorder = Recorder()
    for event in events:
        recorder(event)
    return load(recorder.save(tmp_path / "sent.jsonl"))


@pytest.mark.parametrize("value", [5, "read_file", {"read_file": 1}, [1, None, "read_file"], None])
def test_free_form_settings_name_only_the_breakers_they_list(tmp_path, value):
    b = RunBuilder("r1")
    b.tool_turn(Call("read_file", content="x"))
    b.final("done")
    started = dataclasses.replace(b.events[0], settings={"tool_breakers": value})
    recording = saved([started, *b.events[1:]], tmp_path)
    names = [v.name for v in ViewModel.fold(recording.event_objects).breakers if v.scope == "tool"]
    assert names == (["read_file"] if isinstance(value, list) else [])
    assert replay(recording).state.breakers == ViewModel.fold(recording.event_objects).breakers
    assert "breaker board" in report_html(recording)


def test_turn_numbers_past_int32_are_drawn(tmp_path):
    b = RunBuilder("r1")
    for _ in range(70):  # long enough for the timeline to go to plotly as numpy arrays
        b.tool_turn(Call("read_file", content="x"))
    b.final("done")
    far = 2**40
    events = [
        dataclasses.replace(e, turn=e.turn + far) if hasattr(e, "turn") and e.kind != "run_finished" else e
        for e in b.events
    ]
    recording = saved(events, tmp_path)
    view = replay(recording)
    assert max(view.figure.data[T_OK].x) == far + 71  # every turn here is ok
    assert report_html(recording).count("Plotly.newPlot") == 1
