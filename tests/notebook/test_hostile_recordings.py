"""Recordings that load (every event fits the schema) but strain the view: engine runs edited as a
file from elsewhere may have them (free-form settings, turn numbers past int32, error class names),
huge names and texts, long unbroken text. The view and the report show them rather than crash."""

from __future__ import annotations

import contextlib
import dataclasses
import re

import pytest

from loopnb import (
    CircuitBreaker,
    Engine,
    FakeClock,
    FallbackChain,
    LoopError,
    ModelReply,
    ModelUnavailable,
    ScriptedModel,
    ToolCall,
    ToolError,
    load,
    tool,
)
from loopnb.notebook import ViewModel, replay, report_html
from loopnb.notebook._markup import summary_html
from loopnb.record import Recorder
from tests.notebook.conftest import Events
from tests.notebook.panes import marks


@tool
def read_file(path: str) -> str:
    """Answers x."""
    return "x"


def events_of(engine: Engine, task: str = "t", run_id: str = "r1") -> Events:
    """Every event of one run of ``engine``, however it ends."""
    events = Events()
    engine.subscribe(events)
    with contextlib.suppress(LoopError):  # a hard ending is part of the recording
        engine.run(task, run_id=run_id)
    return events


def ok_run(turns: int) -> Events:
    """``turns`` ok calls of read_file, then the answer."""
    steps = [ToolCall("read_file", {"path": f"{i}"}) for i in range(turns)]
    return events_of(Engine(ScriptedModel([*steps, "done"]), [read_file], clock=FakeClock()))


def saved(events, tmp_path):
    recorder = Recorder()
    for event in events:
        recorder(event)
    return load(recorder.save(tmp_path / "sent.jsonl"))


@pytest.mark.parametrize("value", [5, "read_file", {"read_file": 1}, [1, None, "read_file"], None])
def test_free_form_settings_name_only_the_breakers_they_list(tmp_path, value):
    events = ok_run(1)
    started = dataclasses.replace(events[0], settings={"tool_breakers": value})
    recording = saved([started, *events[1:]], tmp_path)
    names = [v.name for v in ViewModel.fold(recording.event_objects).breakers if v.scope == "tool"]
    assert names == (["read_file"] if isinstance(value, list) else [])
    assert replay(recording).state.breakers == ViewModel.fold(recording.event_objects).breakers
    assert "breaker board" in report_html(recording)


def test_turn_numbers_past_int32_are_drawn(tmp_path):
    far = 2**40
    events = [  # 70 turns: two rows of the timeline
        dataclasses.replace(e, turn=e.turn + far) if hasattr(e, "turn") and e.kind != "run_finished" else e
        for e in ok_run(70)
    ]
    recording = saved(events, tmp_path)
    view = replay(recording)
    assert max(marks(view)["ok"]) == far + 71  # every turn here is ok
    page = report_html(recording)
    assert f'<a href="#loopnb-r0-t{far + 71}"' in page and f'id="loopnb-r0-t{far + 71}"' in page


def test_long_names_and_texts_are_cut_and_say_so(tmp_path):
    """A recording may hold any length: names are cut short, texts cut long, and each cut says so."""
    huge = "M" * 200_000

    @tool
    def fails(path: str) -> str:
        """Fails with a huge text."""
        raise ToolError(huge)

    # turn 1: the huge model's huge text, a call to a huge tool name and one that fails hugely;
    # turn 2: the huge model fails, its breaker (a huge target) opens; the backup ends the run
    calls = (ToolCall(huge, {"path": huge}), ToolCall("fails", {"path": huge}))
    model = ScriptedModel([ModelReply(text=huge, tool_calls=calls), ModelUnavailable(huge)], name=huge)
    chain = FallbackChain(
        [model, ScriptedModel([ToolCall("fails", {"path": huge})], name="backup")],
        breaker=CircuitBreaker(failure_threshold=1),
    )
    events = [
        dataclasses.replace(e, error=huge) if e.kind in ("hard_error_raised", "run_finished") else e
        for e in events_of(Engine(chain, [fails], clock=FakeClock(), max_turns=2), huge, run_id=huge)
    ]
    recording = saved(events, tmp_path)
    view = replay(recording)
    for pane in (view.status.value, view.board.value, view.inspector.value, summary_html(view.state)):
        assert len(pane) < 20_000
    view.select(1)
    assert len(view.inspector.value) < 20_000
    assert f"M… ({200_000 - 4000 + 1:,} more characters)" in view.inspector.value
    page = report_html(recording)
    assert len(page) < 250_000  # the run id in full once (data-run), the rest cut


def test_long_unbroken_text_wraps_inside_its_pane():
    """A 300-character argument with no space once made the inspector eight times its width."""

    @tool(name="t" * 60)
    def long_name(q: str) -> str:
        """Fails with a long unbroken text."""
        raise ToolError("A" * 300)

    model = ScriptedModel([ToolCall("t" * 60, {"q": "A" * 300}), "done"])
    events = events_of(Engine(model, [long_name], clock=FakeClock()))
    view = replay(events)
    view.select(1)
    for pane in (view.status.value, view.board.value, view.inspector.value):
        assert re.match(r'<div class="loopnb-\w+" style="[^"]*overflow-wrap:anywhere', pane), pane[:200]
    assert re.search(r"table\.loopnb-turns td[^{]*\{[^}]*overflow-wrap:anywhere", report_html(events))
