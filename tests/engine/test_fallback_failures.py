"""How the fallback chain counts, waits out and reports a model's failures."""

from __future__ import annotations

import random
import threading
import time

import pytest

from loopnb import (
    Cancelled,
    CancelToken,
    CircuitBreaker,
    Engine,
    FakeClock,
    FallbackChain,
    FallbackExhausted,
    FunctionModel,
    ModelAuthError,
    ModelUnavailable,
    ScriptedModel,
    ToolCall,
    ToolError,
    tool,
)
from loopnb.engine import ModelReply
from loopnb.engine.models._fallback import classify


class Failing:
    """A model that always fails the same way, as an adapter reports it (its name first), and
    notes the clock's time at each request."""

    def __init__(
        self,
        name: str,
        status: int | None,
        *,
        clock: FakeClock | None = None,
        retry_after: float | None = None,
    ) -> None:
        self.name, self.status, self.clock, self.retry_after = name, status, clock, retry_after
        self.asked_at: list[float] = []

    @property
    def asked(self) -> int:
        return len(self.asked_at)

    async def complete(self, messages, tools) -> ModelReply:
        self.asked_at.append(self.clock.monotonic() if self.clock else 0.0)
        raise ModelUnavailable(
            f"{self.name}: HTTP {self.status}: it failed", status=self.status, retry_after=self.retry_after
        )


class Recovering(Failing):
    """Fails ``times`` times, then answers ``text``."""

    def __init__(self, name: str, status: int | None, times: int, text: str = "back", **kw) -> None:
        super().__init__(name, status, **kw)
        self.times, self.text = times, text

    async def complete(self, messages, tools) -> ModelReply:
        if self.asked < self.times:
            return await super().complete(messages, tools)
        self.asked_at.append(self.clock.monotonic() if self.clock else 0.0)
        return ModelReply(text=self.text)


def jitter(seed: int, *delays: float) -> list[float]:
    """The waits a chain with ``rng=random.Random(seed)`` makes of these un-jittered delays."""
    rng = random.Random(seed)
    return [d * (1.0 - 0.5 * rng.random()) for d in delays]


# -- 3. classify: what no retry can fix opens the breaker at once ------------------------------


@pytest.mark.parametrize(
    ("status", "asked"),
    [(400, 1), (401, 1), (403, 1), (404, 1), (422, 1), (408, 3), (429, 3), (500, 3), (503, 3), (None, 3)],
)
def test_what_no_retry_can_fix_is_asked_once_other_failures_count_up(status, asked):
    clock = FakeClock()
    model = Failing("openai:m@127.0.0.1:9", status, clock=clock)
    with pytest.raises(FallbackExhausted):
        Engine(model, clock=clock).run("t")
    assert model.asked == asked
    assert len(clock.slept) == asked - 1  # a wait before each new request to the same model


def test_classify_names_the_failures_no_retry_can_fix():
    assert classify(ModelAuthError("refused", env_var="X")) == "fatal"
    assert classify(ModelUnavailable("invalid model name", status=400)) == "fatal"
    assert classify(ModelUnavailable("rate limited", status=429)) == "transient"
    assert classify(ModelUnavailable("connection refused")) == "transient"
    assert classify(ValueError("a bug in a model")) == "transient"


def test_a_failure_names_its_model_once():
    clock = FakeClock()
    model = Failing("openai:m@127.0.0.1:9", 404, clock=clock)
    with pytest.raises(FallbackExhausted) as info:
        Engine(FallbackChain([model, ScriptedModel([], name="backup")]), clock=clock).run("t")
    message = str(info.value)
    assert message.count("openai:m@127.0.0.1:9") == 1
    assert "openai:m@127.0.0.1:9: HTTP 404: it failed" in message


# -- 4. decide: next model at once, back off before the same one -------------------------------


class NoJitter(random.Random):
    """Jitter that cuts nothing: the waits are the bare back-off."""

    def random(self) -> float:
        return 0.0


def test_another_model_is_asked_at_once_the_same_one_only_after_its_back_off():
    clock = FakeClock()
    a, b = Failing("a", 503, clock=clock), Failing("b", 502, clock=clock)
    with pytest.raises(FallbackExhausted):
        Engine(FallbackChain([a, b], rng=NoJitter()), clock=clock).run("t")
    # a fails, b is asked at once; both back off 0.5 s, then 1 s; a goes first when both are ready.
    assert a.asked_at == b.asked_at == [0.0, 0.5, 1.5]
    assert clock.slept == [0.5, 1.0]


def test_the_back_off_doubles_is_jittered_and_is_the_same_for_the_same_seed():
    waits = []
    for _ in range(2):
        clock = FakeClock()
        model = Failing("m", 503, clock=clock)
        chain = FallbackChain([model], breaker=CircuitBreaker(failure_threshold=4), rng=random.Random(3))
        with pytest.raises(FallbackExhausted):
            Engine(chain, clock=clock).run("t")
        waits.append(clock.slept)
    assert waits[0] == waits[1] == pytest.approx(jitter(3, 0.5, 1.0, 2.0))
    assert all(0.5 * d < w <= d for w, d in zip(waits[0], (0.5, 1.0, 2.0), strict=True))


