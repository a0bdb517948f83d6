"""replay: which of many runs it shows, errors that name the file, a run the recording cuts short."""

from __future__ import annotations

import warnings

import pytest

from loopnb import RecordingWarning, load
from loopnb.notebook import NotebookRunner, replay
from loopnb.record import Recorder
from tests.notebook import scenarios as S
from tests.notebook.conftest import run_events
from tests.notebook.test_live import traits


def test_replay_of_many_runs_says_which_one_it_shows():
    events_a, _ = run_events(S.typo())
    events_b, _ = run_events(S.looping())
    both = [*events_a, *events_b]
    last = replay(both)
    assert "run 2 of 2 in this recording" in last.header.value
    first = replay(both, run_id=events_a[0].run_id)
    assert "run 1 of 2" in first.header.value
    assert first.runs is not None and first.runs.value == events_a[0].run_id
    single = replay(events_a)
    assert single.header.value == "<b>loopnb replay</b>" and single.runs is None


def test_the_run_menu_replays_the_run_picked_in_the_same_view():
    events_a, _ = run_events(S.typo())
    events_b, _ = run_events(S.looping())
    view = replay([*events_a, *events_b])
    a, b = events_a[0].run_id, events_b[0].run_id
    assert view.runs is not None and view.runs in view.controls.children
    assert [value for _, value in view.runs.options] == [a, b]
    labels = [label for label, _ in view.runs.options]
    assert labels[0].startswith(f"1. {a} (") and labels[1].startswith(f"2. {b} (")
    alone_a, alone_b = replay(events_a), replay(events_b)
    assert view.state == alone_b.state
    view.runs.value = a
    assert view.state == alone_a.state and view.slider.max == alone_a.slider.max
    assert "run 1 of 2" in view.header.value
    view.select(1)
    alone_a.select(1)
    assert view.slider.value == 1 and view.state == alone_a.state
    view.runs.value = b
    assert view.state == alone_b.state and view.slider.value == view.slider.max


def test_the_run_menu_clears_the_cut_short_note_for_a_whole_run():
    events_a, _ = run_events(S.typo())
    events_b, _ = run_events(S.looping())
    cut = [e for e in events_b if e.kind != "run_finished"]
    view = replay([*events_a, *cut])
    assert "the recording ends here" in view.status.value
    labels = [label for label, _ in view.runs.options]
    assert labels[1].endswith("(unfinished)")
    view.runs.value = events_a[0].run_id
    assert view.note is None and "the recording ends here" not in view.status.value


def test_replay_errors_name_the_file(tmp_path):
    recorder = Recorder()
    path = recorder.save(tmp_path / "empty.jsonl")  # a header and no runs
    with pytest.raises(ValueError, match=r"replay: '.*empty\.jsonl': the recording holds no events"):
        replay(load(path))
    with pytest.raises(ValueError, match=r"replay: '.*empty\.jsonl': the recording holds no events"):
        replay(path)
    with pytest.raises(ValueError, match=r"^replay: the recording holds no events"):
        replay([])


def test_replay_of_a_run_cut_short_says_so(tmp_path):
    engine, task = S.typo()
    runner = NotebookRunner(engine, view=False)
    runner.run(task)
    path = runner.save(tmp_path / "run.jsonl")
    text = path.read_text()
    path.write_text(text[: text.rstrip("\n").rfind("\n") + 1] + text.rstrip("\n").rsplit("\n", 1)[1][:10])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        recording = load(path)
    assert any(issubclass(w.category, RecordingWarning) for w in caught)
    view = replay(recording)
    assert view.state.run.phase == "running"
    assert "the recording ends here, before the run did" in view.status.value
    view.select(1)  # the note stays while the slider moves
    assert "the recording ends here" in view.status.value

    whole = replay(runner.recording())
    assert whole.note is None and "the recording ends here" not in whole.status.value


def test_a_background_run_that_ended_hard_replays_as_it_was_shown():
    engine, task = S.looping()
    runner = NotebookRunner(engine)
    handle = runner.start(task)
    assert handle.wait(10) and type(handle.error).__name__ == "LoopDetected"
    live = runner.view
    again = replay(runner.recording())
    assert again.state == live.state and traits(again) == traits(live)
    again.select(0)  # the run as it started: nothing lit, every turn still on the timeline
    shown = again.state
    assert shown.selected == 0 and shown.lit == () and not any(shown.edge_counts)
    assert shown.turns == live.state.turns and all(shown.later(t.turn) for t in shown.turns)
    assert f"replay · turn 0 of {len(shown.turns)}" in again.status.value
    again.select(again.slider.max)
    assert again.state.run.phase == "hard" and again.state.turns[-1].channel == "hard"
