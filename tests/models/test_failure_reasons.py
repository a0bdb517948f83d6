"""A real model's failure is told by what it is, never by what a library said of it.

The clients, their HTTP libraries and the operating system reword their errors from one release
to the next (anthropic 2.17 dropped "refused" from a refused connection, and calls an empty 503
"503 status code (no body)"). loopnb decides from the status, the exception classes and ``errno``
values on the chain of causes, and whether the reply had begun; it says so in its own sentence,
and puts the decision in ``err.reason``.
"""

from __future__ import annotations

import asyncio
import errno
import pickle
import socket
import types
from typing import Any

import pytest
from tblib import pickling_support

from loopnb.engine import ModelUnavailable
from loopnb.engine._messages import Transcript
from loopnb.engine.models import AnthropicModel, OpenAIChatModel
from loopnb.engine.models._failures import NO_MESSAGE, causes, connection_reason, failure_from_exception
from tests.models.fakeserver import Cut, Drop, Fail, FakeServer, Raw
from tests.models.transcripts import READ_FILE, start

KEY = "sk-test-secret-4242424242"


class APIError(Exception):
    pass


class APIStatusError(APIError):
    def __init__(self, message: str, *, status: int, text: str) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status
        self.body = None
        self.response = types.SimpleNamespace(text=text, headers={})


class APIConnectionError(APIError):
    def __init__(self, message: str = "whatever the client says today") -> None:
        super().__init__(message)
        self.request = types.SimpleNamespace(url="http://user:pw@10.0.0.7:8000/v1/chat/completions")


class APITimeoutError(APIConnectionError):
    pass


API = types.SimpleNamespace(
    APIStatusError=APIStatusError, APIConnectionError=APIConnectionError, APITimeoutError=APITimeoutError
)


class RemoteProtocolError(Exception):
    """Named as httpx, httpcore and h11 name a server that broke HTTP."""


def wrapped(inner: BaseException, *, how: str) -> APIConnectionError:
    """``inner`` behind a client's connection error, held as a library holds it."""
    outer = APIConnectionError()
    if how == "cause":
        outer.__cause__ = inner
    elif how == "context":
        outer.__context__ = inner
    elif how == "argument":  # httpcore clears the cause of what it wraps and keeps it as its argument
        middle = Exception(inner)
        middle.__suppress_context__ = True
        outer.__cause__ = middle
    else:  # anyio groups the failures of a host with several addresses
        outer.__cause__ = ExceptionGroup("all attempts failed", [ValueError("first"), inner])
    return outer


def fail(exc: Exception, **kw: Any) -> ModelUnavailable:
    return failure_from_exception(exc, api=API, who="m", env_var="X_KEY", key=KEY, timeout=5.0, **kw)


@pytest.mark.parametrize("how", ["cause", "context", "argument", "group"])
@pytest.mark.parametrize(
    ("inner", "reason", "said"),
    [
        (
            ConnectionRefusedError("any words at all"),
            "refused",
            "connection refused by the server at 10.0.0.7:8000",
        ),
        (OSError(errno.ECONNREFUSED, "x"), "refused", "connection refused by the server at 10.0.0.7:8000"),
        (ConnectionResetError("y"), "reset", "connection reset by the server at 10.0.0.7:8000"),
        (OSError(errno.ECONNRESET, "y"), "reset", "connection reset by the server at 10.0.0.7:8000"),
        (OSError(errno.EPIPE, "y"), "reset", "connection reset by the server at 10.0.0.7:8000"),
        (
            socket.gaierror(-2, "z"),
            "unresolved",
            "the server at 10.0.0.7:8000 cannot be found: its name does not resolve",
        ),
        (
            OSError(errno.EHOSTUNREACH, "w"),
            "unreachable",
            "the network cannot reach the server at 10.0.0.7:8000",
        ),
        (
            OSError(errno.ETIMEDOUT, "v"),
            "timed_out",
            "the connection to the server at 10.0.0.7:8000 timed out",
        ),
        (
            RemoteProtocolError("u"),
            "no_reply",
            "the server at 10.0.0.7:8000 sent no valid reply (it closed the connection or broke HTTP)",
        ),
    ],
)
def test_a_connection_failure_is_told_by_its_class_or_errno(
    inner: BaseException, reason: str, said: str, how: str
) -> None:
    err = fail(wrapped(inner, how=how))
    assert type(err) is ModelUnavailable
    assert err.reason == reason and err.status is None
    assert str(err) == f"m: {said}"
    assert "pw" not in str(err)


def test_an_errno_is_nearer_than_a_protocol_error() -> None:
    protocol = RemoteProtocolError("closed")
    protocol.__context__ = ConnectionResetError()
    assert connection_reason(wrapped(protocol, how="cause")) == "reset"


def test_a_failure_after_the_reply_began_is_a_reply_cut_off() -> None:
    err = fail(wrapped(ConnectionResetError(), how="cause"), began=True)
    assert err.reason == "cut_off"
    assert str(err) == "m: the reply was cut off before its end"


