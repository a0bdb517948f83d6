"""``Audit.usage()``: tokens, wall time and cost per run, per model and per turn.

Every cost is checked against genai-prices' own ``calc_price`` for the same tokens, model and
time, never against a number written here.
"""

from __future__ import annotations

import socket
import sys
import threading
from datetime import datetime

import genai_prices
import pandas as pd
import pytest

from loopnb import FakeClock, FallbackChain, audit, load
from loopnb.analysis import Audit
from loopnb.analysis._usage import NOT_INSTALLED, Prices, dollars, lookups

from .conftest import record, scripted

TOKENS = [(1200, 80), (1500, 40), (1700, 25)]


def expected(turns: pd.DataFrame, ref: str, provider: str | None = None) -> list[float]:
    """genai-prices' cost of each turn of ``turns``, priced as ``ref`` at the turn's start."""
    costs = []
    for row in turns.itertuples():
        usage = genai_prices.Usage(input_tokens=row.input_tokens, output_tokens=row.output_tokens)
        at: datetime = row.started_at.to_pydatetime()
        calc = genai_prices.calc_price(usage, ref, provider_id=provider, genai_request_timestamp=at)
        costs.append(float(calc.total_price))
    return costs


def test_a_priced_run_per_turn_per_run_and_per_model():
    rec = record(("r1", scripted("gpt-4o-mini", TOKENS)))
    a = audit(rec)
    turns = a.usage("turn")
    costs = expected(rec.turns, "gpt-4o-mini")
    assert turns["cost_usd"].tolist() == costs and all(c > 0 for c in costs)
    assert turns[["input_tokens", "output_tokens"]].to_numpy().tolist() == [list(t) for t in TOKENS]
    assert turns["latency_ms"].tolist() == rec.turns["latency_ms"].tolist()
    assert set(turns["priced_as"]) == {"openai/gpt-4o-mini"}
    assert set(turns["price_source"]) == {f"genai-prices {genai_prices.__version__}"}
    assert turns["unpriced"].isna().all() and set(turns["clock"]) == {"wall"}

    run = a.usage().iloc[0]
    assert (run["run_id"], run["models"], run["turns"], run["priced_turns"]) == ("r1", "gpt-4o-mini", 3, 3)
    assert (run["input_tokens"], run["output_tokens"]) == (4400, 145)
    assert run["cost_usd"] == pytest.approx(sum(costs), rel=1e-12)
    assert run["latency_ms"] == pytest.approx(rec.turns["latency_ms"].sum())
    model = a.usage("model").iloc[0]
    assert (model["model"], model["runs"], model["turns"]) == ("gpt-4o-mini", 1, 3)
    assert model["cost_usd"] == run["cost_usd"] and model["priced_as"] == "openai/gpt-4o-mini"


def test_columns_and_dtypes_of_each_shape():
    a = audit(record(("r1", scripted("gpt-4o-mini", TOKENS))))
    tail = ["priced_as", "price_source", "unpriced"]
    assert list(a.usage("turn").columns) == [
        "run_id", "turn", "model", "input_tokens", "output_tokens", "latency_ms", "clock", "cost_usd", *tail,
    ]  # fmt: skip
    assert list(a.usage("run").columns) == [
        "run_id", "models", "turns", "input_tokens", "output_tokens", "latency_ms", "clock", "cost_usd",
        "priced_turns", "price_source", "unpriced",
    ]  # fmt: skip
    assert list(a.usage("model").columns) == [
        "model", "runs", "turns", "input_tokens", "output_tokens", "latency_ms", "cost_usd",
        "priced_turns", *tail,
    ]  # fmt: skip
    dtypes = {str(d) for d in a.usage("run").dtypes}
    assert dtypes == {"string", "Int64", "Float64"}
    with pytest.raises(ValueError, match=r"usage\(by='runs'\): by is one of 'run', 'model', 'turn'"):
        a.usage("runs")  # type: ignore[arg-type]


def test_an_unknown_model_and_missing_tokens_have_no_cost_never_zero():
    rec = record(
        ("unknown", scripted("scripted", TOKENS)),
        ("silent", scripted("gpt-4o-mini", [None, None])),
        ("half", scripted("gpt-4o-mini", [(100, 10), None])),
    )
    runs = audit(rec).usage().set_index("run_id")
    assert runs["cost_usd"].isna().all()
    assert runs.loc["unknown", "unpriced"] == "genai-prices has no price for scripted"
    assert runs.loc["unknown", "input_tokens"] == 4400 and runs.loc["unknown", "priced_turns"] == 0
    assert runs.loc["silent", "unpriced"] == "no tokens reported"
    assert pd.isna(runs.loc["silent", "input_tokens"]) and pd.isna(runs.loc["silent", "output_tokens"])
    # one turn priced, one without tokens: the run's cost is not the part that is known
    assert runs.loc["half", "priced_turns"] == 1 and runs.loc["half", "unpriced"] == "no tokens reported"
    half = audit(rec).usage("turn").query("run_id == 'half'")
    assert half["cost_usd"].notna().tolist() == [True, False]


