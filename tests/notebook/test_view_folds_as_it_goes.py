"""The live view folds each event as it comes, and draws whatever it holds at the bounded rate.

Whenever it is drawn, and whatever events a redraw found waiting, what it shows is what the batch
functions give for the same events: ``ViewModel.fold`` of the saved run, the replay's ``Frames``
at each turn, and the public frames each pane is drawn from (``flow_counts``,
``recovery_attempts``, ``breaker_history``, the turns frame, ``audit(...).usage()``). Checked
for every built-in scenario (soft errors, hard endings, breakers, a fallback chain), for faults
injected into tools and into a model, and for a run long enough to cross the usage ledger's
checkpoints; and that the final draw is left one turn's events at most to fold.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable, Iterable
from typing import Any

import pandas as pd
import pytest

import loopnb
from loopnb import (
    CircuitBreaker,
    Engine,
    FakeClock,
    FallbackChain,
    LoopError,
    ModelReply,
    ScriptedModel,
    ToolCall,
    Usage,
    faults,
    inject,
    load,
    scenarios,
    tool,
)
from loopnb.analysis._usage import UsageLedger
from loopnb.notebook import LiveView, ViewModel
from loopnb.notebook._replay import Frames
from loopnb.notebook._state import ViewState
from loopnb.record import Recorder

Run = Callable[[list[Any]], None]
"""Runs something with these observers attached (a hard ending is caught)."""


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


def _scenario(name: str, **kwargs: Any) -> Run:
    def run(observers: list[Any]) -> None:
        scenarios.get(name).run(observers=observers, **kwargs)

    return run


def _engine(make: Callable[[], Engine]) -> Run:
    def run(observers: list[Any]) -> None:
        engine = make()
        for observer in observers:
            engine.subscribe(observer)
        with contextlib.suppress(LoopError):
            engine.run("go")

    return run


def _model_fault() -> Engine:
    """The primary model fails its first two requests (injected): the backup answers."""
    calls = [ToolCall("read_file", {"path": p}) for p in ("a", "b")]
    primary = inject(ScriptedModel([*calls, "done"], name="primary"), faults.error("503 <busy>").first(2))
    backup = ScriptedModel([calls[0], "done"], name="backup")
    chain = FallbackChain([primary, backup], breaker=CircuitBreaker(failure_threshold=2, cooldown=5))
    return Engine(chain, [read_file], clock=FakeClock())


LONG = 2 * UsageLedger.EVERY + 41


def _long_with_tokens() -> Engine:
    """A run past two usage checkpoints, its model reporting tokens on most turns."""
    replies = [
        ModelReply(
            tool_calls=(ToolCall("read_file" if i % 9 else "read_fiel", {"path": str(i)}),),
            usage=None if i % 7 == 3 else Usage(10 + i, 3),
        )
        for i in range(LONG - 1)
    ]
    return Engine(ScriptedModel([*replies, "done"]), [read_file], clock=FakeClock())


RUNS: dict[str, Run] = {
    **{name: _scenario(name) for name in scenarios.names()},
    "tool_faults": _scenario("mistyped_path", faults={"read_file": "error('disk <busy>').first(2)"}),
    "breaker_faults": _scenario(
        "flaky_tool_breaker", faults={"service_status": "error('down').sometimes(0.5)"}
    ),
    "model_fault": _engine(_model_fault),
    "long_with_tokens": _engine(_long_with_tokens),
}


class Probe:
    """Subscribed after the view: redraws it now and then (as its painter would, at moments the
    run does not choose), and keeps the view's state as each turn ends."""

    def __init__(self, view: LiveView, seed: int, every: float) -> None:
        self.view, self.rng, self.every = view, random.Random(seed), every
        self.at_turn: dict[int, ViewState] = {}
        self.waiting: list[int] = []  # how many events a redraw found not yet folded

    def __call__(self, event: Any) -> None:
        if self.rng.random() < self.every:
            self.waiting.append(len(self.view._pending))
            self.view.draw()
        if event.kind == "turn_finished":  # what the view has folded by itself (``model`` would catch up)
            self.at_turn[event.turn] = self.view._model.snapshot()


def watched(
    name: str, tmp_path: Any, *, seed: int = 0, every: float | None = None
) -> tuple[LiveView, Probe, Recorder, list[Any]]:
    """Run ``RUNS[name]`` with a recorder, a live view and a probe redrawing it after the view
    took an event, with chance ``every``; the view, the probe, the recorder and the events read
    back from the saved recording."""
    view = LiveView(first_frame=60.0)  # no painter redraw: the probe redraws, at seeded moments
    every = every if every is not None else 0.02 if name == "long_with_tokens" else 0.3
    probe, rec = Probe(view, seed, every), Recorder()
    RUNS[name]([rec, view, probe])
    loaded = load(rec.save(tmp_path / f"run{seed}.jsonl")).event_objects
    return view, probe, rec, loaded


def _panes(state: ViewState) -> tuple[object, ...]:
    """What the panes show of a turn. A breaker's cooldown is known from its first transition
    on, and the replay knows it from the start: that field alone is left out."""
    board = tuple((b.name, b.state, b.failures, b.cooldown_left, b.history) for b in state.breakers)
    return (
        state.lit, state.lit_turn, state.lit_channel, state.lit_producer, state.edge_counts,
        state.gauge, board, state.usage,
    )  # fmt: skip


def _values(column: Iterable[Any]) -> list[Any]:
    return [None if v is pd.NA or (isinstance(v, float) and v != v) else v for v in column]


