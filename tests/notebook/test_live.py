"""The widget, headless (no kernel): traits after a run, coalesced redraws, escaping, replay parity."""

from __future__ import annotations

import copy
import json
import re
import threading
import time

import pytest

from loopnb import Cancelled, CancelToken, load
from loopnb._palette import PALETTE
from loopnb.notebook import LiveView, ViewModel, replay
from loopnb.notebook._markup import BREAKER_CHANNEL, board_html, inspector_html
from loopnb.notebook._replay import Frames
from loopnb.notebook._state import BreakerView, ViewState
from loopnb.notebook._svg import flow_svg
from loopnb.notebook._timeline import TIMELINE_MARKS
from loopnb.record import Recorder
from tests.notebook import scenarios as S
from tests.notebook.conftest import run_events
from tests.notebook.panes import gauge, lit_colour, marks, ringed


def watched(scenario, **kwargs):
    view = LiveView(**kwargs)
    scenario[0].subscribe(view)
    events, outcome = run_events(scenario)
    return view, events, outcome


def traits(view: LiveView) -> dict:
    """What the frontend is sent: the panes' HTML values and the slider."""
    return {
        "flow": view.flow.value,
        "gauge": view.gauge.value,
        "timeline": view.timeline.value,
        "status": view.status.value,
        "board": view.board.value,
        "inspector": view.inspector.value,
        "slider": (view.slider.min, view.slider.max, view.slider.value),
    }


def test_panes_after_a_run():
    view, _events, _ = watched(S.breaker()[:2])
    assert marks(view) == {"ok": (4, 5), "soft": (1, 2, 3), "hard": ()}
    assert ringed(view) == (5,)
    assert "the thick path: turn 5, ok" in view.flow.value  # an ok turn
    assert lit_colour(view) in (None, PALETTE["ok"])  # green where it draws a path
    assert gauge(view)[0] == 0
    assert 'data-state="closed"' in view.board.value
    assert "finished" in view.status.value
    assert "turn 5" in view.inspector.value
    assert view.slider.max == 5 and view.slider.value == 5
    assert view.finished


def test_hard_run_is_shown_as_hard():
    view, _, _err = watched(S.exhausted())
    assert marks(view)["hard"] == (1,)
    attempt, _greyed, words = gauge(view)
    assert attempt == 6 and "wall" in words
    assert lit_colour(view) == PALETTE["hard"]
    assert "ToolRecoveryExhausted" in view.status.value and "ended hard" in view.status.value
    assert "dropped from the scratchpad" in view.inspector.value


def test_breaker_states_have_a_word_a_mark_and_a_colour():
    assert BREAKER_CHANNEL == {"closed": "ok", "half_open": "soft", "open": "hard"}
    state = ViewState(
        breakers=(
            BreakerView("a", "tool", "closed"),
            BreakerView("b", "tool", "open", 3, 10.0, 4.25),
            BreakerView("c", "model", "half_open", 1, 10.0),
            BreakerView("d", "model", "open", 1, 10.0, 0.0),
        )
    )
    html = board_html(state)
    assert html.count('data-state="closed"') == 1 and html.count('data-state="open"') == 2
    assert "half-open" in html and "4.2s of 10s" in html and "next call is a trial" in html
    for state_name, channel in BREAKER_CHANNEL.items():  # the state's mark, in its colour, before its word
        word = {"half_open": "half-open"}.get(state_name, state_name)
        icon = rf'<svg class="loopnb-svg loopnb-icon"[^>]*aria-label="{channel}"[^>]*>'
        icon += rf'<\w+ fill="{PALETTE[channel]}"[^<]*/></svg>'
        assert re.search(rf'{icon}<span class="loopnb-breaker-state"[^>]*>{word}<', html), state_name


def test_untrusted_text_is_escaped_everywhere():
    view, _events, _result = watched(S.payload())
    for turn in range(1, 5):
        view.select(turn)
        assert "<img" not in view.inspector.value and "<script" not in view.inspector.value
        if turn in (1, 2, 4):
            assert "&lt;img src=x onerror=" in view.inspector.value
    for value in (view.status.value, view.board.value):
        assert "<img" not in value and "<script" not in value
    assert "&lt;script&gt;" in view.status.value  # the task and the output are shown, escaped
    dumped = json.dumps(traits(view))
    assert "<img" not in dumped and "<script" not in dumped
    bundle = view._repr_mimebundle_()
    assert "<img" not in bundle["text/html"] and "<script" not in bundle["text/html"]


def test_inspector_shows_the_recovery_note_beside_the_result():
    view, _, result = watched(S.gave_up())
    view.select(1)
    assert "recovery note" in view.inspector.value and "giving up" in view.inspector.value
    assert result.tool_results[0].content in view.inspector.value


