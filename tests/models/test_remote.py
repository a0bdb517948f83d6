"""The plumbing the adapters share: per-loop clients, keys, labels, error details, options."""

from __future__ import annotations

import asyncio
import types

import pytest

from loopnb import Engine, ScriptedModel
from loopnb.engine.models import ModelConfigError
from loopnb.engine.models._failures import describe_exception
from loopnb.engine.models._remote import (
    NO_KEY,
    PerLoop,
    error_detail,
    redact,
    request_options,
    resolve_key,
    server_label,
)


class Client:
    def __init__(self) -> None:
        self.closed = False

    async def close(self) -> None:
        self.closed = True


def test_one_client_per_loop_closed_when_the_loop_shuts_down() -> None:
    clients = PerLoop(Client, Client.close)

    async def use() -> tuple[Client, Client]:
        return await clients.get(), await clients.get()

    first, again = asyncio.run(use())
    assert first is again
    assert first.closed
    second, _ = asyncio.run(use())
    assert second is not first and second.closed


def test_the_engine_closes_the_client_of_each_run() -> None:
    clients = PerLoop(Client, Client.close)
    seen: list[Client] = []

    async def reply(messages: object, tools: object) -> str:
        seen.append(await clients.get())
        return "done"

    from loopnb import FunctionModel

    engine = Engine(FunctionModel(reply))
    engine.run("one")
    engine.run("two")
    assert len(seen) == 2 and seen[0] is not seen[1]
    assert all(c.closed for c in seen)
    assert ScriptedModel  # the engine's own doubles stay importable beside the adapters


def test_a_client_that_fails_to_close_does_not_break_the_loop() -> None:
    class Stubborn(Client):
        async def close(self) -> None:
            raise OSError("already gone")

    clients = PerLoop(Stubborn, Stubborn.close)

    async def use() -> Stubborn:
        return await clients.get()

    assert isinstance(asyncio.run(use()), Stubborn)


def test_resolve_key_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("X_KEY", "from-env")
    assert resolve_key("given", env_var="X_KEY", base_url=None, adapter="A") == "given"
    assert resolve_key(None, env_var="X_KEY", base_url=None, adapter="A") == "from-env"
    monkeypatch.delenv("X_KEY")
    assert resolve_key(None, env_var="X_KEY", base_url="http://127.0.0.1:1", adapter="A") == NO_KEY
    with pytest.raises(ModelConfigError, match="A needs an API key: set X_KEY"):
        resolve_key("", env_var="X_KEY", base_url=None, adapter="A")


@pytest.mark.parametrize(
    ("url", "label"),
    [
        (None, ""),
        ("http://127.0.0.1:11434/v1", "127.0.0.1:11434"),
        ("https://api.example.com/v1", "api.example.com"),
        ("http://user:secret@10.0.0.2:8000/v1", "10.0.0.2:8000"),
    ],
)
def test_server_label_drops_credentials(url: str | None, label: str) -> None:
    assert server_label(url) == label


def test_redact() -> None:
    assert redact("key sk-1 and sk-1", "sk-1") == "key *** and ***"
    assert redact("nothing here", "sk-1") == "nothing here"
    assert redact("no-key is not secret", NO_KEY) == "no-key is not secret"
    assert redact("text", None) == "text"


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        ({"error": {"message": "boom", "code": "x"}}, "boom [x]"),
        ({"message": "inner", "type": "server_error"}, "inner [server_error]"),
        ({"type": "error", "error": {"type": "api_error", "message": "m"}}, "m [api_error]"),
        ({"error": "plain"}, "plain"),
        ("<html>", "fallback"),
        ("  ", "fallback"),
        ("<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>", "502 Bad Gateway"),
        (
            "<html><body><h1>Service\n  Unavailable</h1><script>x()</script></body></html>",
            "Service Unavailable",
        ),
        ("upstream timed out &amp; gave up", "upstream timed out &amp; gave up"),
        ("<p>Tom &amp; Jerry</p>", "Tom & Jerry"),
        ({"detail": "Not Found"}, "Not Found"),
        ({"status": "down"}, '{"status": "down"}'),
        (None, "fallback"),
        ({"error": {"message": "x" * 400}}, "x" * 297 + "..."),
    ],
)
def test_error_detail(body: object, detail: str) -> None:
    assert error_detail(body, "fallback") == detail


def test_describe_exception_names_the_deepest_cause() -> None:
    inner = ConnectionResetError(104, "Connection reset by peer")
    try:
        try:
            raise inner
        except OSError as caught:
            raise RuntimeError("") from caught
    except RuntimeError as outer:
        assert describe_exception(outer) == f"RuntimeError (ConnectionResetError: {inner})"


def test_request_options_split_known_and_unknown() -> None:
    async def create(*, model: str, temperature: float = 1.0, extra_body: object = None) -> None:
        pass

    api = types.SimpleNamespace(resources=types.SimpleNamespace(create=create))
    assert request_options(api, "resources.create", {"temperature": 0, "top_k": 3}, adapter="A") == {
        "temperature": 0,
        "extra_body": {"top_k": 3},
    }
    assert request_options(api, "moved.create", {"top_k": 3}, adapter="A") == {"top_k": 3}
    with pytest.raises(ModelConfigError, match="A sets messages, model itself"):
        request_options(api, "resources.create", {"model": "x", "messages": []}, adapter="A")
