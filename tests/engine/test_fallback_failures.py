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
