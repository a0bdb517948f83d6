"""``recovery_attempts`` and ``breaker_history``: the gauge's and the board's rule as frames."""

from __future__ import annotations

import contextlib

import pandas as pd
import pytest

import loopnb
from loopnb import (
    CircuitBreaker,
    Engine,
    FakeClock,
    LoopError,
    RetryWithBackoff,
    ScriptedModel,
    ToolCall,
    ToolError,
    load,
    scenarios,
    tool,
)
from loopnb.record import Recorder


def _outcome(name: str) -> scenarios.Outcome:
    return scenarios.get(name).run()


def test_outcomes_of_the_recovery_scenarios():
    ok = loopnb.recovery_attempts(list(_outcome("recovery_success").events))
    assert ok[["turn", "tool", "attempts", "retries", "ceiling", "outcome"]].values.tolist() == [
        [1, "read_file", 2, 1, 5, "recovered"]
    ]
    assert ok["strategy"].iloc[0].startswith("AnalyseAndCorrect(")
    wall = loopnb.recovery_attempts(list(_outcome("recovery_ceiling").events))
    assert wall[["retries", "last_decision", "outcome"]].values.tolist() == [[5, "retry", "exhausted"]]


def test_without_a_strategy_every_failure_is_no_recovery_and_loops_are_the_detectors():
    frame = loopnb.recovery_attempts(list(_outcome("stubborn_loop").events))
    assert frame["strategy"].isna().all()
    assert list(frame["outcome"]) == ["no_recovery"] * 5
    assert list(frame["retries"]) == [0] * 5  # the repeats are not recovery attempts
    assert frame["loop_count"].tolist() == [pd.NA, pd.NA, pd.NA, 4, 5]
    assert list(frame["producer"]) == ["tool_error"] * 3 + ["loop_refusal"] * 2


def test_a_strategy_that_gives_up():
    @tool
    def flaky(q: str) -> str:
        """Always fails."""
        raise ToolError("down")

    class GiveUp:
        def decide(self, failure, attempt, max_attempts):
            from loopnb import Retry, Skip

            return Retry() if attempt == 0 else Skip(note="enough")

    model = ScriptedModel([ToolCall("flaky", {"q": "a"}), "done"])
    rec = Recorder()
    Engine(model, [flaky], recovery=GiveUp(), observers=[rec]).run("go")
    frame = loopnb.recovery_attempts(rec)
    assert frame[["retries", "last_decision", "outcome"]].values.tolist() == [[1, "skip", "gave_up"]]


@pytest.mark.parametrize("name", scenarios.names())
def test_every_input_gives_the_same_rows(name, tmp_path):
    rec = Recorder()
    scenarios.get(name).run(observers=[rec])
    path = rec.save(tmp_path / "run.jsonl")
    objects = loopnb.recovery_attempts(rec)
    assert objects.equals(loopnb.recovery_attempts(load(path)))
    from_frame = loopnb.recovery_attempts(rec.events)
    assert from_frame["strategy"].isna().all()  # a frame does not hold the run's settings
    assert from_frame.drop(columns="strategy").equals(objects.drop(columns="strategy"))
    assert loopnb.recovery_attempts((rec.turns, rec.events)).equals(from_frame)
    history = loopnb.breaker_history(rec)
    assert history.equals(loopnb.breaker_history(load(path)))
    assert history.equals(loopnb.breaker_history(rec.events))
    by_turns = loopnb.breaker_history(rec.turns)  # the states alone, of breakers ever not closed
    seen = history[history["breaker"].isin(set(by_turns["breaker"]))].reset_index(drop=True)
    assert list(by_turns["state"]) == list(seen["state"])
    assert by_turns["failures"].isna().all()


class _Truth:
    """An observer reading the engine's own breakers as each turn ends."""

    def __init__(self) -> None:
        self.engine: Engine | None = None
        self.seen: dict[tuple[int, str], int] = {}

    def __call__(self, event: object) -> None:
        if getattr(event, "kind", None) == "turn_finished" and self.engine is not None:
            breakers = {**self.engine.tool_breakers, **self.engine.chain.breakers}
            for name, b in breakers.items():
                self.seen[(event.turn, name)] = b.failures  # type: ignore[attr-defined]


def _failures(history: pd.DataFrame) -> dict[tuple[int, str], int]:
    rows = zip(history["turn"], history["breaker"], history["failures"], strict=True)
    return {(int(t), str(b)): int(f) for t, b, f in rows}


@pytest.mark.parametrize("name", ["flaky_tool_breaker", "fallback_chain"])
def test_failures_are_the_engines_own_count_at_every_turn(name):
    truth, rec = _Truth(), Recorder()
    engine = scenarios.get(name).engine(observers=[truth, rec])
    truth.engine = engine
    with contextlib.suppress(LoopError):
        engine.run(scenarios.get(name).task)
    history = loopnb.breaker_history(rec)
    assert _failures(history) == truth.seen
    assert any(f > 0 for f in truth.seen.values())


def test_failures_between_transitions_and_cooldown_left():
    clock = FakeClock()
    calls = []

    @tool
    def api(q: str) -> str:
        """Fails three times, then answers."""
        calls.append(q)
        if len(calls) <= 3:
            raise ToolError("503")
        return "ok"

    @tool
    async def wait(seconds: float) -> str:
        """Wait."""
        await clock.sleep(seconds)
        return "waited"

    call = ToolCall("api", {"q": "x"})
    model = ScriptedModel([call, call, call, call, ToolCall("wait", {"seconds": 10}), call, call, "done"])
    truth, rec = _Truth(), Recorder()
    engine = Engine(
        model,
        [api, wait],
        breakers={"api": CircuitBreaker(failure_threshold=3, cooldown=10)},
        recovery=RetryWithBackoff(retries=0),
        loop_detector=None,
        clock=clock,
        observers=[truth, rec],
    )
    truth.engine = engine
    engine.run("go")
    history = loopnb.breaker_history(rec)
    api_rows = history[history["breaker"] == "api"]
    assert list(api_rows["failures"]) == [1, 2, 3, 3, 3, 0, 0, 0]  # 1 and 2 before any transition
    assert list(api_rows["state"]) == [
        "closed",
        "closed",
        "open",
        "open",
        "open",
        "closed",
        "closed",
        "closed",
    ]
    assert api_rows["cooldown_left"].tolist()[2:5] == [10.0, 10.0, 0.0]
    assert api_rows["passed"].tolist()[2] == "open" and api_rows["passed"].tolist()[5] == "half_open, closed"
    assert _failures(history) == truth.seen


def test_a_turns_frame_is_not_enough_for_recovery_attempts():
    rec = Recorder()
    scenarios.get("recovery_success").run(observers=[rec])
    with pytest.raises(ValueError, match="needs events"):
        loopnb.recovery_attempts(rec.turns)
    with pytest.raises(TypeError, match="takes a Recording"):
        loopnb.breaker_history(42)
