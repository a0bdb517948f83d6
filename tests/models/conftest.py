"""Fixtures for the real-adapter tests: a scripted local server, and a guard that keeps every
test on 127.0.0.1 with no key or model choice leaking in from the environment."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from tests.models.fakeserver import FakeServer

ENV_VARS = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_PROFILE",
    "LOOPNB_MODEL",
    "LOOPNB_BASE_URL",
)


def _host(host: Any) -> str | None:
    return host.decode() if isinstance(host, bytes) else None if host is None else str(host)


def _is_loopback(host: str | None) -> bool:
    if host is None or host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def only_loopback(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Refuse (and report) any connection or name lookup beyond the loopback interface."""
    for var in ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    attempts: list[str] = []
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def check(address: Any) -> None:
        host = _host(address[0]) if isinstance(address, tuple) else None
        if isinstance(address, tuple) and not _is_loopback(host):
            attempts.append(str(host))
            raise ConnectionRefusedError(f"test guard: no connections beyond 127.0.0.1 ({host})")

    def connect(self: socket.socket, address: Any) -> None:
        check(address)
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        check(address)
        return real_connect_ex(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not _is_loopback(_host(host)):
            attempts.append(str(_host(host)))
            raise socket.gaierror(f"test guard: no name lookups beyond localhost ({host})")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield attempts
    assert not attempts, f"a test tried to reach beyond 127.0.0.1: {attempts}"


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as srv:
        yield srv


@pytest.fixture
def second_server() -> Iterator[FakeServer]:
    with FakeServer() as srv:
        yield srv
