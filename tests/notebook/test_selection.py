"""Every pane follows the selected turn, live and in replay, for every built-in scenario."""

from __future__ import annotations

import pytest

from loopnb import scenarios
from loopnb.analysis._flowchart import FlowCount
from loopnb.notebook import LiveView, replay
from loopnb.notebook._markup import pill_text
from loopnb.notebook._state import at_turn
from loopnb.record import Recorder

from . import panes

NAMES = scenarios.names()


def _ran(name: str) -> tuple[LiveView, Recorder]:
    recorder, view = Recorder(), LiveView()
    scenarios.get(name).run(observers=[recorder, view])
    return view, recorder


def _check(view: LiveView, k: int, *, replaying: bool) -> None:
    """The slider, the flow, the gauge, the board, the timeline and the pill agree on turn ``k``."""
    shown, n = view.state, len(view.state.turns)
    assert view.slider.value == k
    turns = shown.turns
    assert len(turns) == n  # later turns stay on the timeline
    flow = FlowCount()
    paths = [flow.turn(t.channel, t.producer) for t in turns[:k]]
    if k < n:
        assert shown.selected == k
        assert shown.lit == (paths[-1] if k else ())
        assert list(shown.edge_counts) == flow.counts
        greyed = [t.turn for t in turns if shown.later(t.turn)]
        assert greyed == list(range(k + 1, n + 1))
        drawn = {t for marks in panes.marks(view).values() for t in marks}
        assert panes.greyed(view) == tuple(t for t in greyed if t in drawn)  # the marks drawn, greyed
    else:
        assert shown.selected is None and not any(shown.later(t.turn) for t in turns)
    if k:
        assert shown.gauge.turn == k and shown.gauge.lines()[0] == f"turn {k} · recovery"
        assert f"turn {k} · recovery" in panes.gauge(view)[2]
        assert shown.lit_turn == k and (panes.lit_colour(view) is not None) == bool(shown.lit)
        assert f"<b>turn {k}</b>" in view.inspector.value
    for b in shown.breakers:
        assert all(turn <= k for turn, _ in b.history)
        assert b.state == (b.history[-1][1] if b.history else b.state)
    phase = shown.run.phase
    final = {"ok": "finished", "hard": "ended hard"}.get(phase, "running")
    expected = f"replay · turn {k} of {n}" if replaying and (k < n or phase == "running") else final
    assert pill_text(shown, replay=replaying) == expected
    assert f">{expected}</span>" in view.status.value


@pytest.mark.parametrize("name", NAMES)
def test_after_a_run_every_turn_selected_redraws_every_pane(name):
    view, _ = _ran(name)
    n = len(view.state.turns)
    assert view.slider.max == n and view.slider.value == n
    _check(view, n, replaying=False)
    assert "running" not in view.status.value
    for k in [*range(n, -1, -1), n]:
        view.select(k)
        _check(view, k, replaying=False)


@pytest.mark.parametrize("name", NAMES)
def test_in_replay_every_turn_selected_redraws_every_pane(name):
    live, recorder = _ran(name)
    view = replay(recorder)
    n = len(view.state.turns)
    assert view.state == live.state and view.slider.value == view.slider.max == n
    assert view.play is not None and view.play.max == n
    assert "running" not in view.status.value
    for k in [*range(n + 1), 0]:
        view.select(k)
        _check(view, k, replaying=True)


def test_at_turn_is_pure_and_idempotent():
    view, _ = _ran(NAMES[0])
    state = view.state
    n = len(state.turns)
    assert at_turn(state, None) == state and at_turn(state, n) == state
    for k in range(n):
        once = at_turn(state, k)
        assert at_turn(once, k) == once and at_turn(state, k) == once
    assert at_turn(state, 0).breakers == tuple(b for b in at_turn(state, 0).breakers if not b.history)
