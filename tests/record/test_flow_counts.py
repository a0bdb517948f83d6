"""``flow_counts``: the decision flow's arrows counted once, by the rule the live view counts with.

The invariants are checked against an independent count (soft turns, soft streaks, how each run
ended) for every built-in scenario and for generated runs; the view's edge counts after folding
the same events equal the frame's.
"""

from __future__ import annotations

from itertools import pairwise

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import loopnb
from loopnb import Engine, FallibleModel, ToolCall, ToolError, scenarios, tool
from loopnb.analysis import flow_counts
from loopnb.analysis._flowchart import EDGES, WATCH_STOPS
from loopnb.engine._errors import HARD_PRODUCERS, SOFT_PRODUCERS
from loopnb.engine._events import Event, RunFinished, RunStarted, TurnFinished, TurnStarted
from loopnb.notebook import ViewModel
from loopnb.notebook._viewmodel import runs_of
from loopnb.record import Recorder

NOTHING_TO_ADAPT_TO = ("cancelled", "context_exceeded", "fallback_exhausted")

Run = tuple[list[tuple[str, str | None]], str | None]
"""A run: its ok/soft turns as (channel, producer), and the producer of its hard ending (or None)."""


def expected(runs: list[Run]) -> dict[str, int]:
    """The counts the invariants demand, counted from the runs directly."""
    soft = sum(channel == "soft" for turns, _ in runs for channel, _ in turns)
    ceiling = sum(end == "tool_recovery_exhausted" for _, end in runs)  # soft branch, then watch
    streaks = 0
    for turns, _ in runs:
        channels = [c for c, _ in turns]
        streaks += sum(a == "soft" and b == "ok" for a, b in pairwise(channels))
    watch = sum(end in WATCH_STOPS for _, end in runs)
    nothing = sum(end in NOTHING_TO_ADAPT_TO for _, end in runs)
    return {
        "failed-adapt": soft + ceiling + nothing,
        "adapt-soft": soft + ceiling,
        "soft-model": soft,
        "model-next": soft,
        "next-watch": soft,
        "soft-watch": ceiling,  # the recovery ceiling's turn: the model never read its failures
        "next-ok": streaks,
        "watch-hard2": watch,
        "adapt-hard": nothing,
        "hard-finalize": nothing,
        "hard2-finalize": watch,
    }


def counts(frame: pd.DataFrame) -> dict[str, int]:
    return dict(zip(frame["edge"], frame["count"].tolist(), strict=True))


def assert_invariants(c: dict[str, int]) -> None:
    assert c["adapt-soft"] == c["soft-model"] + c["soft-watch"]  # what enters soft leaves it
    assert c["soft-model"] == c["model-next"] == c["next-watch"]
    assert c["failed-adapt"] == c["adapt-soft"] + c["adapt-hard"]
    assert c["adapt-hard"] == c["hard-finalize"] and c["watch-hard2"] == c["hard2-finalize"]
    assert c["next-ok"] <= c["model-next"]


def events_of(runs: list[Run]) -> list[Event]:
    """The events an engine would emit for ``runs``: starts, turns, ends (nothing else)."""
    events: list[Event] = []
    for r, (turns, end) in enumerate(runs):
        run_id, seq = f"run-{r}", iter(range(10_000))
        events.append(RunStarted(seq=next(seq), run_id=run_id, at=0.0, task="t", system=None,
                                 models=("m",), tools=(), advertised=()))  # fmt: skip
        numbered = [*turns, ("hard", end)] if end is not None and turns else turns
        for n, (channel, producer) in enumerate(numbered, 1):
            events.append(TurnStarted(seq=next(seq), run_id=run_id, at=float(n), turn=n))
            finished = TurnFinished(seq=next(seq), run_id=run_id, at=float(n), turn=n, channel=channel,
                                    producer=producer, dropped=channel == "hard")  # fmt: skip
            events.append(finished)
        outcome = "hard" if end else "ok"
        events.append(RunFinished(seq=next(seq), run_id=run_id, at=99.0, outcome=outcome,
                                  turns=len(numbered), producer=end))  # fmt: skip
    return events


