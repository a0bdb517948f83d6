"""Recordings that load (every event fits the schema) but that no engine wrote: the view and the
report show them rather than crash."""

from __future__ import annotations

import dataclasses
import re

import pytest
from plotly.offline import get_plotlyjs

from loopnb.notebook.markup import summary_html
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


def test_long_names_and_texts_are_cut_and_say_so(tmp_path):
    """A recording may hold any length: names are cut short, texts cut long, and each cut says so."""
    huge = "M" * 200_000
    b = RunBuilder(huge, model=huge, task=huge, tools=(huge,))
    b.tool_turn(Call(huge, content=huge, error="tool_error", arguments={"path": huge}), text=huge)
    b.breaker(huge, "open")
    b.hard("loop_detected", huge, Call(huge, content=huge, error="tool_error"))
    events = [
        dataclasses.replace(e, error=huge) if e.kind in ("hard_error_raised", "run_finished") else e
        for e in b.events
    ]
    recording = saved(events, tmp_path)
    view = replay(recording)
    for pane in (view.status.value, view.board.value, view.inspector.value, summary_html(view.state)):
        assert len(pane) < 20_000
    view.select(1)
    assert len(view.inspector.value) < 20_000
    assert f"M… ({200_000 - 4000 + 1:,} more characters)" in view.inspector.value
    page = report_html(recording).replace(get_plotlyjs(), "")
    assert len(page) < 250_000  # the run id in full once (data-run), the rest cut


def test_long_unbroken_text_wraps_inside_its_pane():
    """A 300-character argument with no space once made the inspector eight times its width."""
    b = RunBuilder("r1", tools=("t" * 60,))
    b.tool_turn(Call("t" * 60, content="A" * 300, error="tool_error", arguments={"q": "A" * 300}))
    view = replay(b.events)
    view.select(1)
    for pane in (view.status.value, view.board.value, view.inspector.value):
        assert re.match(r'<div class="loopnb-\w+" style="[^"]*overflow-wrap:anywhere', pane), pane[:200]
    assert re.search(r"table\.loopnb-turns td[^{]*\{[^}]*overflow-wrap:anywhere", report_html(b.events))