@pytest.mark.parametrize("name", list(RUNS))
def test_the_view_folded_event_by_event_equals_the_batch_fold_and_the_replay_at_every_turn(name, tmp_path):
    view, probe, _rec, loaded = watched(name, tmp_path)
    final = ViewModel.fold(loaded)
    assert view.model.snapshot() == final
    frames = Frames(loaded)
    assert sorted(probe.at_turn) == list(range(1, frames.count + 1))
    ends = [i + 1 for i, e in enumerate(loaded) if e.kind == "turn_finished"]
    every = UsageLedger.EVERY
    for k, live in probe.at_turn.items():
        if k < 40 or k % 50 == 0 or k % every in (0, 1, every - 1) or k > frames.count - 3:
            assert live == ViewModel.fold(loaded[: ends[k - 1]]), k  # the batch fold of those events
        assert live.turns == final.turns[:k], k
        if k < frames.count:  # the panes as turn k ended (the replay keeps the later turns, greyed)
            assert _panes(live) == _panes(frames(k)), k
    assert view.finished and view.state == frames.final


@pytest.mark.parametrize("name", list(RUNS))
def test_each_pane_shows_its_public_frame(name, tmp_path):
    view, _probe, rec, _loaded = watched(name, tmp_path)
    state = view.model.snapshot()
    assert state.edge_counts == tuple(loopnb.flow_counts(rec)["count"])  # the decision flow
    turns = rec.turns  # the timeline and the inspector
    assert [(t.turn, t.channel, t.producer, t.model, t.latency_ms) for t in state.turns] == list(
        zip(*(_values(turns[c]) for c in ("turn", "channel", "producer", "model", "latency_ms")), strict=True)
    )
    calls = loopnb.recovery_attempts(rec)  # the gauge, per call
    assert [
        (t.turn, c.call_id, c.tool, c.retries, c.outcome) for t in state.turns for c in t.recovery
    ] == list(
        zip(*(_values(calls[c]) for c in ("turn", "call_id", "tool", "retries", "outcome")), strict=True)
    )
    history = loopnb.breaker_history(rec)  # the board, per breaker and turn
    board = {
        (t.turn, name): (st, failures, left) for t in state.turns for name, st, failures, left in t.board
    }
    cells = zip(
        *(_values(history[c]) for c in ("turn", "breaker", "state", "failures", "cooldown_left")), strict=True
    )
    assert board == {(turn, name): (st, failures, left) for turn, name, st, failures, left in cells}
    usage = loopnb.audit(rec).usage()  # the header's tokens
    assert (state.usage.turns, state.usage.input_tokens, state.usage.output_tokens) == tuple(
        _values(usage[c])[0] for c in ("turns", "input_tokens", "output_tokens")
    )


@pytest.mark.parametrize("name", ["stubborn_loop", "flaky_tool_breaker", "model_fault", "long_with_tokens"])
def test_the_live_panes_are_drawn_as_the_batch_state_draws_them(name, tmp_path):
    view, _probe, _rec, loaded = watched(name, tmp_path)
    batch = LiveView()
    batch.draw(ViewModel.fold(loaded))
    for widget in ("header", "status", "flow", "timeline", "gauge", "board", "inspector"):
        assert getattr(view, widget).value == getattr(batch, widget).value, widget
    assert (view.slider.max, view.slider.value) == (batch.slider.max, batch.slider.value)
    view.close()
    batch.close()


@pytest.mark.parametrize("seed", range(6))
def test_whenever_it_is_redrawn_the_final_state_is_the_same(seed, tmp_path):
    name = "long_with_tokens" if seed % 2 else "flaky_tool_breaker"
    view, probe, _rec, loaded = watched(name, tmp_path, seed=seed, every=[0.0, 0.01, 1.0, 0.05][seed % 4])
    assert view.model.snapshot() == ViewModel.fold(loaded)
    assert all(waiting < 8 for waiting in probe.waiting)  # a redraw folds a turn's events at most


def test_the_final_draw_has_one_turns_events_at_most_to_fold(tmp_path):
    events: list[Any] = []
    RUNS["long_with_tokens"]([events.append])
    view = LiveView(first_frame=60.0)
    for event in events[:-1]:
        view(event)
    assert view._pending == []  # every finished turn is folded already; only run_finished remains
    assert view._model.turns_finished == LONG
    view(events[-1])
    assert view.finished and view.state.run.phase == "ok" and len(view.state.turns) == LONG


def test_each_turns_view_is_made_as_the_turn_ends_and_a_redraw_makes_none(monkeypatch):
    from loopnb.analysis import _usage
    from loopnb.notebook import _viewmodel

    made, priced = [], []
    turn_view, turn_usage = _viewmodel.turn_view, _usage.turn_usage
    monkeypatch.setattr(_viewmodel, "turn_view", lambda *a: made.append(a[0].turn) or turn_view(*a))
    monkeypatch.setattr(_usage, "turn_usage", lambda *a, **kw: priced.append(a[4]) or turn_usage(*a, **kw))
    events: list[Any] = []
    RUNS["long_with_tokens"]([events.append])
    model, ends = ViewModel(), 0
    for event in events:
        model.apply(event)
        ends += event.kind == "turn_finished"
        assert len(made) == ends  # made as its turn ends
    every = UsageLedger.EVERY
    started = [t.started_at for t in loopnb.turns_of(events)]  # what each priced turn is priced as of
    assert priced == started[: LONG // every * every]  # priced in hundreds, once each
    model.snapshot()
    model.snapshot()
    assert len(made) == LONG and made == sorted(made)
    assert len(priced) == LONG // every * every + 2 * (LONG % every)  # the totals since the last checkpoint