def test_a_fallback_chain_splits_per_model():
    """gpt-4o-mini answers turn 1, then its script is spent (fatal: its breaker opens at once) and
    claude-3-5-haiku answers the rest; a second run falls back on a test double instead."""
    primary = scripted("openai:gpt-4o-mini", TOKENS[:1], final=False)
    fallback = scripted("anthropic:claude-3-5-haiku-latest", TOKENS[1:])
    stand_in = scripted("scripted", TOKENS[1:])
    rec = record(
        ("priced", FallbackChain([primary, fallback])),
        ("partly", FallbackChain([scripted("openai:gpt-4o-mini", TOKENS[:1], final=False), stand_in])),
    )
    a = audit(rec)
    t = rec.turns[rec.turns["run_id"] == "priced"]
    costs = expected(t.iloc[:1], "gpt-4o-mini", "openai")
    costs += expected(t.iloc[1:], "claude-3-5-haiku-latest", "anthropic")
    turns = a.usage("turn")
    assert turns.loc[turns["run_id"] == "priced", "cost_usd"].tolist() == costs
    models = a.usage("model").set_index("model")
    mini, haiku = models.loc["openai:gpt-4o-mini"], models.loc["anthropic:claude-3-5-haiku-latest"]
    assert (mini["runs"], mini["turns"], haiku["runs"], haiku["turns"]) == (2, 2, 1, 2)
    assert mini["priced_as"] == "openai/gpt-4o-mini" and haiku["priced_as"].startswith("anthropic/")
    assert haiku["cost_usd"] == pytest.approx(sum(costs[1:]), rel=1e-12)
    assert pd.isna(models.loc["scripted", "cost_usd"]) and models.loc["scripted", "turns"] == 2
    runs = a.usage().set_index("run_id")
    assert runs.loc["priced", "models"] == "openai:gpt-4o-mini, anthropic:claude-3-5-haiku-latest"
    assert runs.loc["priced", "cost_usd"] == pytest.approx(sum(costs), rel=1e-12)
    assert pd.isna(runs.loc["partly", "cost_usd"]) and runs.loc["partly", "priced_turns"] == 1
    assert runs.loc["partly", "input_tokens"] == sum(i for i, _ in TOKENS)


@pytest.mark.parametrize(
    ("name", "priced_as"),
    [
        ("gpt-4o-mini", "openai/gpt-4o-mini"),
        ("openai:gpt-4o-mini", "openai/gpt-4o-mini"),
        ("openai/gpt-4o-mini", "openai/gpt-4o-mini"),
        ("google-gla:gemini-1.5-flash", "google/gemini-1.5-flash"),
        ("openai:gpt-4o@api.openai.com", "openai/gpt-4o"),
        ("claude-3-5-sonnet-v2@20241022", "anthropic/claude-3-5-sonnet"),
        ("openai:gpt-4o@127.0.0.1:8000", None),  # a local server: not OpenAI's price
        ("function:reply", None),  # pydantic-ai's FunctionModel
        ("test", None),  # pydantic-ai's TestModel
        ("mockllm/model", None),  # Inspect's mock model
        ("fallible", None),
    ],
)
def test_model_names_as_recorded_are_priced_or_not(name, priced_as):
    rec = record(("r", scripted(name, TOKENS[:2])))
    turns = audit(rec).usage("turn")
    if priced_as is None:
        assert turns["cost_usd"].isna().all() and turns["priced_as"].isna().all()
        assert set(turns["unpriced"]) == {f"genai-prices has no price for {name}"}
        return
    assert set(turns["priced_as"]) == {priced_as}
    ref, provider, url = lookups(name)[0]
    expect = []
    for row in rec.turns.itertuples():
        usage = genai_prices.Usage(input_tokens=row.input_tokens, output_tokens=row.output_tokens)
        at = row.started_at.to_pydatetime()
        if url is not None:
            calc = genai_prices.calc_price(usage, ref, provider_api_url=url, genai_request_timestamp=at)
        else:
            calc = genai_prices.calc_price(usage, ref, provider_id=provider, genai_request_timestamp=at)
        expect.append(float(calc.total_price))
    assert turns["cost_usd"].tolist() == expect


