"""Every way a real model can fail maps to one ``ModelUnavailable`` kind, for both adapters.

No client exception escapes raw, nothing is retried inside the client (``max_retries=0``), and
the key never shows in an error's text.
"""

from __future__ import annotations

import asyncio
import email.utils
import pickle
import socket
import time
from collections.abc import Callable
from typing import Any

import pytest

from loopnb.engine import ModelAuthError, ModelContextOverflow, ModelUnavailable
from loopnb.engine._messages import Transcript
from loopnb.engine.models import AnthropicModel, ModelConfigError, OpenAIChatModel
from loopnb.engine.models._failures import failure_from_status
from tests.models.fakeserver import Action, Cut, Drop, Fail, FakeServer, Raw, Reply, Stall, Trickle
from tests.models.transcripts import READ_FILE, start

KEY = "sk-test-secret-4242424242"

Factory = Callable[..., Any]
PROVIDERS: dict[str, tuple[Factory, str]] = {
    "openai": (
        lambda srv, **kw: OpenAIChatModel("m", base_url=srv.openai_url, api_key=KEY, **kw),
        "OPENAI_API_KEY",
    ),
    "anthropic": (
        lambda srv, **kw: AnthropicModel("m", base_url=srv.anthropic_url, api_key=KEY, **kw),
        "ANTHROPIC_API_KEY",
    ),
}


@pytest.fixture(params=sorted(PROVIDERS))
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def fail_with(provider: str, server: FakeServer, action: Action, **kw: Any) -> ModelUnavailable:
    server.push(action)
    model = PROVIDERS[provider][0](server, **kw)
    with pytest.raises(ModelUnavailable) as info:
        asyncio.run(model.complete(Transcript(start()), [READ_FILE]))
    return info.value


# What a failure without an HTTP status was; one with a status has no reason: the status says it.
REASONS: dict[Action, str] = {Drop(): "no_reply", Drop(reset=True): "reset"}

CASES = [
    pytest.param(Fail(500, "boom"), ModelUnavailable, 500, "HTTP 500: boom", id="500"),
    pytest.param(Fail(502, "bad gateway"), ModelUnavailable, 502, "HTTP 502", id="502"),
    pytest.param(Fail(503, "down"), ModelUnavailable, 503, "HTTP 503", id="503"),
    pytest.param(Fail(529, "overloaded"), ModelUnavailable, 529, "overloaded", id="529"),
    pytest.param(Fail(429, "slow down"), ModelUnavailable, 429, "HTTP 429: slow down", id="429"),
    pytest.param(Fail(404, "model 'm' not found"), ModelUnavailable, 404, "not found", id="404"),
    pytest.param(Fail(400, "messages: required"), ModelUnavailable, 400, "required", id="400"),
    pytest.param(Drop(), ModelUnavailable, None, "sent no valid reply", id="dropped"),
    pytest.param(Drop(reset=True), ModelUnavailable, None, "connection reset by the server at", id="reset"),
    pytest.param(Fail.overflow(), ModelContextOverflow, 400, "maximum context length", id="context-400"),
    pytest.param(
        Fail(400, "prompt is too long: 210000 tokens > 200000 maximum"),
        ModelContextOverflow,
        400,
        "prompt is too long",
        id="prompt-too-long",
    ),
    pytest.param(Fail(413, "request too large"), ModelContextOverflow, 413, "413", id="413"),
    pytest.param(Fail(401, "invalid key"), ModelAuthError, 401, "credentials refused", id="401"),
    pytest.param(Fail(403, "no access"), ModelAuthError, 403, "credentials refused", id="403"),
]


@pytest.mark.parametrize(("action", "kind", "status", "text"), CASES)
def test_each_failure_maps_to_one_kind(
    provider: str,
    server: FakeServer,
    action: Action,
    kind: type[ModelUnavailable],
    status: int | None,
    text: str,
) -> None:
    err = fail_with(provider, server, action)
    assert type(err) is kind
    assert err.status == status
    assert err.reason == (None if status is not None else REASONS[action])
    assert text in str(err)
    assert str(err).startswith(f"{provider}:m@127.0.0.1:{server.port}: ")
    assert len(server.requests) == 1, "the client must not retry: loopnb's chain does"
    assert err.__cause__ is None and err.__context__ is None
    assert KEY not in str(err)


def test_an_auth_error_names_the_variable_to_set(provider: str, server: FakeServer) -> None:
    err = fail_with(provider, server, Fail(401, "invalid key"))
    env_var = PROVIDERS[provider][1]
    assert isinstance(err, ModelAuthError)
    assert err.env_var == env_var
    assert f"set {env_var}" in str(err)
    assert pickle.loads(pickle.dumps(err)).env_var == env_var


def test_a_key_the_server_echoes_back_is_redacted(provider: str, server: FakeServer) -> None:
    err = fail_with(provider, server, Fail(401, f"Incorrect API key provided: {KEY}."))
    assert KEY not in str(err)
    assert "Incorrect API key provided: ***." in str(err)


