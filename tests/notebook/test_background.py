"""BackgroundRun's controls as a user clicks them: notes, enabled buttons, the end, failures.

``Turns`` stands in for ``Engine.iter``: each turn begins, then waits for the test to let it end,
so that every state (paused, a turn in flight, stopping, over) is reached deterministically.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from loopnb import Cancelled, CancelToken
from loopnb.notebook import BackgroundRun, LiveView

WAIT = 10.0  # seconds; only reached when a test fails


class Turns:
    """A run of ``total`` turns; turn k begins (``began`` released) and ends when ``end()`` is called."""

    def __init__(self, total: int, cancel: CancelToken, *, failure: BaseException | None = None) -> None:
        self.total = total
        self.cancel = cancel
        self.failure = failure
        self.count = 0
        self.done = False
        self.result: Any = None
        self.began = threading.Semaphore(0)
        self._end = threading.Semaphore(0)

    def step(self) -> None:
        if self.cancel.cancelled:
            self.done = True
            raise Cancelled(self.cancel.reason or "cancelled")
        self.count += 1
        self.began.release()
        assert self._end.acquire(timeout=WAIT), "the test never ended the turn"
        if self.failure is not None:
            raise self.failure
        if self.count == self.total:
            self.done = True
            self.result = f"{self.total} turns"

    def end(self) -> None:
        """Let the turn in flight end."""
        self._end.release()

    def wait_began(self) -> None:
        assert self.began.acquire(timeout=WAIT), "no turn began"


def launched(total: int = 5, *, paused: bool = True, **kwargs: Any) -> tuple[BackgroundRun, Turns, LiveView]:
    token = CancelToken()
    run = BackgroundRun(cancel=token, paused=paused)
    view = LiveView(controls=run)
    turns = Turns(total, token, **kwargs)
    run.launch(turns, view, None)  # type: ignore[arg-type]
    return run, turns, view


def settled(run: BackgroundRun, turns: int) -> None:
    """Wait until ``turns`` turns are over and the view shows the state that follows."""
    pause = threading.Event()
    for _ in range(int(WAIT / 0.001)):
        with run._cond:
            shown = not run._publishing and run._shown == run._describe()
            if run.turns == turns and not run._in_turn and shown:
                return
        pause.wait(0.001)
    raise AssertionError(f"the run never settled after turn {turns}: {run!r}")


def enabled(view: LiveView) -> set[str]:
    return {name for name, button in view.buttons.items() if not button.disabled}


def test_buttons_and_notes_follow_each_action():
    run, turns, view = launched(5)
    assert enabled(view) == {"Step", "Resume", "Stop"}
    assert view.note == "paused before the first turn: press Step or Resume"

    run.pause()  # already paused, nothing in flight: it still says so (not "pausing after turn 1")
    assert view.note == "paused before the first turn: press Step or Resume"

    run.step()
    turns.wait_began()
    assert view.note == "stepping: turn 1" and enabled(view) == {"Step", "Resume", "Stop"}
    turns.end()
    settled(run, 1)
    assert view.note == "paused after turn 1: press Step or Resume"

    run.resume()
    turns.wait_began()
    assert view.note is None and enabled(view) == {"Pause", "Stop"}
    run.pause()  # while turn 2 is in flight
    assert view.note == "pausing after turn 2" and enabled(view) == {"Step", "Resume", "Stop"}
    turns.end()
    settled(run, 2)
    assert view.note == "paused after turn 2: press Step or Resume" and turns.count == 2

    run.resume()
    turns.wait_began()
    run.stop()  # while turn 3 is in flight: the run is not over yet
    assert view.note == "stopping" and enabled(view) == set()
    run.resume()  # does not hide that it is stopping
    assert view.note == "stopping" and enabled(view) == set()
    turns.end()
    assert run.wait(WAIT)
    assert isinstance(run.error, Cancelled) and run.error.message == "stopped from the live view"
    assert run.result is None and run.failure is None and run.turns == 3
    assert view.finished and view.note is None and enabled(view) == set()


def test_pause_forgets_pending_steps():
    run, turns, view = launched(5)
    run.step()
    run.step()  # two turns asked for
    turns.wait_began()
    run.pause()  # then: hold after this one
    turns.end()
    settled(run, 1)
    assert view.note == "paused after turn 1: press Step or Resume" and turns.count == 1
    run.stop()
    assert run.wait(WAIT) and isinstance(run.error, Cancelled)


def test_stop_while_paused_ends_the_run_as_cancelled():
    run, turns, view = launched(5)
    run.stop()
    assert run.wait(WAIT)
    assert isinstance(run.error, Cancelled) and turns.count == 0 and run.turns == 0
    assert enabled(view) == set() and view.note is None


def test_controls_after_the_end_do_nothing():
    run, turns, view = launched(1, paused=False)
    turns.wait_began()
    turns.end()
    assert run.wait(WAIT) and run.result == "1 turns" and run.error is None
    assert enabled(view) == set() and view.note is None and repr(run) == "BackgroundRun(done: ok, turns=1)"
    for button in ("Stop", "Pause", "Step", "Resume", "Stop"):
        view.buttons[button].click()  # the front end may still deliver a click
    run.stop()
    assert not run.cancel.cancelled  # a token the caller passed in is not fired after the run
    assert not run.paused and view.note is None and enabled(view) == set()


class _SlowNoteView(LiveView):
    """A view whose note, written by the test's thread, lands only after the worker's turn ended."""

    turn_over: threading.Event

    def set_note(self, note: str | None, *, paused: int | None = None) -> None:
        if threading.current_thread() is threading.main_thread() and note and "stepping" in note:
            self.turn_over.wait(WAIT)
        super().set_note(note, paused=paused)


def test_the_note_shown_last_is_the_latest_state():
    """Step's own note must not overwrite the worker's later "paused after turn 1"."""
    token = CancelToken()
    run = BackgroundRun(cancel=token, paused=True)
    view = _SlowNoteView(controls=run)
    view.turn_over = threading.Event()
    turns = Turns(3, token)
    run.launch(turns, view, None)  # type: ignore[arg-type]

    def end_turn() -> None:
        turns.wait_began()
        turns.end()
        with run._cond:
            while run.turns < 1:
                run._cond.wait(0.001)
        view.turn_over.set()

    helper = threading.Thread(target=end_turn)
    helper.start()
    run.step()
    helper.join(WAIT)
    settled(run, 1)
    assert view.note == "paused after turn 1: press Step or Resume"
    run.stop()
    assert run.wait(WAIT)


def test_a_failure_below_the_engine_is_kept_and_shown():
    run, turns, view = launched(3, paused=False, failure=RuntimeError("<b>bug</b> below the API"))
    turns.wait_began()
    turns.end()
    assert run.wait(WAIT)
    assert isinstance(run.failure, RuntimeError) and run.result is None and run.error is None
    assert repr(run) == "BackgroundRun(failed, turns=0)"
    assert view.note == "the run failed: RuntimeError: <b>bug</b> below the API"
    assert "the run failed: RuntimeError: &lt;b&gt;bug&lt;/b&gt; below the API" in view.status.value
    assert enabled(view) == set() and view.finished


def test_wait_returns_even_when_finishing_the_view_raises():
    run, turns, view = launched(1, paused=False)

    def broken(_view: LiveView) -> None:
        raise ValueError("an on_finish callback failed")

    view.on_finish(broken)
    turns.wait_began()
    turns.end()
    assert run.wait(WAIT), "wait() never returned"
    assert run.result == "1 turns" and isinstance(run.failure, ValueError)


def test_an_unprintable_failure_is_still_named():
    class Unprintable(Exception):
        def __str__(self) -> str:
            raise TypeError("no")

    run, turns, view = launched(1, paused=False, failure=Unprintable())
    turns.wait_began()
    turns.end()
    assert run.wait(WAIT)
    assert view.note == "the run failed: Unprintable: <unprintable Unprintable>"


@pytest.mark.parametrize("paused", [True, False])
def test_without_a_view(paused):
    token = CancelToken()
    run = BackgroundRun(cancel=token, paused=paused)
    turns = Turns(2, token)
    run.launch(turns, None, None)  # type: ignore[arg-type]
    run.resume()
    for _ in range(2):
        turns.wait_began()
        turns.end()
    assert run.wait(WAIT) and run.result == "2 turns" and run.turns == 2


def test_the_pill_says_paused_and_a_displayed_run_keeps_its_line_current():
    run, turns, view = launched(2)
    bundle = run._repr_mimebundle_()
    label = run._labels[0]
    assert bundle["text/plain"] == "BackgroundRun(paused, turns=0)" and "paused, turns=0" in label.value
    assert view.paused == 0
    run.step()
    turns.wait_began()
    turns.end()
    settled(run, 1)
    assert view.paused == 1 and "turns=1" in label.value
    run.resume()
    turns.wait_began()
    assert view.paused is None
    turns.end()
    assert run.wait(WAIT)
    assert label.value == "<code>BackgroundRun(done: ok, turns=2)</code>" and view.paused is None
