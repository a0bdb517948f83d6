"""The view model, without widgets: lit paths, edge counts, the gauge, the board, the inspector."""

from __future__ import annotations

import json

import pytest

from loopnb import EVENT_ADAPTER, load
from loopnb.analysis._flowchart import EDGES, NODES, nodes_on, path_of
from loopnb.engine import MAX_RECOVERY_ATTEMPTS
from loopnb.engine._errors import HARD_PRODUCERS, SOFT_PRODUCERS
from loopnb.notebook import ViewModel
from loopnb.notebook._replay import Frames
from loopnb.notebook._state import ViewState
from loopnb.notebook._viewmodel import runs_of
from loopnb.record import Recorder
from tests.notebook import scenarios as S
from tests.notebook.conftest import run_events

SOFT_PATH = ("failed-adapt", "adapt-soft", "soft-model", "model-next", "next-watch")
HARD_PATH = ("failed-adapt", "adapt-hard", "hard-finalize")
WATCH_PATH = ("watch-hard2", "hard2-finalize")


def test_the_chart_is_the_specs():
    assert [n.id for n in NODES] == [
        "failed", "adapt", "soft", "model", "next", "watch", "ok", "hard2", "hard", "finalize",
    ]  # fmt: skip
    ids = {n.id for n in NODES}
    assert all(e.source in ids and e.target in ids for e in EDGES)
    labelled = {e.id: e.label for e in EDGES if e.label}
    assert labelled == {
        "adapt-soft": "yes",
        "next-ok": "model recovered on its own",
        "watch-hard2": "repeated past a threshold",
        "adapt-hard": "no: nothing to adapt to",
        "soft-watch": "recovery retried it to the ceiling",  # loopnb's, not the spec's: see below
    }


def test_a_recovery_exhausted_turn_never_passes_through_the_model_reading_it():
    """Notebook 03's one-turn ToolRecoveryExhausted run: the inspector says the model never read
    the failure, so the flow must not count "the model reads the failure and adapts" for it."""
    path = path_of("hard", "tool_recovery_exhausted")
    assert nodes_on(path) == ("failed", "adapt", "soft", "watch", "hard2", "finalize")
    assert "soft-model" not in path and "model-next" not in path


def test_only_an_ok_turn_after_a_soft_one_takes_the_recovered_edge():
    assert path_of("ok", None, after_soft=True) == ("next-ok",)
    assert nodes_on(path_of("ok", None, after_soft=True)) == ("next", "ok")
    assert path_of("ok", None) == ()


@pytest.mark.parametrize("producer", SOFT_PRODUCERS)
def test_every_soft_producer_takes_the_soft_branch_to_the_watchers(producer):
    assert path_of("soft", producer) == SOFT_PATH
    assert nodes_on(SOFT_PATH) == ("failed", "adapt", "soft", "model", "next", "watch")


@pytest.mark.parametrize(
    ("producer", "path"),
    [
        ("cancelled", HARD_PATH),
        ("context_exceeded", HARD_PATH),
        ("fallback_exhausted", HARD_PATH),
        ("loop_detected", WATCH_PATH),
        ("user_input_required", WATCH_PATH),
        ("tool_recovery_exhausted", ("failed-adapt", "adapt-soft", "soft-watch", *WATCH_PATH)),
    ],
)
def test_hard_producers_end_at_finalize_by_their_own_door(producer, path):
    assert path_of("hard", producer) == path
    assert path[-1].endswith("finalize")


def test_every_hard_producer_is_mapped():
    assert {p for p in HARD_PRODUCERS if path_of("hard", p)} == set(HARD_PRODUCERS)


def test_unknown_channel_is_an_error():
    with pytest.raises(ValueError, match="unknown channel"):
        path_of("maybe", None)


def test_typo_run_lights_each_turn_and_counts_edges():
    events, result = run_events(S.typo())
    model = ViewModel()
    lit = []
    for event in events:
        model.apply(event)
        if event.kind == "turn_finished":
            lit.append(model.snapshot().lit)
    assert lit == [SOFT_PATH, ("next-ok",), ()]
    state = model.snapshot()
    assert state.edge_count("adapt-soft") == 1
    assert state.edge_count("next-ok") == 1
    assert state.edge_count("adapt-hard") == 0
    assert state.run.phase == "ok" and state.run.output == result.output
    assert [t.channel for t in state.turns] == ["soft", "ok", "ok"]


def test_loop_detection_lights_watch_hard2_finalize():
    events, err = run_events(S.looping())
    state = ViewModel.fold(events)
    assert type(err).__name__ == "LoopDetected"
    assert state.lit == WATCH_PATH and state.lit_channel == "hard"
    assert state.edge_count("next-watch") == 5  # five soft turns reached the watchers
    assert state.edge_count("watch-hard2") == 1
    assert state.run.phase == "hard" and state.run.error == "LoopDetected"
    assert state.turns[-1].dropped and state.turns[-1].error == "LoopDetected"


def test_cancel_takes_the_no_branch():
    events, err = run_events(S.cancelled())
    state = ViewModel.fold(events)
    assert type(err).__name__ == "Cancelled"
    assert state.lit == HARD_PATH
    assert state.run.error == "Cancelled" and "pressed stop" in state.run.message


def test_gauge_counts_retries_of_the_call():
    events, _ = run_events(S.recovered(retries=2))
    model = ViewModel()
    seen = []
    for event in events:
        model.apply(event)
        if event.kind in ("tool_dispatched", "recovery_decided"):
            g = model.snapshot(with_turns=False).gauge
            seen.append((g.attempt, g.status))
    assert seen == [(0, "failed"), (0, "retrying"), (1, "failed"), (1, "retrying"), (2, "ok")]
    state = ViewModel.fold(events)
    first = state.turn(1).gauge
    assert (first.tool, first.attempt, first.status, first.max_attempts) == ("flaky_tool", 2, "ok", 5)
    assert not first.at_wall and first.recovered_by and first.turn == 1
    last = state.gauge  # the final reply's turn: no call, and the gauge says so
    assert state.turn(2).gauge == last and last.turn == 2 and last.tool is None
    assert last.lines()[:2] == ("turn 2 · recovery", "no call dispatched this turn")