def test_redraws_are_coalesced_and_the_final_state_drawn():
    scenario = S.long_run(2000)
    view = LiveView(max_fps=10)
    scenario[0].subscribe(view)
    t0 = time.perf_counter()
    events, result = run_events(scenario)
    elapsed = time.perf_counter() - t0
    assert result.turns == 2000
    assert 1 <= view.redraws <= elapsed * 10 + 2
    shown = marks(view)  # the whole run, in bins of 13 turns: at most TIMELINE_MARKS marks
    assert len(shown["ok"]) + len(shown["soft"]) == -(-2000 // 13) <= TIMELINE_MARKS
    assert 'data-turns="1-13"' in view.timeline.value and 'data-turns="1990-2000"' in view.timeline.value
    assert "2,000 turns in marks of 13, each its worst turn" in view.timeline.value
    assert not any(t.name == "loopnb-painter" and t.is_alive() for t in threading.enumerate())
    assert view.state == ViewModel.fold(events)


def latest(view: LiveView) -> ViewState:
    with view._lock:
        return view.model.snapshot()


def test_a_slow_run_is_redrawn_while_it_goes():
    """Events slower than the frame rate are each drawn soon after they come, before the run ends."""
    view = LiveView(max_fps=100, first_frame=0)
    events, _ = run_events(S.typo())
    for event in events[:-1]:
        view(event)
        deadline = time.monotonic() + 5
        while view.state != latest(view) and time.monotonic() < deadline:
            time.sleep(0.002)
        assert view.state == latest(view)
    assert not view.finished and view.state.run.phase == "running" and len(view.state.turns) == 3
    view(events[-1])
    assert view.finished and view.state.run.phase == "ok"


def answer(page, content) -> None:
    """What the page's script sends back, as the kernel would deliver it."""
    page._on_msg(page, content, [])


def page_with_a_frame_in_flight(patience: float = 30.0):
    """A view's page that answered frame 1 and has frame 2 sent, not yet drawn."""
    page = LiveView()._page
    page.patience = patience
    page.ping()
    answer(page, {"drawn": 1})
    page.ping()
    return page


def settles_at_once(page, stop: threading.Event | None = None) -> bool:
    """Does ``settle`` return within 5 s? (With a patience of 30 s, a wait would not.)"""
    waiter = threading.Thread(target=page.settle, args=(stop or threading.Event(),), daemon=True)
    waiter.start()
    waiter.join(5)
    return not waiter.is_alive()


def test_without_a_page_answering_the_painter_keeps_its_own_pace():
    page = LiveView()._page
    page.patience = 30.0
    page.ping()
    assert settles_at_once(page) and not page.answering  # nobody has ever answered: no wait


def test_while_the_page_answers_the_next_frame_waits_for_it():
    page = page_with_a_frame_in_flight()
    assert page.answering and page.drawn == 1
    settled = threading.Event()
    waiter = threading.Thread(target=lambda: (page.settle(threading.Event()), settled.set()))
    waiter.start()
    assert not settled.wait(0.2)  # still waiting for the page
    answer(page, {"drawn": 2})
    assert settled.wait(5)
    waiter.join(5)
    assert page.answering


def test_a_page_that_falls_silent_is_not_waited_for_again_until_it_answers():
    page = page_with_a_frame_in_flight(patience=0.05)
    page.settle(threading.Event())  # waits out its patience
    assert not page.answering
    page.patience = 30.0
    assert settles_at_once(page)  # silent: no wait
    answer(page, {"drawn": 2})
    assert page.answering


def test_stopping_releases_a_wait_at_once():
    page = page_with_a_frame_in_flight()
    stop = threading.Event()
    stop.set()
    assert settles_at_once(page, stop)
    stop_later = threading.Event()
    waiter = threading.Thread(target=page.settle, args=(stop_later,), daemon=True)
    waiter.start()
    time.sleep(0.05)
    stop_later.set()
    page.release()
    waiter.join(5)
    assert not waiter.is_alive()


@pytest.mark.parametrize("content", ["drawn", {"drawn": "1"}, {"drawn": True}, {"frame": 1}, None, [1]])
def test_the_page_ignores_answers_that_are_not_frame_numbers(content):
    page = LiveView()._page
    page.ping()
    answer(page, content)
    assert page.drawn == 0 and not page.answering


def test_an_answer_beyond_the_frames_sent_counts_only_up_to_them():
    page = LiveView()._page
    page.ping()
    answer(page, {"drawn": 99})
    assert page.drawn == 1


def test_a_run_is_paced_by_an_answering_page():
    """Once the page answers, no frame is sent before the page has drawn the one before it."""
    view = LiveView(max_fps=100, first_frame=0)
    page = view._page
    in_flight: list[int] = []  # frames sent but not yet drawn, at each new frame once answering
    send = page.ping

    def ping() -> None:
        if page.answering:
            in_flight.append(page.sent - page.drawn)
        send()
        frame = page.sent
        threading.Timer(0.05, answer, args=(page, {"drawn": frame})).start()  # a page 50 ms behind

    page.ping = ping
    engine, task = S.endless(delay=0.002)
    engine.subscribe(view)
    token = CancelToken()
    runner = threading.Thread(target=run_until_cancelled, args=(engine, task, token))
    runner.start()
    time.sleep(0.8)
    token.cancel("enough")
    runner.join(10)
    assert view.finished and len(in_flight) >= 3
    assert set(in_flight) == {0}
    assert page.sent <= 0.8 / 0.05 + 10  # unpaced, 100 fps would have sent ~80 frames


def run_until_cancelled(engine, task, token) -> None:
    with pytest.raises(Cancelled):
        engine.run(task, cancel=token)


def test_saved_state_is_the_final_picture():
    """The widgets' saved state is their values: the final panes, with nothing to refresh."""
    view, _, _ = watched(S.typo())
    saved = view.timeline.get_state()["value"]
    assert saved == view.timeline.value and marks(view)["soft"] == (1,)
    assert view.flow.get_state()["value"] == flow_svg(view.state)


def test_mimebundle_has_the_widget_and_a_static_picture():
    view, _, _ = watched(S.typo())
    bundle = view._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    html = bundle["text/html"]
    assert "decision flow" in html and html.count('class="loopnb-mark"') == 3
    assert "<script" not in html


def test_moving_the_slider_inspects_that_turn():
    view, _, _ = watched(S.typo())
    hover = re.search(
        r'data-turn="1" data-channel="soft">.*?</g><text class="tip[^>]*>([^<]*)<', view.timeline.value
    )
    assert hover and hover[1].startswith("turn 1: soft (")  # the label hovering the mark shows
    view.slider.value = 1
    assert "turn 1" in view.inspector.value and "file src/mian.rs not found" in view.inspector.value
    assert ringed(view) == (1,)
    view.select(2)
    assert "turn 2" in view.inspector.value and ringed(view) == (2,)
    view.slider.value = 3  # back at the newest turn: follow again
    assert ringed(view) == (3,)


def test_replay_gives_the_same_panes_as_the_live_run(tmp_path):
    engine, task = S.payload()
    recorder = Recorder()
    engine.subscribe(recorder)
    live, _, _ = watched((engine, task))
    recording = load(recorder.save(tmp_path / "run.jsonl"))
    again = replay(recording)
    assert again.state == live.state
    assert traits(again) == traits(live)


def test_replay_slider_moves_through_the_run(tmp_path):
    events, _ = run_events(S.looping())
    view = replay(events)
    frames = Frames(events)
    assert view.slider.max == frames.count == 6 and view.play is not None and view.play.max == 6
    for k in (0, 3, 1, 6):
        view.slider.value = k
        assert view.state == frames(k)
        assert marks(view)["soft"] == tuple(t.turn for t in frames(k).turns if t.channel == "soft")
        assert view.flow.value == flow_svg(frames(k))
    view.slider.value = 2
    assert "turn 2" in view.inspector.value
    assert gauge(view)[0] == frames(2).turn(2).gauge.attempt


def test_replay_picks_a_run():
    events_a, _ = run_events(S.typo())
    events_b, _ = run_events(S.looping())
    both = [*events_a, *events_b]
    assert replay(both).state.run.run_id == events_b[0].run_id
    assert replay(both, run_id=events_a[0].run_id).state == ViewModel.fold(events_a)
    with pytest.raises(ValueError, match="no run"):
        replay(both, run_id="nope")
    with pytest.raises(ValueError, match="no events"):
        replay([])


def test_inspector_without_a_turn():
    assert "no turn selected" in inspector_html(None)


def test_close_stops_everything():
    view = LiveView()
    events, _ = run_events(S.typo())
    view(events[0])
    view.close()
    assert not any(t.name == "loopnb-painter" and t.is_alive() for t in threading.enumerate())


def test_max_fps_must_be_positive():
    with pytest.raises(ValueError, match="max_fps"):
        LiveView(max_fps=0)


def test_the_panes_are_deterministic():
    events, _ = run_events(S.breaker()[:2])
    state = ViewModel.fold(events)
    assert flow_svg(state) == flow_svg(copy.deepcopy(state))