def test_simulated_clock_time_is_no_latency():
    """A FakeClock run whose model takes 2 s a request: tokens and cost count, the 2 s do not."""
    clock = FakeClock()
    model = scripted("gpt-4o-mini", TOKENS)
    steps = model.complete

    async def slow(messages, tools):
        await clock.sleep(2.0)
        return await steps(messages, tools)

    model.complete = slow  # type: ignore[method-assign]
    rec = record(("fake", model), clock=clock)
    record(("wall", scripted("gpt-4o-mini", TOKENS)), recorder=rec)
    assert rec.turns.loc[rec.turns["run_id"] == "fake", "latency_ms"].min() >= 2000  # as recorded
    a = audit(rec)
    runs = a.usage().set_index("run_id")
    assert runs.loc["fake", "clock"] == "simulated" and pd.isna(runs.loc["fake", "latency_ms"])
    assert runs.loc["fake", "input_tokens"] == 4400 and runs.loc["fake", "cost_usd"] > 0
    wall = rec.turns.loc[rec.turns["run_id"] == "wall", "latency_ms"]
    assert runs.loc["wall", "clock"] == "wall" and runs.loc["wall", "latency_ms"] == pytest.approx(wall.sum())
    model_row = a.usage("model").iloc[0]
    assert model_row["latency_ms"] == pytest.approx(wall.sum()) and model_row["turns"] == 6
    turns = a.usage("turn")
    assert turns.loc[turns["run_id"] == "fake", "latency_ms"].isna().all()
    # the frames alone do not say which clock: named by hand, the same
    by_hand = Audit(rec.turns, simulated=["fake"]).usage()
    pd.testing.assert_frame_equal(by_hand, a.usage())


def test_foreign_goldens_read_with_usage(golden_foreign):
    """Every foreign golden: the tokens the source reported; no cost for its test models, and a real
    model's name (LlamaIndex's agent needs one its table knows) priced as the price list says."""
    priced, real = Prices(), []
    for path in golden_foreign:
        rec = load(path)
        t = rec.turns
        a = audit(rec)
        run = a.usage()
        assert run["input_tokens"].sum() == t["input_tokens"].sum(), path.name
        assert run["output_tokens"].sum() == t["output_tokens"].sum(), path.name
        assert run["turns"].sum() == len(t) and set(run["clock"]) == {"wall"}, path.name
        named = t["model"].dropna().unique()
        if any(priced(m, 1, 1, None).cost_usd is not None for m in named):
            assert (run["cost_usd"] > 0).all(), path.name
            real.append(path.name)
        else:
            assert run["cost_usd"].isna().all(), path.name
            reasons = " ".join(run["unpriced"].dropna())
            assert all(f"genai-prices has no price for {m}" in reasons for m in named), path.name
        per_model = a.usage("model")
        assert per_model["input_tokens"].sum() == t["input_tokens"].sum(), path.name
        assert len(a.usage("turn")) == len(t), path.name
    assert 0 < len(real) < len(golden_foreign), real  # both branches taken (LlamaIndex names a real model)


def test_a_foreign_run_under_a_real_model_name_is_priced(golden_foreign):
    """pydantic-ai's recovered run, its model renamed as pydantic-ai would name a real one."""
    path = next(p for p in golden_foreign if p.name == "recovered.json")
    turns = load(path).turns.assign(model="openai:gpt-4o")
    usage = audit(turns).usage("turn")
    assert usage["cost_usd"].tolist() == expected(turns, "gpt-4o", "openai")


def test_without_genai_prices_tokens_and_latency_stay_and_cost_says_why(monkeypatch):
    rec = record(("r1", scripted("gpt-4o-mini", TOKENS)))
    priced = audit(rec).usage()
    monkeypatch.setitem(sys.modules, "genai_prices", None)  # import genai_prices raises ImportError
    bare = audit(rec).usage()
    assert bare["cost_usd"].isna().all() and bare["priced_turns"].tolist() == [0]
    assert bare["unpriced"].tolist() == [NOT_INSTALLED] and "loopnb[prices]" in NOT_INSTALLED
    same = ["run_id", "models", "turns", "input_tokens", "output_tokens", "latency_ms", "clock"]
    pd.testing.assert_frame_equal(bare[same], priced[same])


def test_prices_come_from_the_bundled_table_without_the_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError(f"a connection was attempted: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    rec = record(("r1", scripted("gpt-4o-mini", TOKENS)))
    assert audit(rec).usage()["cost_usd"].notna().all()
    assert not any(t.name.startswith("genai_prices") for t in threading.enumerate())


def test_a_usage_the_price_table_refuses_is_no_cost():
    """Negative tokens (a damaged or hostile recording): genai-prices refuses them; no crash."""
    turns = audit(record(("r", scripted("gpt-4o-mini", [(-5, 3), (10, 2)])))).usage("turn")
    assert pd.isna(turns.loc[0, "cost_usd"]) and turns.loc[1, "cost_usd"] > 0
    assert turns.loc[0, "unpriced"].startswith("genai-prices could not price it: ")


def test_dollars():
    assert [dollars(v) for v in (0.0, 0.00021, 0.0035, 0.0000035, 0.42, 1234.5)] == [
        "$0", "$0.00021", "$0.0035", "$0.0000035", "$0.42", "$1,234.50",
    ]  # fmt: skip