def view_counts(events: list[Event]) -> dict[str, int]:
    """The view's edge counts, one fold per run, summed."""
    total = dict.fromkeys((e.id for e in EDGES), 0)
    for run in runs_of(events).values():
        state = ViewModel.fold(run)
        for edge in EDGES:
            total[edge.id] += state.edge_count(edge.id)
    return total


def recorded(*events: Event) -> Recorder:
    recorder = Recorder()
    for event in events:
        recorder(event)
    return recorder


# -- the frame ----------------------------------------------------------------------------------


def test_one_row_per_edge_of_the_chart_in_its_order():
    recorder = Recorder()
    scenarios.get("mistyped_path").run(observers=[recorder])
    frame = flow_counts(recorder)
    assert list(frame.columns) == ["edge", "source", "target", "label", "count"]
    assert list(frame["edge"]) == [e.id for e in EDGES]
    assert list(zip(frame["source"], frame["target"], strict=True)) == [(e.source, e.target) for e in EDGES]
    assert set(frame["source"]) | set(frame["target"]) == {
        "failed", "adapt", "soft", "model", "next", "watch", "ok", "hard2", "hard", "finalize",
    }  # fmt: skip
    assert frame["count"].dtype == "int64"


def test_a_run_of_ok_turns_counts_nothing():
    recorder = Recorder()
    scenarios.get("recovery_success").run(observers=[recorder])
    assert set(recorder.turns["channel"].astype(str)) == {"ok"}
    assert flow_counts(recorder)["count"].sum() == 0


def test_recording_recorder_and_turns_frame_count_alike():
    recorder = Recorder()
    scenarios.get("panicking_tool").run(observers=[recorder])
    by_recorder = counts(flow_counts(recorder))
    assert counts(flow_counts(recorder.recording())) == by_recorder
    assert counts(flow_counts(recorder.turns)) == by_recorder
    assert counts(loopnb.flow_counts(recorder.turns.iloc[::-1])) == by_recorder  # turn order, not row order


def test_runs_are_told_apart_by_source_as_well():
    row = {"run_id": "r", "turn": 1, "channel": "soft", "producer": "tool_error"}
    ok = {**row, "turn": 2, "channel": "ok", "producer": None}
    frame = pd.DataFrame([{**row, "source": "a"}, {**row, "source": "b"}, {**ok, "source": "b"}])
    c = counts(flow_counts(frame))
    assert c["adapt-soft"] == 2 and c["next-ok"] == 1  # a's soft turn is not followed by b's ok one


def test_a_run_that_ended_hard_before_any_turn_is_counted_from_its_events():
    events = events_of([([], "cancelled")])  # RunStarted, then RunFinished(hard, turns=0)
    recorder = recorded(*events)
    assert len(recorder.turns) == 0
    c = counts(flow_counts(recorder))
    assert c["failed-adapt"] == c["adapt-hard"] == c["hard-finalize"] == 1 and sum(c.values()) == 3
    assert c == view_counts(events)
    assert sum(counts(flow_counts(recorder.turns)).values()) == 0  # a turns frame alone cannot tell


def test_what_is_not_a_turns_source_is_refused_by_name():
    with pytest.raises(TypeError, match="Recording, a Recorder or a turns DataFrame; got list"):
        flow_counts([])
    recorder = Recorder()
    scenarios.get("mistyped_path").run(observers=[recorder])
    with pytest.raises(ValueError, match=r"missing columns channel, producer.*looks like an events frame"):
        flow_counts(recorder.events.drop(columns=["channel", "producer"]))
    with pytest.raises(ValueError, match="a turn's channel is nan"):
        flow_counts(
            pd.DataFrame({"run_id": ["r"], "turn": [1], "channel": [float("nan")], "producer": [None]})
        )


# -- what was seen in the view --------------------------------------------------------------------


def scenario_counts(name: str) -> dict[str, int]:
    recorder = Recorder()
    scenarios.get(name).run(observers=[recorder])
    return counts(flow_counts(recorder))