def test_gauge_hits_the_wall_at_the_sixth_retry():
    events, err = run_events(S.exhausted())
    assert type(err).__name__ == "ToolRecoveryExhausted"
    g = ViewModel.fold(events).gauge
    assert g.attempt == MAX_RECOVERY_ATTEMPTS + 1 == 6
    assert g.at_wall and g.status == "exhausted"
    attempts = [e.attempt for e in events.of("tool_dispatched")]
    assert attempts == [0, 1, 2, 3, 4, 5]


def test_gauge_when_recovery_gives_up():
    events, _ = run_events(S.gave_up())
    g = ViewModel.fold(events).turn(1).gauge
    assert (g.attempt, g.status, g.decision) == (1, "gave_up", "skip")
    assert g.lines()[1].endswith("1 of 5 retries · recovery gave up (skip)")


def test_gauge_is_idle_before_any_tool_call():
    events, _ = run_events(S.fallback_exhausted())
    g = ViewModel.fold(events).gauge
    assert g.tool is None and g.status == "idle" and g.attempt == 0


def test_breaker_board_follows_transitions_with_cooldown_left():
    engine, task, _clock = S.breaker()
    events, _ = run_events((engine, task))
    frames = Frames(events)
    states = [frames(k).breaker_by_name["flaky_tool"] for k in range(frames.count + 1)]
    assert [b.state for b in states] == ["closed", "closed", "open", "open", "closed", "closed"]
    assert states[2].cooldown_left == 10.0 and states[2].cooldown == 10.0
    assert states[0].scope == "tool"
    assert frames.final.breaker_by_name["planner"].scope == "model"
    transitions = [(e.previous, e.state) for e in events.of("breaker_transitioned")]
    assert ("open", "half_open") in transitions and ("half_open", "closed") in transitions


def test_breaker_board_lists_every_model_of_the_chain():
    events, _ = run_events(S.fallback())
    state = ViewModel.fold(events)
    board = {b.name: (b.scope, b.state) for b in state.breakers}
    assert board == {"primary": ("model", "open"), "backup": ("model", "closed")}
    assert state.breaker_by_name["primary"].cooldown_left == 30.0


def test_inspector_holds_exactly_what_the_model_read():
    events, result = run_events(S.payload())
    state = ViewModel.fold(events)
    first = state.turn(1)
    assert first.calls[0].name == "fetch" and json.loads(first.calls[0].arguments) == {"url": S.PAYLOAD}
    assert [r.text for r in first.read] == [result.tool_results[0].content]
    assert first.read[0].is_error and first.read[0].producer == "tool_error"
    second = state.turn(2)
    assert second.calls[0].name == S.PAYLOAD
    assert second.read[0].text == f"tool '{S.PAYLOAD}' is not available"
    last = state.turn(4)
    assert last.reply_text == result.output and last.read == ()


def test_parity_live_and_loaded(tmp_path):
    engine, task = S.payload()
    recorder = Recorder()
    live = ViewModel()
    engine.subscribe(recorder)
    engine.subscribe(live.apply)
    engine.run(task)
    path = recorder.save(tmp_path / "run.jsonl")
    loaded = load(path).event_objects
    assert ViewModel.fold(loaded) == live.snapshot()
    parquet = recorder.save(tmp_path / "run.parquet")
    assert ViewModel.fold(load(parquet).event_objects) == live.snapshot()


@pytest.mark.parametrize("scenario", ["typo", "exhausted", "looping", "fallback", "cancelled", "payload"])
def test_parity_at_every_turn(scenario):
    events, _ = run_events(getattr(S, scenario)())
    roundtrip = [EVENT_ADAPTER.validate_json(EVENT_ADAPTER.dump_json(e)) for e in events]
    frames = Frames(roundtrip)
    model = ViewModel()
    k = 0
    assert frames.count == len(events.of("turn_finished"))
    for event in events:
        model.apply(event)
        if event.kind == "turn_finished":
            k += 1
            if k < frames.count:  # the panes as turn k ended; the later turns stay (greyed)
                assert _panes(frames(k)) == _panes(model.snapshot())
                assert frames(k).selected == k and frames(k).turns == frames.final.turns
    assert frames.final == model.snapshot()


def _panes(state: ViewState) -> tuple[object, ...]:
    return (state.lit, state.lit_turn, state.lit_channel, state.edge_counts, state.gauge, state.breakers)


def test_a_new_run_starts_over_and_runs_split():
    events_a, _ = run_events(S.typo())
    events_b, _ = run_events(S.looping())
    model = ViewModel().extend([*events_a, *events_b])
    assert model.snapshot() == ViewModel.fold(events_b)
    assert list(runs_of([*events_a, *events_b])) == [events_a[0].run_id, events_b[0].run_id]


def test_foreign_events_are_ignored():
    events_a, _ = run_events(S.typo())
    events_b, _ = run_events(S.looping())
    mixed = [events_a[0], *events_b[1:3], *events_a[1:]]
    assert ViewModel.fold(mixed) == ViewModel.fold(events_a)


def test_empty_state():
    state = ViewModel().snapshot()
    assert state == ViewState()
    assert state.run.phase == "waiting" and state.lit == () and sum(state.edge_counts) == 0
    assert state.turn(1) is None
