"""The live view's usage totals: each turn priced once, the totals of any first k turns read from
checkpoints (``UsageLedger``), equal to adding the turns up one by one as ``Audit.usage`` does."""

from __future__ import annotations

import pytest

from loopnb import audit, turns_of
from loopnb.analysis._usage import NO_TOKENS, Prices, UsageLedger, UsageTotals, usage_of
from loopnb.notebook._replay import Frames
from loopnb.notebook._viewmodel import ViewModel

from .conftest import record, scripted

TURNS = 2 * UsageLedger.EVERY + 37
TOKENS = [None if i % 7 == 3 else (100 + i, 5 + i % 11) for i in range(TURNS)]


@pytest.fixture(scope="module")
def long_run():
    return record(("r1", scripted("gpt-4o-mini", TOKENS)))


def one_by_one(turns, prices: Prices) -> list[UsageTotals]:
    totals, running = [UsageTotals()], UsageTotals()
    for t in turns:
        running = running.plus(usage_of(t, simulated=False, prices=prices))
        totals.append(running)
    return totals


def test_the_totals_of_the_first_k_turns_equal_adding_them_one_by_one(long_run):
    turns = turns_of(long_run.event_objects)
    expected = one_by_one(turns, Prices())
    ledger = UsageLedger()
    assert ledger.add(turns[:5]) == expected[5]
    assert ledger.add(turns[5 : UsageLedger.EVERY + 1]) == expected[UsageLedger.EVERY + 1]
    assert ledger.add(turns[UsageLedger.EVERY + 1 :]) == expected[TURNS]
    assert len(ledger) == TURNS
    every = UsageLedger.EVERY
    for k in (0, 1, 2, every - 1, every, every + 1, 2 * every, TURNS - 1, TURNS, TURNS + 5):
        assert ledger.upto(k) == expected[min(k, TURNS)], k
    assert ledger.upto(-3) == UsageTotals()
    last = expected[TURNS]
    assert last.spent_usd is not None and last.priced == TURNS - TURNS // 7 and last.unpriced == (NO_TOKENS,)


def test_the_replay_shows_each_turns_totals_as_the_frame_does(long_run):
    rows = audit(long_run).usage("turn")
    frames = Frames(long_run.event_objects)
    assert frames.count == TURNS
    for k in (0, 1, 4, UsageLedger.EVERY, UsageLedger.EVERY + 3, TURNS - 1, TURNS):
        upto = rows[rows["turn"] <= k]
        usage = frames(k).usage
        assert usage.turns == k
        assert usage.input_tokens == (int(upto["input_tokens"].sum()) if k else None), k
        assert usage.spent_usd == (pytest.approx(float(upto["cost_usd"].sum())) if k else None), k
        assert (usage.cost_usd is None) == (k == 0 or k > 3), k  # turn 4 reported no tokens


def test_a_redrawn_state_counts_every_turn_once():
    rec = record(("r1", scripted("gpt-4o-mini", TOKENS[:40])))
    events = rec.event_objects
    model = ViewModel()
    for i, event in enumerate(events):
        model.apply(event)
        if i % 9 == 0:
            model.snapshot()  # a redraw now and then, as the painter does
    state = model.snapshot()
    assert state.usage == ViewModel.fold(events).usage
    assert state.usage.turns == 40 and state.usage.input_tokens == sum(t[0] for t in TOKENS[:40] if t)
