"""What the live view keeps of each turn: plain values, out of the cyclic garbage collector's way.

A long run's turns used to stay alive in the view as whole ``Turn`` objects (each with its lists and
events), held by its ``TurnView`` and again by the usage ledger: every full collection walked them
all, which was most of what watching a run cost (issue #30). Now a turn's view holds strings,
numbers and tuples of them, which the collector does not track, and the one store of the run's
events its inspector reads the turn back from, equal to the turn it was folded from.
"""

from __future__ import annotations

import gc
from collections import Counter
from dataclasses import fields, replace
from typing import Any

import pytest

from loopnb import Engine, ScriptedModel, ToolCall, tool
from loopnb.engine import Turn
from loopnb.engine._turns import turns_of
from loopnb.notebook import LiveView, ViewModel
from loopnb.notebook._markup import inspector_html
from loopnb.notebook._state import TurnView

TURNS = 300


@tool
def echo(i: int) -> str:
    """Echo a number."""
    return str(i)


def run_events(turns: int) -> list[Any]:
    """``turns`` turns of ``echo``, every tenth a soft registry miss, then an answer."""
    steps: list[Any] = [ToolCall("ech0" if i % 10 == 9 else "echo", {"i": i}) for i in range(turns - 1)]
    events: list[Any] = []
    Engine(ScriptedModel([*steps, "done"]), [echo], observers=[events.append]).run("count")
    return events


@pytest.fixture(scope="module")
def events() -> list[Any]:
    return run_events(TURNS)


def tracked_by_type() -> Counter[type]:
    gc.collect()  # tuples of untracked values leave the collector's lists at a collection
    return Counter(type(o) for o in gc.get_objects())


def test_a_turns_view_keeps_nothing_the_collector_walks_but_the_runs_one_store(events):
    state = ViewModel.fold(events)
    gc.collect()
    assert len(state.turns) == TURNS
    # shared by the turns: the run's one store, and the board while no breaker moves
    assert len({id(t.source) for t in state.turns}) == 1
    assert len({id(t.board) for t in state.turns}) == 1
    for t in state.turns:
        for f in fields(TurnView):
            value = getattr(t, f.name)
            assert not isinstance(value, Turn), (t.turn, f.name)
            if f.name not in ("source", "board"):
                assert not gc.is_tracked(value), (t.turn, f.name, value)


def test_folding_a_run_leaves_one_tracked_object_a_turn_and_no_turn_alive(events):
    ViewModel.fold(events)  # whatever a first fold imports or caches, before counting
    before = tracked_by_type()
    model = ViewModel().extend(events)
    state = model.snapshot()
    after = tracked_by_type()
    grown = after - before
    assert grown[Turn] <= 1  # at most the one the inspector last read back
    assert grown[TurnView] == TURNS
    assert sum(grown.values()) < TURNS + 100, grown.most_common(8)  # a TurnView a turn, and a few
    assert state.usage.turns == TURNS  # the usage ledger counts every turn all the same


def test_the_live_view_keeps_no_turn_either(events):
    view = LiveView(max_fps=50, first_frame=60.0)
    try:
        before = tracked_by_type()
        for event in events:
            view(event)
        after = tracked_by_type()
        assert view.finished and len(view.state.turns) == TURNS
        grown = after - before
        assert grown[Turn] <= 1
        assert sum(grown.values()) < TURNS + 400, grown.most_common(8)
    finally:
        view.close()


def test_the_inspector_reads_back_the_very_turn_it_was_folded_from(events):
    state = ViewModel.fold(events)
    turns = turns_of(events)
    assert [t.event for t in state.turns] == turns
    soft = state.turns[9]
    assert soft.channel == "soft" and soft.calls[0].name == "ech0" and soft.read[0].is_error
    assert soft.error_text == turns[9].error_text and "ech0" in str(inspector_html(soft))
    assert [t.latency_ms for t in state.turns] == [t.latency_ms for t in turns]
    assert [t.injected for t in state.turns] == [t.injected for t in turns]


def test_views_compare_by_what_the_model_read_not_by_where_it_is_kept(events):
    live = LiveView(max_fps=50, first_frame=60.0)
    try:
        for event in events:
            live(event)
        folded = ViewModel.fold(events).turns
        assert live.state.turns == folded  # each its own store, the same turns read back
    finally:
        live.close()
    first, second = folded[0], folded[1]
    moved = replace(first, begin=second.begin, end=second.end)  # the first's values, the second's events
    assert moved != first and moved.event == second.event
