"""``compare`` at scale (issue 30, item 4): the column-at-a-time paths give exactly what the
straightforward row-by-row code gives (``compare_reference``), on generated runs and frames, and
what a comparison shows (its page, its picture, its widget, its text) stays bounded in size
however long the runs. No timing is asserted: ``benchmarks/bench_compare.py`` measures."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import loopnb
from loopnb import ModelReply, ToolCall, scenarios
from loopnb.analysis._align import align
from loopnb.analysis._breakers import breakers_from_turns
from loopnb.analysis._compare import calls_by_turn, calls_text
from loopnb.analysis._flows import flow_counts
from loopnb.analysis._history import _recovery_runs
from loopnb.engine import turns_of
from loopnb.record import TURNS
from loopnb.record._frames import conform
from tests.record import compare_reference as reference
from tests.record.test_compare import RIGHT, TYPO, read_file, read_file_crashes, read_file_lenient, record

OTHER = ToolCall("read_file", {"path": "Cargo.toml"})
STEPS = [TYPO, RIGHT, OTHER, ModelReply(tool_calls=(TYPO, OTHER)), "It prints nothing."]
PRODUCERS = (None, "tool_error", "tool_panic", "loop_refusal")


def turns_frame(run_id: str, turns: list[tuple[Any, ...]]) -> pd.DataFrame:
    """A turns frame of ``(tools, channel, producer, error_text, latency_ms)`` rows."""
    n = len(turns)
    tools, channels, producers, errors, latency = (
        (list(c) for c in zip(*turns, strict=True)) if n else [[]] * 5
    )
    df = pd.DataFrame(
        {
            "run_id": [run_id] * n,
            "turn": range(1, n + 1),
            "seq": range(2, 2 * n + 2, 2),
            "channel": channels,
            "producer": producers,
            "dropped": [c == "hard" for c in channels],
            "tools": tools,
            "n_calls": [0 if t is None else len(t.split(", ")) for t in tools],
            "n_errors": [int(c != "ok") for c in channels],
            "error_text": errors,
            "notes": [None] * n,
            "reply_text": [None if t else "done" for t in tools],
            "recovery_attempts": [0] * n,
            "breaker_states": [None] * n,
            "breakers_open": [0] * n,
            "model": ["m"] * n,
            "latency_ms": latency,
            "input_tokens": [None] * n,
            "output_tokens": [None] * n,
            "started_at": pd.to_datetime([float(i) for i in range(n)], unit="s", utc=True),
            "source_status": [None] * n,
        }
    )
    return conform(df, TURNS)


a_turn = st.tuples(
    st.sampled_from([None, "a", "b", "a, b"]),
    st.sampled_from(["ok", "soft", "hard"]),
    st.sampled_from(PRODUCERS),
    st.sampled_from([None, "x", "y"]),
    st.sampled_from([None, 1.5, 20.0, 0.125]),
)


def same_as_reference(c: loopnb.Comparison) -> None:
    pd.testing.assert_frame_equal(c.turns, reference.aligned(c))
    d = c.divergence
    expected = reference.divergence(c.turns)
    if expected is not None:
        assert d is not None and (d.turn, d.row, d.turn_a, d.turn_b, d.how, d.a, d.b) == expected
    else:
        assert d is None or d.row is None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from("xyzw"), max_size=40), st.lists(st.sampled_from("xyzw"), max_size=40),
       st.integers(1, 4))  # fmt: skip
def test_align_pairs_stretches_at_once_as_the_row_by_row_alignment_does(
    a: list[str], b: list[str], window: int
) -> None:
    assert align(a, b, window) == reference.align(a, b, window)
    assert align(a, b) == reference.align(a, b)


@settings(max_examples=150, deadline=None)
@given(st.lists(a_turn, max_size=30), st.lists(a_turn, max_size=30))
def test_turns_frames_align_as_the_straightforward_code_aligns_them(a: list[Any], b: list[Any]) -> None:
    ta, tb = turns_frame("a", a), turns_frame("b", b)
    if not len(ta) or not len(tb):
        return  # a side with no run is refused, as before
    same_as_reference(loopnb.compare(ta, tb))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(range(len(STEPS))), max_size=8),
    st.lists(st.sampled_from(range(len(STEPS))), max_size=8),
    st.sampled_from([(read_file,), (read_file_lenient,), (read_file_crashes,)]),
    st.sampled_from([None, 2, 3]),
)
def test_recorded_runs_align_as_the_straightforward_code_aligns_them(
    a: list[int], b: list[int], tools: Any, max_turns: int | None
) -> None:
    ra = record([*(STEPS[i] for i in a), "done"], run_id="a")
    rb = record([*(STEPS[i] for i in b), "done"], run_id="b", tools=tools, max_turns=max_turns)
    c = loopnb.compare(ra, rb)
    same_as_reference(c)
    assert c.sides[0].calls == reference.calls_of(c.sides[0])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(range(len(STEPS))), min_size=1, max_size=6), st.data())
def test_calls_by_turn_is_what_turns_of_puts_together_even_from_a_stream_out_of_order(
    steps: list[int], data: st.DataObject
) -> None:
    one = record([*(STEPS[i] for i in steps), "done"], run_id="one")
    events = record(["done"], run_id="two", recorder=one).event_objects
    kept = data.draw(
        st.lists(st.sampled_from(range(len(events))), max_size=len(events) + 4)
    )  # drops, repeats
    stream = [events[i] for i in kept] if data.draw(st.booleans()) else events
    expected = {t.turn: t.calls for t in turns_of(stream)}
    assert calls_by_turn(stream) == expected


class Unprintable:
    def __repr__(self) -> str:
        raise SystemExit("from the value")

    __str__ = __repr__


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=8,
)
arguments = (
    st.dictionaries(st.text(max_size=4), json_values | st.builds(Unprintable) | st.just(10**5000), max_size=4)
    | st.text(max_size=8)
    | st.dictionaries(st.integers(0, 3) | st.text(max_size=2), st.integers(), max_size=3)  # unsortable keys
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["read_file", "ls"]), arguments), max_size=3))
def test_calls_text_is_arguments_text_of_each_call(calls: list[tuple[str, Any]]) -> None:
    made = tuple(ToolCall(name, args) for name, args in calls)
    assert calls_text(made) == reference.calls_text(made)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["r1", "r2", "r3"]), a_turn), max_size=40),
    st.dictionaries(
        st.sampled_from(["r1", "r2", "r9"]), st.sampled_from(["loop_detected", "cancelled", None])
    ),
    st.booleans(),
)
def test_flow_counts_by_triples_equal_flowcount_fed_turn_by_turn(
    rows: list[tuple[str, Any]], ended: dict[str, str | None], sourced: bool
) -> None:
    frames = [turns_frame(run, [t for r, t in rows if r == run]) for run in ("r1", "r2", "r3")]
    turns = pd.concat(frames, ignore_index=True).sample(frac=1.0, random_state=len(rows))  # any order
    if sourced:
        turns.insert(0, "source", "one.jsonl")
        ended = {("one.jsonl", run): p for run, p in ended.items()}  # type: ignore[misc]
    events = pd.DataFrame(
        {
            **({"source": ["one.jsonl"] * len(ended)} if sourced else {}),
            "run_id": [k[1] if sourced else k for k in ended],  # type: ignore[index]
            "kind": ["run_finished"] * len(ended),
            "channel": ["hard"] * len(ended),
            "producer": list(ended.values()),
        }
    )

    class Data:
        pass

    data = Data()
    data.turns, data.events = turns, events  # type: ignore[attr-defined]
    assert flow_counts(data)["count"].tolist() == reference.flow_counts(turns, ended)


@pytest.mark.parametrize(
    "names",
    [
        ["recovery_ceiling"],
        ["recovery_success"],
        ["stubborn_loop"],
        ["converging_answers", "recovery_ceiling"],
    ],
)
def test_the_recovery_fold_from_frame_columns_is_the_fold_from_dict_rows(names: list[str]) -> None:
    rec = loopnb.Recorder()
    for name in names:
        scenarios.get(name).run(observers=[rec])
    events = rec.events.sample(frac=1.0, random_state=1)  # rows in any order: each run is sorted by seq

    def folded(runs: Any) -> list[Any]:
        return [(keys, [_fields(c) for c in fold.calls], fold.loops) for keys, fold in runs]

    assert folded(_recovery_runs(events)) == folded(reference.retries_folds(events))
    assert any(c["decision"] for _, calls, _ in folded(_recovery_runs(events)) for c in calls) or names == [
        "stubborn_loop"
    ]


def _fields(call: Any) -> dict[str, Any]:
    return {name: getattr(call, name) for name in call.__slots__}


states = st.sampled_from([None, "{}", '{"read_file": "open"}', '{"read_file": "half_open"}', '{"m": "open"}'])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(states, st.sampled_from([None, "breaker_open"]),
                          st.sampled_from([None, "read_file", "read_file, ls"])), max_size=25))  # fmt: skip
def test_breakers_read_each_states_text_once_and_find_the_same_transitions(rows: list[Any]) -> None:
    turns = turns_frame("r", [(t, "soft" if p else "ok", p, None, 1.0) for _, p, t in rows])
    turns["breaker_states"] = pd.array([s for s, _, _ in rows], dtype="string")
    transitions, refusals, _ = breakers_from_turns(turns, ["run_id"])
    expected, refused = reference.breaker_transitions(
        *(list(c) for c in zip(*rows, strict=True)) if rows else ([], [], [])
    )
    assert transitions == expected
    assert refusals.to_dict() == pd.Series(refused, dtype=object).value_counts().to_dict()


def test_conform_shares_a_frames_columns_and_a_write_to_either_copies_first() -> None:
    from loopnb.record._frames import _copy_on_write

    source = turns_frame("r", [("a", "ok", None, None, 1.0), ("b", "soft", "tool_error", "x", 2.0)])
    source.index = [7, 9]
    shared = conform(source, TURNS)
    # under copy-on-write (pandas 3, or pandas 2 when asked) the columns are shared; without it
    # they are copied, so that a write to either can never reach the other
    shares = np.shares_memory(shared["turn"].array._data, source["turn"].array._data)
    assert shares == _copy_on_write()
    assert shared.index.tolist() == [0, 1]
    shared.loc[0, "turn"] = 99
    source.loc[9, "error_text"] = "changed"
    assert source["turn"].tolist() == [1, 2] and shared["error_text"].tolist()[1] == "x"


def test_a_sweep_of_many_runs_still_counts_breakers_per_run() -> None:
    """Two runs sharing one breaker text: each run starts from closed breakers."""
    turns = pd.concat(
        [turns_frame(run, [("read_file", "ok", None, None, 1.0)] * 2) for run in ("r1", "r2")],
        ignore_index=True,
    )
    turns["breaker_states"] = pd.array(['{"read_file": "open"}'] * 4, dtype="string")
    transitions, _, _ = breakers_from_turns(turns, ["run_id"])
    assert transitions == [("read_file", "open"), ("read_file", "open")]
    assert json.loads(turns["breaker_states"].iloc[0]) == {"read_file": "open"}