def test_a_server_that_never_answers_times_out(provider: str, server: FakeServer) -> None:
    err = fail_with(provider, server, Stall(30), timeout=0.2)
    assert type(err) is ModelUnavailable
    assert str(err).endswith("no reply within 0.2s (pass timeout=... to wait longer)")
    assert err.reason == "timed_out"


def test_an_unreadable_reply_is_a_model_failure(provider: str, server: FakeServer) -> None:
    err = fail_with(provider, server, Raw(200, b"<html>maintenance</html>", "text/html"))
    assert type(err) is ModelUnavailable
    assert KEY not in str(err)


def test_an_html_error_page_keeps_its_status(provider: str, server: FakeServer) -> None:
    err = fail_with(provider, server, Raw(502, b"<html>Bad Gateway</html>", "text/html"))
    assert type(err) is ModelUnavailable
    assert err.status == 502


def test_a_refused_connection_is_a_model_failure(provider: str) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    factory = PROVIDERS[provider][0]
    base = f"http://127.0.0.1:{port}"

    class Closed:
        openai_url = f"{base}/v1"
        anthropic_url = base

    model = factory(Closed())
    with pytest.raises(ModelUnavailable) as info:
        asyncio.run(model.complete(Transcript(start()), [READ_FILE]))
    assert type(info.value) is ModelUnavailable
    assert info.value.reason == "refused" and info.value.status is None
    assert (
        str(info.value)
        == f"{provider}:m@127.0.0.1:{port}: connection refused by the server at 127.0.0.1:{port}"
    )


@pytest.mark.parametrize(
    ("status", "detail", "kind"),
    [
        (400, "This model's maximum context length is 4096 tokens", ModelContextOverflow),
        (
            400,
            "input length exceeds context length [context_length_exceeded]",
            ModelContextOverflow,
        ),
        (400, "the request exceeds the available context size", ModelContextOverflow),
        (400, "Input is too long for requested model.", ModelContextOverflow),
        (422, "too many tokens in prompt", ModelContextOverflow),
        (400, "tools: invalid schema", ModelUnavailable),
        (429, "context window rate limit", ModelUnavailable),
        (500, "context length overflow in worker", ModelUnavailable),
    ],
)
def test_context_overflow_is_recognised_by_its_words_only_on_4xx(
    status: int, detail: str, kind: type[ModelUnavailable]
) -> None:
    err = failure_from_status(status, detail, who="m", env_var="X_KEY")
    assert type(err) is kind
    assert err.status == status


def test_the_guard_keeps_tests_off_the_internet(provider: str, only_loopback: list[str]) -> None:
    model = (OpenAIChatModel if provider == "openai" else AnthropicModel)("m", api_key=KEY)
    with pytest.raises(ModelUnavailable) as info:
        asyncio.run(model.complete(Transcript(start()), [READ_FILE]))
    # the guard refuses the name lookup (or, with a cached address, the connection)
    assert info.value.reason in ("unresolved", "refused")
    assert only_loopback and all(host.startswith("api.") for host in only_loopback)
    only_loopback.clear()  # the refusal was the point of this test


@pytest.mark.parametrize(
    ("action", "text"),
    [
        pytest.param(
            Raw(502, b"<html><body><h1>502 Bad Gateway</h1></body></html>", "text/html"),
            "HTTP 502: 502 Bad Gateway",
            id="html-page",
        ),
        pytest.param(
            Raw(
                503,
                b"<!DOCTYPE html><html><head><title>example.com | 503: Service unavailable</title>"
                b"<style>body{}</style></head><body>...</body></html>",
                "text/html",
            ),
            "HTTP 503: example.com | 503: Service unavailable",
            id="html-title",
        ),
        pytest.param(
            Raw(500, b"upstream connect error", "text/plain"),
            "HTTP 500: upstream connect error",
            id="plain-text",
        ),
        pytest.param(Raw(503, b""), "HTTP 503: the server sent no error message", id="empty-body"),
        pytest.param(Raw(422, b'{"detail": "Unprocessable"}'), "HTTP 422: Unprocessable", id="detail"),
        pytest.param(Raw(200, b""), "the reply is not JSON: (empty)", id="empty-200"),
        pytest.param(
            Raw(200, b'{"id": "x", "choi'), 'the reply is not JSON: {"id": "x", "choi', id="truncated-200"
        ),
        pytest.param(
            Raw(200, b"<html>down for maintenance</html>", "text/html"), "down for maintenance", id="html-200"
        ),
    ],
)
def test_what_a_server_sent_is_named_in_the_failure(
    provider: str, server: FakeServer, action: Action, text: str
) -> None:
    err = fail_with(provider, server, action)
    assert type(err) is ModelUnavailable
    # loopnb's sentence, then the server's own words: nothing the client library said of them
    assert str(err).startswith(f"{provider}:m@127.0.0.1:{server.port}: ")
    assert str(err).endswith(text)


