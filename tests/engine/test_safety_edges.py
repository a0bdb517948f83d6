"""Edges of the safety systems: strategies that answer nonsense, canonical call keys, breaker settings."""

from __future__ import annotations

import math
import sys
import threading
from fractions import Fraction

import pytest

from loopnb import (
    CircuitBreaker,
    ConvergenceDetector,
    Engine,
    FakeClock,
    LoopDetected,
    Retry,
    RetryWithBackoff,
    ScriptedModel,
    Skip,
    ToolCall,
    ToolError,
    ToolRecoveryExhausted,
    ToolResult,
    tool,
)
from loopnb.engine import Failure
from loopnb.engine._safety import call_key

from .conftest import Events


class Always:
    def __init__(self, decision):
        self.decision = decision

    def decide(self, failure, attempt, max_attempts):
        return self.decision


def fetch_tool():
    calls: list[object] = []

    @tool
    def fetch(url: str) -> str:
        """Fetch a URL."""
        calls.append(url)
        raise ToolError(f"fetch {url} failed")

    return fetch, calls


def recover_with(decision):
    fetch, calls = fetch_tool()
    clock, events = FakeClock(), Events()
    engine = Engine(
        ScriptedModel([ToolCall("fetch", {"url": "u"}), "x"]),
        tools=[fetch],
        recovery=Always(decision),
        clock=clock,
        observers=[events],
    )
    return engine, calls, clock, events


# -- recovery: decisions with bad fields count as Fail, and never crash or hang the run ---------


@pytest.mark.parametrize(
    ("decision", "wrong"),
    [
        (Retry(delay="1"), "delay must be a finite number of seconds, got '1'"),
        (Retry(delay=math.nan), "delay must be a finite number of seconds, got nan"),
        (Retry(delay=math.inf), "delay must be a finite number of seconds, got inf"),
        (Retry(delay=None), "delay must be a finite number of seconds, got None"),
        (Retry(corrected_input="url=v"), "corrected_input must be a dict of argument names"),
        (Retry(corrected_input=["v"]), "corrected_input must be a dict of argument names"),
        (Retry(corrected_input={1: "v"}), "corrected_input must be a dict of argument names"),
        (Retry(note=["why"]), "note must be a str or None, got list"),
        (Skip(note=42), "note must be a str or None, got int 42"),
    ],
)
def test_a_decision_with_a_bad_field_is_an_invalid_fail(decision, wrong):
    engine, calls, clock, events = recover_with(decision)
    result = engine.run("task")
    first = result.tool_results[0]
    assert (first.producer, first.content) == ("recovery_gave_up", "fetch u failed")
    assert first.note.startswith(f"recovery strategy answered an invalid {type(decision).__name__}: {wrong}")
    assert len(calls) == 1 and clock.slept == []
    assert [(d.decision, d.valid) for d in events.of("recovery_decided")] == [("fail", False)]


def test_a_negative_delay_means_no_wait():
    engine, calls, clock, _ = recover_with(Retry(delay=-3))
    with pytest.raises(ToolRecoveryExhausted) as info:
        engine.run("task")
    assert (info.value.attempts, len(calls), clock.slept) == (6, 6, [])


def test_a_delay_of_another_number_type_is_waited_as_seconds():
    engine, _, clock, events = recover_with(Retry(delay=Fraction(1, 4), corrected_input={"url": "v"}))
    with pytest.raises(ToolRecoveryExhausted):
        engine.run("task")
    assert clock.slept == [0.25] * 5
    decided = events.of("recovery_decided")
    assert {(type(d.delay), d.delay, d.valid) for d in decided} == {(float, 0.25, True)}
    assert [d.corrected_input for d in decided][:5] == [{"url": "v"}] * 5
    assert [e.attempt for e in events.of("tool_dispatched")] == [0, 1, 2, 3, 4, 5]


def test_an_invalid_decision_at_the_ceiling_gives_up_softly():
    class RetryThenNonsense:
        def decide(self, failure, attempt, max_attempts):
            return Retry() if attempt < max_attempts else Retry(delay=math.nan)

    fetch, calls = fetch_tool()
    engine = Engine(
        ScriptedModel([ToolCall("fetch", {"url": "u"}), "x"]), tools=[fetch], recovery=RetryThenNonsense()
    )
    result = engine.run("task")
    assert (result.tool_results[0].producer, result.tool_results[0].attempts, len(calls)) == (
        "recovery_gave_up",
        6,
        6,
    )


