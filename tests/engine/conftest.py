"""Shared tools and helpers for the engine tests: scripted models only, no network, no sleeping."""

from __future__ import annotations

import pytest

from loopnb import ToolError, tool
from loopnb.engine import turns_of


@tool
def read_file(path: str) -> str:
    """Read a UTF-8 text file."""
    if path != "src/main.rs":
        raise ToolError(f"file {path} not found")
    return "fn main() {}"


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def explode(reason: str) -> str:
    """A tool that crashes."""
    raise RuntimeError(reason)


class Events(list):
    """An observer that keeps every event; helpers to look at them by kind."""

    def __call__(self, event: object) -> None:
        self.append(event)

    def of(self, kind: str) -> list:
        return [e for e in self if e.kind == kind]

    def kinds(self) -> list[str]:
        return [e.kind for e in self]

    def turns(self) -> list:
        """The run's turns, put back together from the events."""
        return turns_of(self)


@pytest.fixture
def events() -> Events:
    return Events()
