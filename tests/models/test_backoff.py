"""The fallback chain's back-off against the local protocol server, as against a real proxy.

A 429 or 5xx moves on to another model at once and asks the same model again only after the
server's ``Retry-After`` (or a jittered back-off); a failure no retry can fix is sent once.
"""

from __future__ import annotations

import pickle
import random
import time
from collections.abc import Callable
from typing import Any

import pytest

from loopnb import Engine, FakeClock, FallbackChain, FallbackExhausted, ModelUnavailable
from loopnb.engine.models import AnthropicModel, OpenAIChatModel
from loopnb.engine.models._failures import retry_after_seconds
from tests.models.fakeserver import Action, Fail, FakeServer, Received, Reply

KEY = "sk-backoff-secret-5151515151"

Factory = Callable[..., Any]
MODELS: dict[str, Factory] = {
    "openai": lambda srv: OpenAIChatModel("m", base_url=srv.openai_url, api_key=KEY),
    "anthropic": lambda srv: AnthropicModel("m", base_url=srv.anthropic_url, api_key=KEY),
}


@pytest.fixture(params=sorted(MODELS))
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def timed(action: Action, stamps: list[float]) -> Callable[[Received], Action]:
    """``action``, noting the real time the server received its request."""

    def answer(request: Received) -> Action:
        stamps.append(time.monotonic())
        return action

    return answer


def test_a_429_with_retry_after_is_waited_out_on_the_engines_clock(provider: str, server: FakeServer) -> None:
    server.push(Fail(429, "rate limited", headers=(("Retry-After", "2"),)), Reply("ok"))
    clock = FakeClock()
    result = Engine(MODELS[provider](server), clock=clock).run("t")
    assert result.output == "ok"
    assert clock.slept == [2.0]
    assert len(server.requests) == 2


def test_a_5xx_without_retry_after_backs_off_with_seeded_jitter(provider: str, server: FakeServer) -> None:
    server.push(Fail(503, "down"), Fail(502, "bad gateway"), Fail(500, "boom"))
    clock = FakeClock()
    chain = FallbackChain([MODELS[provider](server)], rng=random.Random(11))
    with pytest.raises(FallbackExhausted, match="HTTP 500: boom"):
        Engine(chain, clock=clock).run("t")
    rng = random.Random(11)
    assert clock.slept == [d * (1.0 - 0.5 * rng.random()) for d in (0.5, 1.0)]
    assert len(server.requests) == 3


def test_a_5xx_moves_on_to_the_next_server_at_once(
    provider: str, server: FakeServer, second_server: FakeServer
) -> None:
    server.push(Fail(503, "down", headers=(("Retry-After", "1"),)))
    second_server.push(Reply("from the second server"))
    clock = FakeClock()
    chain = FallbackChain([MODELS[provider](server), MODELS[provider](second_server)])
    result = Engine(chain, clock=clock).run("t")
    assert result.output == "from the second server"
    assert clock.slept == []
    assert len(server.requests) == len(second_server.requests) == 1


@pytest.mark.parametrize(
    "fail",
    [
        Fail(400, "Invalid model name passed in model=gpt-nope", code="invalid_model"),
        Fail(401, "invalid key"),
        Fail(403, "no access"),
        Fail(404, "model not found"),
    ],
    ids=["400-invalid-model", "401", "403", "404"],
)
def test_a_failure_no_retry_can_fix_is_sent_once(provider: str, server: FakeServer, fail: Fail) -> None:
    server.push(fail, fail, fail)
    clock = FakeClock()
    with pytest.raises(FallbackExhausted, match=f"HTTP {fail.status}"):
        Engine(MODELS[provider](server), clock=clock).run("t")
    assert len(server.requests) == 1
    assert clock.slept == []


def test_retry_after_is_honoured_in_real_time(provider: str, server: FakeServer) -> None:
    stamps: list[float] = []
    server.push(
        timed(Fail(429, "rate limited", headers=(("Retry-After", "1"),)), stamps),
        timed(Reply("ok"), stamps),
    )
    result = Engine(MODELS[provider](server)).run("t")  # the real clock
    assert result.output == "ok"
    assert len(stamps) == 2
    assert 0.98 <= stamps[1] - stamps[0] < 5.0


@pytest.mark.parametrize(
    ("milliseconds", "retry_after", "date", "seconds"),
    [
        ("", "20", "", 20.0),
        ("", "0.5", "", 0.5),
        ("1500", "20", "", 1.5),
        ("", "Wed, 21 Oct 2015 07:28:30 GMT", "Wed, 21 Oct 2015 07:28:00 GMT", 30.0),
        ("", "Wed, 21 Oct 2015 07:27:00 GMT", "Wed, 21 Oct 2015 07:28:00 GMT", 0.0),
        ("", "Wed, 21 Oct 2015 07:28:30 GMT", "", None),  # no Date: no way to count from it
        ("", "soon", "", None),
        ("", "-5", "", None),
        ("nan", "inf", "", None),
        ("", "", "", None),
    ],
)
def test_retry_after_headers_as_seconds(
    milliseconds: str, retry_after: str, date: str, seconds: float | None
) -> None:
    assert retry_after_seconds(milliseconds, retry_after, date) == seconds


def test_retry_after_survives_a_pickle() -> None:
    err = ModelUnavailable("m: HTTP 429: slow down", status=429, retry_after=2.5)
    again = pickle.loads(pickle.dumps(err))
    assert (again.status, again.retry_after, str(again)) == (429, 2.5, str(err))