def test_fallback_chain_recovered_nothing_when_nothing_was_soft():
    c = scenario_counts("fallback_chain")
    assert c["next-ok"] == 0 and c["adapt-soft"] == 0
    assert c["adapt-hard"] == c["hard-finalize"] == 1


def test_the_recovery_ceiling_shows_that_something_failed():
    c = scenario_counts("recovery_ceiling")
    assert c["failed-adapt"] >= 1
    assert c["watch-hard2"] == c["hard2-finalize"] == 1 and c["adapt-hard"] == 0


@tool
def read_file(path: str) -> str:
    """Read a UTF-8 text file."""
    if path != "src/main.rs":
        raise ToolError(f"file {path} not found")
    return "fn main() {}"


def test_notebook_01s_single_slip_recovered_once():
    model = FallibleModel([ToolCall("read_file", {"path": "src/main.rs"})], answer="done",
                          mistakes=("typo",), seed=7)  # fmt: skip
    recorder = Recorder()
    events: list[Event] = []
    Engine(model, tools=[read_file], observers=[recorder, events.append]).run("What does src/main.rs do?")
    assert list(recorder.turns["channel"].astype(str)) == ["soft", "ok", "ok"]
    c = counts(flow_counts(recorder))
    assert c["next-ok"] == 1 and c["adapt-soft"] == 1
    assert view_counts(events) == c


def test_the_lit_path_is_the_turns_own():
    recorder = Recorder()
    outcome = scenarios.get("panicking_tool").run(observers=[recorder])  # soft, soft, ok, ok
    model, lit = ViewModel(), []
    for event in outcome.events:
        model.apply(event)
        if event.kind == "turn_finished":
            lit.append(model.snapshot(with_turns=False).lit)
    soft = ("failed-adapt", "adapt-soft", "soft-model", "model-next", "next-watch")
    assert lit == [soft, soft, ("next-ok",), ()]


# -- every scenario, and generated runs -----------------------------------------------------------


def runs_of_scenario(outcome: scenarios.Outcome) -> list[Run]:
    turns = [(t.channel, t.producer) for t in outcome.turns]
    ok_or_soft = [(c, p) for c, p in turns if c != "hard"]
    return [(ok_or_soft, None if outcome.error is None else outcome.error.producer)]


@pytest.mark.parametrize("name", scenarios.names())
def test_every_scenario_counts_by_the_invariants_and_the_view_agrees(name):
    recorder = Recorder()
    outcome = scenarios.get(name).run(observers=[recorder])
    c = counts(flow_counts(recorder.recording()))
    assert_invariants(c)
    assert c == expected(runs_of_scenario(outcome))
    assert tuple(c.values()) == ViewModel.fold(outcome.events).edge_counts


def test_every_scenario_in_one_recording_sums_the_runs():
    recorder, events = Recorder(), []
    for name in scenarios.names():
        scenarios.get(name).run(observers=[recorder, events.append])
    c = counts(flow_counts(recorder))
    assert c == view_counts(events)
    assert c == {k: sum(scenario_counts(n)[k] for n in scenarios.names()) for k in c}


turn = st.one_of(
    st.just(("ok", None)),
    st.tuples(st.just("soft"), st.sampled_from(sorted(SOFT_PRODUCERS))),
)
runs = st.lists(
    st.tuples(st.lists(turn, max_size=12), st.one_of(st.none(), st.sampled_from(sorted(HARD_PRODUCERS)))),
    min_size=1,
    max_size=5,
)


@settings(max_examples=150, deadline=None)
@given(runs)
def test_generated_runs_count_by_the_invariants_in_the_frame_and_in_the_view(generated):
    events = events_of(generated)
    recorder = recorded(*events)
    c = counts(flow_counts(recorder))
    assert_invariants(c)
    assert c == expected(generated)
    assert c == view_counts(events)
    if all(end is None for _, end in generated) and all(ch == "ok" for t, _ in generated for ch, _ in t):
        assert sum(c.values()) == 0