def test_the_back_off_stops_at_max_wait():
    clock = FakeClock()
    model = Failing("m", 503, clock=clock)
    breaker = CircuitBreaker(failure_threshold=12)
    chain = FallbackChain([model], breaker=breaker, backoff=1.0, max_wait=5.0, rng=random.Random(1))
    with pytest.raises(FallbackExhausted):
        Engine(chain, clock=clock).run("t")
    assert len(clock.slept) == 11
    assert max(clock.slept) <= 5.0
    assert clock.slept[-1] > 2.5  # capped, then jittered: between half the cap and the cap


def test_retry_after_is_waited_out_before_the_same_model_is_asked_again():
    clock = FakeClock()
    model = Recovering("m", 429, 1, retry_after=2.0, clock=clock)
    result = Engine(model, clock=clock).run("t")
    assert result.output == "back"
    assert clock.slept == [2.0]
    assert model.asked_at == [0.0, 2.0]


def test_a_model_backing_off_is_skipped_across_turns_while_another_answers():
    clock = FakeClock()
    primary = Recovering("primary", 429, 1, retry_after=2.0, clock=clock, text="primary answers")

    def backup_answer(messages, tools):
        clock.advance(1.5)  # each backup turn takes 1.5 s
        return ToolCall("noop", {}) if len(messages) < 6 else "backup answers"

    @tool
    def noop() -> str:
        """Do nothing."""
        return "ok"

    backup = FunctionModel(backup_answer, name="backup")
    result = Engine(FallbackChain([primary, backup]), tools=[noop], clock=clock).run("t")
    # Turn 1: primary 429 at t=0, backup answers (t=1.5); turn 2: primary still backing off
    # (until t=2), backup again (t=3); turn 3: primary's back-off is over and it answers.
    assert primary.asked_at == [0.0, 3.0]
    assert result.output == "primary answers"
    assert clock.slept == []


def test_a_retry_after_longer_than_max_wait_is_not_waited_for():
    clock = FakeClock()
    model = Failing("m", 429, clock=clock, retry_after=600.0)
    with pytest.raises(FallbackExhausted) as info:
        Engine(FallbackChain([model], max_wait=60.0), clock=clock).run("t")
    assert model.asked == 1
    assert clock.slept == []
    note = "not asked again: it asked for 600s, longer than max_wait=60s"
    assert f"m: HTTP 429: it failed; {note}" in str(info.value)


def test_a_model_whose_breaker_opened_is_not_asked_again_in_the_same_ask_even_past_its_cooldown():
    clock = FakeClock()
    a = Failing("a", 503, clock=clock, retry_after=5.0)
    b = Failing("b", 503, clock=clock, retry_after=5.0)
    breaker = CircuitBreaker(failure_threshold=1, cooldown=0)
    with pytest.raises(FallbackExhausted):
        Engine(FallbackChain([a, b], breaker=breaker), clock=clock).run("t")
    assert a.asked == b.asked == 1


def test_waiting_out_a_back_off_is_cut_short_by_the_cancel_token():
    token = CancelToken()
    model = Failing("m", 429, retry_after=30.0)
    timer = threading.Timer(0.1, token.cancel)
    timer.start()
    started = time.monotonic()
    try:
        with pytest.raises(Cancelled):
            Engine(model).run("t", cancel=token)
    finally:
        timer.cancel()
    assert time.monotonic() - started < 5.0
    assert model.asked == 1


@pytest.mark.parametrize("kwargs", [{"backoff": -1}, {"max_wait": float("inf")}, {"backoff": True}])
def test_a_back_off_that_is_no_number_of_seconds_is_refused(kwargs):
    with pytest.raises(ValueError, match="must be a finite number of seconds"):
        FallbackChain([ScriptedModel(["x"])], **kwargs)


# -- breakers given clocks of their own ---------------------------------------------------------


def test_a_breaker_given_its_own_clock_keeps_it_in_an_engine():
    clock, calls = FakeClock(), []

    @tool
    def flaky(n: int) -> str:
        """Fails three times, then works."""
        calls.append(1)
        if len(calls) <= 3:
            raise ToolError("busy")
        return "ok"

    def model(messages, tools):
        done = sum(1 for m in messages if m.role == "tool")
        if done == 4:
            clock.advance(31)  # the breaker's own clock: past its 30 s cooldown
        return ToolCall("flaky", {"n": done}) if done < 5 else "done"

    result = Engine(
        FunctionModel(model),
        tools=[flaky],
        breakers=CircuitBreaker(failure_threshold=3, cooldown=30, clock=clock),
    ).run("t")
    assert [r.content for r in result.tool_results] == [
        "busy",
        "busy",
        "busy",
        "tool temporarily unavailable: circuit breaker open",
        "ok",
    ]