def test_a_reply_cut_off_mid_body_is_a_model_failure(provider: str, server: FakeServer) -> None:
    err = fail_with(provider, server, Cut(b'{"id": "x", "choices": []}' + b" " * 100, 10))
    assert type(err) is ModelUnavailable
    assert err.reason == "cut_off" and err.status is None
    assert str(err) == f"{provider}:m@127.0.0.1:{server.port}: the reply was cut off before its end"


def test_a_reply_that_stalls_mid_body_times_out(provider: str, server: FakeServer) -> None:
    err = fail_with(provider, server, Cut(b'{"id": "x"}' + b" " * 100, 10, stall=30), timeout=0.2)
    assert str(err).endswith("no reply within 0.2s (pass timeout=... to wait longer)")
    assert err.reason == "timed_out"


def test_a_reply_that_trickles_for_ever_times_out_as_a_whole(provider: str, server: FakeServer) -> None:
    started = time.monotonic()
    err = fail_with(provider, server, Trickle(b'{"id": "x"}' + b" " * 400, every=0.05), timeout=0.5)
    assert str(err).endswith("no reply within 0.5s (pass timeout=... to wait longer)")
    assert err.reason == "timed_out"
    assert time.monotonic() - started < 5  # each byte came in time; the whole reply did not


def test_a_404_names_the_model_and_the_url_asked(provider: str, server: FakeServer) -> None:
    err = fail_with(provider, server, Raw(404, b"404 page not found", "text/plain"))
    path = "/v1/chat/completions" if provider == "openai" else "/v1/messages"
    assert f"HTTP 404: 404 page not found (POST http://127.0.0.1:{server.port}{path}, model 'm'" in str(err)
    assert "check the model name, and that base_url is the " in str(err)
    assert type(err) is ModelUnavailable and err.status == 404


def test_a_404_never_shows_credentials_from_the_url(provider: str, server: FakeServer) -> None:
    server.push(Fail(404, "no such model"))
    base = f"http://user:pw-4242@127.0.0.1:{server.port}"
    model = PROVIDERS[provider][0](type("S", (), {"openai_url": base + "/v1", "anthropic_url": base})())
    with pytest.raises(ModelUnavailable) as info:
        asyncio.run(model.complete(Transcript(start()), [READ_FILE]))
    assert "pw-4242" not in str(info.value) and "user" not in str(info.value)
    assert f"POST http://127.0.0.1:{server.port}/" in str(info.value)


@pytest.mark.parametrize(
    ("status", "headers", "text", "seconds"),
    [
        (429, (("Retry-After", "20"),), "; retry after 20s", 20.0),
        (
            503,
            (("Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT"),),
            "; retry after Wed, 21 Oct 2015 07:28:00 GMT",
            0.0,  # a date already past (by the server's own Date header): ask again now
        ),
        (529, (("Retry-After", "5"),), "; retry after 5s", 5.0),
        (429, (("retry-after-ms", "1500"), ("Retry-After", "2")), "; retry after 2s", 1.5),
    ],
)
def test_a_refusal_says_when_to_come_back(
    provider: str,
    server: FakeServer,
    status: int,
    headers: tuple[tuple[str, str], ...],
    text: str,
    seconds: float,
) -> None:
    err = fail_with(provider, server, Fail(status, "busy", headers=headers))
    assert str(err).endswith(text)
    assert err.status == status
    assert err.retry_after == seconds


def test_a_retry_after_date_counts_from_the_servers_own_date(provider: str, server: FakeServer) -> None:
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    err = fail_with(provider, server, Fail(503, "busy", headers=(("Retry-After", when),)))
    assert err.retry_after is not None and 28.0 <= err.retry_after <= 31.0


def test_a_429_without_retry_after_says_nothing_of_it(provider: str, server: FakeServer) -> None:
    err = fail_with(provider, server, Fail(429, "slow down", headers=()))
    assert "retry after" not in str(err)
    assert err.retry_after is None


def test_a_retry_after_on_a_client_error_is_not_taken(provider: str, server: FakeServer) -> None:
    err = fail_with(provider, server, Fail(400, "invalid model name", headers=(("Retry-After", "3"),)))
    assert err.retry_after is None


@pytest.mark.parametrize("timeout", [0, -1, float("nan"), float("inf"), "60", True])
def test_a_timeout_that_is_no_number_of_seconds_is_refused(provider: str, timeout: object) -> None:
    with pytest.raises(ModelConfigError, match=r"timeout must be a positive number of seconds.*got"):
        PROVIDERS[provider][0](
            type("S", (), {"openai_url": "http://127.0.0.1:9/v1", "anthropic_url": "http://127.0.0.1:9"})(),
            timeout=timeout,
        )


def test_the_timeout_defaults_to_a_minute_and_none_waits_without_limit(
    provider: str, server: FakeServer
) -> None:
    factory = PROVIDERS[provider][0]
    assert factory(server).timeout == 60.0
    server.push(Reply("ok"))
    model = factory(server, timeout=None)
    assert asyncio.run(model.complete(Transcript(start()), [READ_FILE])).text == "ok"
