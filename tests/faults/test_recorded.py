"""Injected failures marked where they are recorded: the frames, the files, the view and the report."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import loopnb
from loopnb import Engine, FakeClock, Recorder, ScriptedModel, ToolCall, faults, flow_counts, inject, load
from loopnb.notebook import report_html
from loopnb.notebook._markup import inspector_html
from loopnb.notebook._timeline import timeline_svg
from loopnb.notebook._viewmodel import ViewModel
from loopnb.scenarios import make_read_file

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
LABEL = 'error("disk <busy>").first(1)'


def recorded() -> Recorder:
    """Two runs: one whose first call meets an injected error and recovers, one with a real error."""
    recorder = Recorder()
    tools = inject([make_read_file()], {"read_file": faults.parse(LABEL)})
    steps = [
        ToolCall("read_file", {"path": "src/main.rs"}),
        ToolCall("read_file", {"path": "src/main.rs"}),
        "ok",
    ]
    Engine(ScriptedModel(steps), tools=tools, observers=[recorder], clock=FakeClock()).run(
        "t", run_id="injected"
    )
    real = [ToolCall("read_file", {"path": "nope"}), ToolCall("read_file", {"path": "src/main.rs"}), "ok"]
    Engine(ScriptedModel(real), tools=[make_read_file()], observers=[recorder], clock=FakeClock()).run(
        "t", run_id="real"
    )
    return recorder


def marked(turns: pd.DataFrame) -> list[str | None]:
    return [None if pd.isna(v) else v for v in turns["injected"]]


def test_the_turns_and_events_frames_carry_the_label() -> None:
    recorder = recorded()
    assert marked(recorder.turns) == [LABEL, None, None, None, None, None]
    assert str(recorder.turns["injected"].dtype) == "string"
    events = recorder.events
    dispatched = events[events["kind"] == "tool_dispatched"]
    assert [None if pd.isna(v) else v for v in dispatched["injected"]] == [LABEL, None, None, None]
    assert loopnb.TURN_SCHEMA["properties"]["injected"]["x-pandas-dtype"] == "string"


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_the_label_survives_a_file(tmp_path: Path, suffix: str) -> None:
    recorder = recorded()
    path = recorder.save(tmp_path / f"run{suffix}")
    loaded = load(path)
    assert marked(loaded.turns) == marked(recorder.turns)
    pd.testing.assert_frame_equal(loaded.turns, recorder.turns)
    assert next(e.result.injected for e in loaded.event_objects if e.kind == "tool_dispatched") == LABEL


def test_a_file_written_before_the_column_reads_it_as_missing() -> None:
    old = load(GOLDEN / "v2" / "ok_soft_then_ok.jsonl")
    assert old.turns["injected"].isna().all() and old.events["injected"].isna().all()


def test_an_injected_model_failure_reaches_the_files(tmp_path: Path) -> None:
    recorder = Recorder()
    clock = FakeClock()
    model = inject(ScriptedModel(["done"]), faults.unavailable().first(1), clock=clock)
    Engine(model, clock=clock, observers=[recorder]).run("t")
    loaded = load(recorder.save(tmp_path / "m.parquet"))
    assert marked(loaded.turns) == ["unavailable().first(1)"]
    failed = loaded.events[loaded.events["kind"] == "model_failed"]
    assert failed["injected"].tolist() == ["unavailable().first(1)"]


def test_the_inspector_says_injected_and_the_label() -> None:
    state = ViewModel.fold(e for e in recorded().event_objects if e.run_id == "injected")
    html = str(inspector_html(state.turn(1)))
    assert '<span class="loopnb-injected" style="font-weight:600">injected</span>' in html
    assert "error(&quot;disk &lt;busy&gt;&quot;).first(1)" in html  # escaped: a label is untrusted text
    assert "read_file · error (tool_error) · injected error(&quot;disk &lt;busy&gt;&quot;).first(1)" in html
    assert "injected" not in str(inspector_html(state.turn(2)))


def test_the_timeline_rings_an_injected_turn() -> None:
    state = ViewModel.fold(e for e in recorded().event_objects if e.run_id == "injected")
    svg = str(timeline_svg(state.turns, None))
    assert svg.count('class="loopnb-injected"') == 1
    assert (
        "turn 1: soft (tool_error) · read_file · injected error(&quot;disk &lt;busy&gt;&quot;).first(1)"
        in svg
    )


def test_the_report_marks_the_injected_turn() -> None:
    page = report_html(recorded())
    assert page.count('class="loopnb-injected"') >= 2  # the row's word and the timeline's ring


def test_flow_counts_split_injected_from_natural_failures() -> None:
    recorder = recorded()
    every = flow_counts(recorder).set_index("edge")["count"]
    injected = flow_counts(recorder, injected=True).set_index("edge")["count"]
    natural = flow_counts(recorder, injected=False).set_index("edge")["count"]
    assert (injected + natural).tolist() == every.tolist()
    assert injected["failed-adapt"] == 1 and natural["failed-adapt"] == 1
    assert injected["next-ok"] == 1 and natural["next-ok"] == 1  # each recovery goes with its failure
    assert flow_counts(recorder.turns.drop(columns=["injected"]), injected=True)["count"].sum() == 0
