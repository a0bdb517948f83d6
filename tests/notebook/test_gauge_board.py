"""The recovery gauge and the breaker board, headless, for every built-in scenario, turn by turn.

The widget's own state (the gauge's SVG, the board's HTML) is compared with what
``loopnb.recovery_attempts`` and ``loopnb.breaker_history`` say of the same turn.
"""

from __future__ import annotations

import html
import re

import pandas as pd
import pytest

import loopnb
from loopnb import scenarios
from loopnb.analysis._retries import CALL_OUTCOMES
from loopnb.notebook import LiveView, ViewModel
from loopnb.notebook._markup import board_html
from loopnb.record import Recorder
from tests.notebook.panes import gauge

VIEW_FONT = 13
"""The panes' text size (``markup._BOX``): the gauge's may not be smaller."""


def _watched(name: str) -> tuple[LiveView, Recorder]:
    view, rec = LiveView(), Recorder()
    scenarios.get(name).run(observers=[rec, view])
    return view, rec


def _title(view: LiveView) -> str:
    return gauge(view)[2]


def _expected(row: pd.Series | None, turn: int) -> tuple[str, float, bool]:
    """What the gauge must show for ``turn``'s picked call: words, value and whether it is greyed."""
    if row is None:
        return "no call dispatched this turn", 0, True
    if pd.isna(row["strategy"]):
        return "no recovery strategy configured", 0, True
    if row["outcome"] == "exhausted":
        return "the wall (ToolRecoveryExhausted)", 6, False
    if pd.isna(row["last_decision"]):
        return (
            "no retry needed" if row["outcome"] == "ok" else "not a failure recovery retries",
            0,
            False,
        )
    return f"{row['retries']} of {row['ceiling']} retries", int(row["retries"]), False


def _picked(calls: pd.DataFrame) -> pd.Series | None:
    """The call a turn's gauge shows, chosen from the frame by the documented rule."""
    if not len(calls):
        return None
    ranked = calls.assign(
        _ran=calls["last_decision"].notna(), _failed=~calls["outcome"].isin(["ok", "recovered"])
    )
    ranked = ranked.sort_values(["retries", "_ran", "_failed"], kind="stable")
    return ranked.iloc[-1]


@pytest.mark.parametrize("name", scenarios.names())
def test_the_gauge_says_what_recovery_attempts_says_for_every_turn(name):
    view, rec = _watched(name)
    attempts = loopnb.recovery_attempts(rec)
    assert set(attempts["outcome"].astype(str)) <= set(CALL_OUTCOMES)
    loops = {
        e.turn: e.count for e in rec.event_objects if e.kind == "detector_fired" and e.detector == "loop"
    }
    last = int(rec.turns["turn"].max()) if len(rec.turns) else 0
    for turn in range(1, last + 1):
        view.select(turn)
        attempt, greyed, title = gauge(view)
        row = _picked(attempts[attempts["turn"] == turn])
        words, value, grey = _expected(row, turn)
        assert f"turn {turn} · recovery" in title, (turn, title)
        assert words in title, (turn, title)
        assert (attempt if not greyed else 0) == value and greyed == grey, (turn, title)
        if row is not None:
            assert str(row["tool"])[:39] in title
        if turn in loops:  # the detector's count, apart from the recovery retries
            assert f"loop detector: {loops[turn]} identical calls in a row" in title
            assert attempt != loops[turn] or greyed
        assert f".loopnb-gauge text{{font-size:{VIEW_FONT}px}}" in view._style.value
    view.close()


def test_five_identical_failures_are_not_shown_as_zero_of_five():
    view, _rec = _watched("stubborn_loop")
    for turn in range(1, 7):
        view.select(turn)
        assert gauge(view)[1]  # greyed: no "0 of 5" without a strategy
        assert "no recovery strategy configured" in _title(view) or turn == 6
    assert "refuses from 4, stops at 6" in _title(view)
    view.close()


@pytest.mark.parametrize("name", scenarios.names())
def test_the_board_shows_breaker_history_of_the_last_turn(name):
    view, rec = _watched(name)
    history = loopnb.breaker_history(rec)
    board = view.board.value
    if not len(history):
        view.close()
        return
    last = history[history["turn"] == history["turn"].max()]
    for _, row in last.iterrows():
        cells = re.search(
            rf"<code[^>]*>{re.escape(html.escape(row['breaker']))}</code>.*?"
            r'loopnb-breaker-state"[^>]*>([^<]+)</span></td>'
            r'<td class="loopnb-breaker-failures"[^>]*>(\d+)</td>',
            board,
        )
        assert cells is not None, row["breaker"]
        assert cells[1] == {"half_open": "half-open"}.get(row["state"], row["state"])
        assert int(cells[2]) == row["failures"]
    moves = [
        s
        for passed in history[history["breaker"] == "service_status"]["passed"]
        for s in passed.split(", ")
        if s
    ]
    if name == "flaky_tool_breaker":
        assert moves == ["open", "half_open", "closed"]
        assert board.count('class="loopnb-breaker-step"') == 1 + 3 + 1  # closed → three moves; the model's
    view.close()


def test_the_board_counts_failures_before_any_transition():
    outcome = scenarios.get("flaky_tool_breaker").run()
    model = ViewModel()
    counts = []
    for event in outcome.events:
        model.apply(event)
        if event.kind == "turn_finished":
            counts.append(model.snapshot(with_turns=False).breaker_by_name["service_status"].failures)
    assert counts[:2] == [1, 2]  # the breaker opens at 2: its first failure is on the board too
    html_ = board_html(model.snapshot())
    assert re.search(r'>t2</span> <svg [^>]*aria-label="hard".*?</svg>open</span>', html_)
    assert "half-open" in html_