def failure_of(producer):
    failed = ToolCall("x")
    result = ToolResult("boom", is_error=True, producer=producer)
    return Failure(failed, result, failed, result, None, producer)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"base": math.nan},
        {"base": "1"},
        {"base": -1},
        {"factor": 0.5},
        {"factor": math.inf},
        {"max_delay": math.nan},
        {"max_delay": True},
        {"on": ("tool_eror",)},
        {"on": ("breaker_open",)},
    ],
)
def test_bad_backoff_settings_are_refused_naming_the_setting(kwargs):
    name = next(iter(kwargs))
    with pytest.raises(ValueError, match=f"RetryWithBackoff: {name} "):
        RetryWithBackoff(**kwargs)


def test_a_huge_backoff_factor_is_capped_not_an_overflow():
    strategy = RetryWithBackoff(retries=5, base=1, factor=1e308, max_delay=7)
    delays = [strategy.decide(failure_of("timeout"), a, 5).delay for a in range(5)]
    assert delays == [1, 7, 7, 7, 7]


# -- the loop detector: canonical call keys ----------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ({"n": 1}, {"n": 1.0}),
        ({"n": -0.0}, {"n": 0}),
        ({"q": {"x": [1, 2.0], "y": 1}}, {"q": {"y": 1.0, "x": [1.0, 2]}}),
        ('{"path": "x", "n": 1}', {"n": 1, "path": "x"}),
        ('{"path":"x"}', '{ "path" : "x" }'),
        ("", {}),
    ],
)
def test_calls_that_are_the_same_json_share_a_key(a, b):
    assert call_key(ToolCall("t", a)) == call_key(ToolCall("t", b))


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ({"n": 1}, {"n": True}),
        ({"n": 1}, {"n": 1.5}),
        ({"n": 1}, {"n": "1"}),
        ({"p": "caf\u00e9"}, {"p": "cafe\u0301"}),  # NFC vs NFD: a tool may tell them apart
        ("not json", '"not json"'),
    ],
)
def test_calls_that_differ_as_json_keep_their_own_keys(a, b):
    assert call_key(ToolCall("t", a)) != call_key(ToolCall("t", b))


def test_a_number_spelled_two_ways_does_not_evade_the_loop_detector():
    @tool
    def get(n: int) -> str:
        """Get item n."""
        raise ToolError(f"no item {n}")

    steps = [ToolCall("get", {"n": 1}), ToolCall("get", {"n": 1.0}), ToolCall("get", '{"n": 1}')] * 2
    with pytest.raises(LoopDetected) as info:
        Engine(ScriptedModel([*steps, "done"]), tools=[get]).run("task")
    produced = [r.producer for r in info.value.run.tool_results]
    assert produced == ["tool_error"] * 3 + ["loop_refusal"] * 2


# -- settings -----------------------------------------------------------------------------------


@pytest.mark.parametrize("cooldown", [math.nan, True, "30"])
def test_a_cooldown_that_is_not_seconds_is_refused(cooldown):
    with pytest.raises(ValueError, match="CircuitBreaker: cooldown must be seconds >= 0"):
        CircuitBreaker(cooldown=cooldown)


def test_a_boolean_convergence_threshold_is_refused():
    with pytest.raises(ValueError, match="ConvergenceDetector: threshold"):
        ConvergenceDetector(threshold=True)


# -- breakers shared across threads -------------------------------------------------------------


def test_a_breaker_shared_by_threads_makes_each_transition_once():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible, to provoke a race
    try:
        clock = FakeClock()
        for _ in range(150):
            moves = []
            breaker = CircuitBreaker(failure_threshold=1, cooldown=0, clock=clock)
            breaker.record_failure()
            breaker.listeners.append(lambda b, previous, state, moves=moves: moves.append((previous, state)))
            start = threading.Barrier(4)

            def probe(breaker=breaker, start=start):
                start.wait()
                breaker.allow()

            threads = [threading.Thread(target=probe) for _ in range(4)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert moves == [("open", "half_open")]
    finally:
        sys.setswitchinterval(old)


def test_a_listener_may_read_the_breaker_it_hears_from():
    clock = FakeClock()
    breaker = CircuitBreaker(failure_threshold=1, cooldown=5, clock=clock)
    heard = []
    breaker.listeners.append(lambda b, previous, state: heard.append((state, b.cooldown_left(), b.allow())))
    breaker.record_failure()
    assert heard == [("open", 5.0, False)]