def test_a_timeout_is_a_timeout_even_after_the_reply_began() -> None:
    err = fail(APITimeoutError(), began=True)
    assert err.reason == "timed_out"
    assert str(err) == "m: no reply within 5s (pass timeout=... to wait longer)"


def test_a_failure_nothing_names_keeps_its_account_without_the_key() -> None:
    err = fail(wrapped(ValueError(f"odd {KEY}"), how="cause"))
    assert err.reason is None
    assert str(err).startswith("m: connection failed: APIConnectionError")
    assert KEY not in str(err)


def test_the_chain_is_walked_once_even_when_it_loops() -> None:
    first, second = OSError("a"), OSError("b")
    first.__context__, second.__context__ = second, first
    assert list(causes(first)) == [first, second]
    assert connection_reason(first) is None


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        ("", NO_MESSAGE),
        ("   ", NO_MESSAGE),
        ("{}", NO_MESSAGE),
        ("null", NO_MESSAGE),
        ('{"error": {"message": "busy", "type": "overloaded_error"}}', "busy [overloaded_error]"),
        ("upstream gone", "upstream gone"),
    ],
)
def test_a_status_error_quotes_the_server_never_the_client(text: str, detail: str) -> None:
    client_words = "503 status code (no body) (path: /v1/messages) Error code: 503"
    err = fail(APIStatusError(client_words, status=503, text=text))
    assert str(err) == f"m: HTTP 503: {detail}"
    assert err.status == 503 and err.reason is None


def test_the_reason_survives_pickling() -> None:
    err = ModelUnavailable("m: connection refused", reason="refused")
    again = pickle.loads(pickle.dumps(err))
    assert again.reason == "refused" and str(again) == str(err)


PROVIDERS = {
    "openai": lambda srv, **kw: OpenAIChatModel("m", base_url=srv.openai_url, api_key=KEY, **kw),
    "anthropic": lambda srv, **kw: AnthropicModel("m", base_url=srv.anthropic_url, api_key=KEY, **kw),
}


def run_against(provider: str, server: FakeServer, **kw: Any) -> ModelUnavailable:
    model = PROVIDERS[provider](server, **kw)
    with pytest.raises(ModelUnavailable) as info:
        asyncio.run(model.complete(Transcript(start()), [READ_FILE]))
    return info.value


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_a_reply_reset_mid_body_is_a_reply_cut_off(provider: str, server: FakeServer) -> None:
    server.push(Cut(b'{"id": "x"}' + b" " * 100, 10, reset=True))
    err = run_against(provider, server)
    assert err.reason == "cut_off"
    assert str(err).endswith(": the reply was cut off before its end")


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_a_client_of_your_own_still_gets_a_true_sentence(provider: str, server: FakeServer) -> None:
    # Without loopnb's HTTP client nothing says the reply had begun: the sentence covers both.
    server.push(Cut(b'{"id": "x"}' + b" " * 100, 10))

    async def with_own_client() -> None:
        if provider == "openai":
            import openai

            client: Any = openai.AsyncOpenAI(api_key=KEY, base_url=server.openai_url, max_retries=0)
        else:
            import anthropic

            client = anthropic.AsyncAnthropic(api_key=KEY, base_url=server.anthropic_url, max_retries=0)
        async with client:  # the caller owns the client and closes it
            model = PROVIDERS[provider](server, client=client)
            await model.complete(Transcript(start()), [READ_FILE])

    with pytest.raises(ModelUnavailable) as info:
        asyncio.run(with_own_client())
    assert info.value.reason == "no_reply"
    assert "sent no valid reply (it closed the connection or broke HTTP)" in str(info.value)


# A reply that quotes the key where the adapter cannot read it: the text is redacted, and the
# unredacted first failure must not ride along either.
ECHOED = {
    "openai": Raw(200, b'{"choices": [{"message": {"content": {"said": "' + KEY.encode() + b'"}}}]}'),
    "anthropic": Raw(200, b'{"type": "error", "error": {"message": "' + KEY.encode() + b'"}}'),
}


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
@pytest.mark.parametrize("case", ["401", "dropped", "unreadable"])
def test_a_model_failure_carries_nothing_of_the_clients_exception(
    provider: str, server: FakeServer, case: str
) -> None:
    # The client's exception holds the request, whose headers carry the key. Not even as the
    # context: dask (through tblib) pickles an exception with its context and cause.
    server.push({"401": Fail(401, "invalid key"), "dropped": Drop(), "unreadable": ECHOED[provider]}[case])
    err = run_against(provider, server)
    assert err.__cause__ is None and err.__context__ is None
    pickling_support.install(err)
    dumped = pickle.dumps(err)
    assert KEY.encode() not in dumped
    again = pickle.loads(dumped)
    assert type(again) is type(err) and str(again) == str(err) and KEY not in str(err)
