"""How the fallback chain counts and reports a model's failures."""

from __future__ import annotations

import pytest

from loopnb import Engine, FallbackChain, FallbackExhausted, ModelUnavailable, ScriptedModel
from loopnb.engine.messages import ModelReply


class Failing:
    """A model that always fails the same way, as an adapter reports it (its name first)."""

    def __init__(self, name: str, status: int | None) -> None:
        self.name, self.status, self.asked = name, status, 0

    async def complete(self, messages, tools) -> ModelReply:
        self.asked += 1
        raise ModelUnavailable(f"{self.name}: HTTP {self.status}: it failed", status=self.status)


@pytest.mark.parametrize(("status", "asked"), [(404, 1), (503, 3), (None, 3)])
def test_a_404_opens_the_breaker_at_once_other_failures_count_up(status, asked):
    model = Failing("openai:m@127.0.0.1:9", status)
    with pytest.raises(FallbackExhausted):
        Engine(model).run("t")
    assert model.asked == asked


def test_a_failure_names_its_model_once():
    model = Failing("openai:m@127.0.0.1:9", 404)
    with pytest.raises(FallbackExhausted) as info:
        Engine(FallbackChain([model, ScriptedModel([], name="backup")])).run("t")
    message = str(info.value)
    assert message.count("openai:m@127.0.0.1:9") == 1
    assert "openai:m@127.0.0.1:9: HTTP 404: it failed" in message


def test_a_breaker_given_its_own_clock_keeps_it_in_an_engine():
    from loopnb import CircuitBreaker, ToolCall, ToolError, tool
    from loopnb.engine.clock import FakeClock

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

    from loopnb import FunctionModel

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
