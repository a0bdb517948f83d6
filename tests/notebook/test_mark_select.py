"""A click on a timeline mark selects its turn: the page widget's ``{"select": turn}`` message, headless."""

from __future__ import annotations

import pytest

from loopnb.notebook import replay
from loopnb.record import Recorder
from tests.notebook import scenarios as S
from tests.notebook.conftest import run_events
from tests.notebook.panes import ringed
from tests.notebook.test_live import watched


def clicked(view, turn: object) -> None:
    """What the page sends when a mark is clicked (the message as the kernel receives it)."""
    view._page._on_msg(view._page, {"select": turn}, [])


def test_a_clicked_mark_moves_the_slider_and_the_inspector():
    view, _, _ = watched(S.typo())
    clicked(view, 1)
    assert view.slider.value == 1 and ringed(view) == (1,)
    assert "turn 1" in view.inspector.value and "file src/mian.rs not found" in view.inspector.value
    clicked(view, 3)  # the newest turn: following again
    assert view.slider.value == 3 and ringed(view) == (3,)


def test_a_clicked_mark_moves_a_replay_to_that_turn():
    engine, task = S.typo()
    recorder = Recorder()
    engine.subscribe(recorder)
    run_events((engine, task))
    view = replay(recorder)
    clicked(view, 2)
    # (the play button follows the slider in the page, through jslink)
    assert view.slider.value == 2 and view.state.selected == 2 and ringed(view) == (2,)


@pytest.mark.parametrize("turn", ["2", True, None, 2.0, [2]])
def test_a_select_message_that_is_not_a_turn_number_changes_nothing(turn):
    view, _, _ = watched(S.typo())
    clicked(view, turn)
    assert view.slider.value == 3 and ringed(view) == (3,)


def test_a_turn_out_of_range_selects_the_nearest():
    view, _, _ = watched(S.typo())
    clicked(view, 99)
    assert view.slider.value == 3
    clicked(view, -5)
    assert view.slider.value == 0
