"""A server's context-length refusal that compaction cannot get past ends the run saying so.

The error names the server's refusal of the request's size and what compaction tried, not a
budget the user never set.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from loopnb import ContextBudget, ContextExceeded, Engine, FakeClock, ToolError, tool
from loopnb.engine.models import OpenAIChatModel
from tests.models.fakeserver import Fail, FakeServer, Reply

TASK = "What does src/main.rs do?"
REFUSAL = "This model's maximum context length is 8192 tokens"


@tool
def read_file(path: str) -> str:
    """Read a UTF-8 text file."""
    if path != "src/main.rs":
        raise ToolError(f"file {path} not found")
    return "fn main() {}"


def reads(n: int) -> list[Reply]:
    return [Reply(calls=[("read_file", {"path": f"src/{i}.rs"})]) for i in range(n)]


def run(server: FakeServer, **kw: Any) -> ContextExceeded:
    model = OpenAIChatModel("m", base_url=server.openai_url, api_key="sk-overflow")
    with pytest.raises(ContextExceeded) as info:
        Engine(model, tools=[read_file], clock=FakeClock(), **kw).run(TASK)
    return info.value


def test_a_refusal_with_nothing_to_drop_names_the_refusal_not_a_budget(server: FakeServer) -> None:
    server.push(*reads(1), Fail.overflow())
    message = str(run(server))
    assert message.startswith("the model's server refused the request's size (openai:m@127.0.0.1:")
    assert REFUSAL in message
    stuck = r"the request is \d+ tokens by loopnb's count, and compaction has nothing left to drop"
    assert re.search(stuck, message)
    assert "budget" not in message
    assert len(server.requests) == 2


def test_the_refusal_says_how_far_compaction_shrank_the_request(server: FakeServer) -> None:
    server.push(*reads(3), Fail.overflow(), Fail.overflow(), Fail.overflow())
    message = str(run(server))
    shrank = re.search(r"compaction shrank the request 2 times \((\d+) -> (\d+) -> (\d+) tokens", message)
    assert shrank is not None
    sizes = [int(n) for n in shrank.groups()]
    assert sizes == sorted(sizes, reverse=True) and len(set(sizes)) == 3
    assert "the server refused it each time, and then compaction has nothing left to drop" in message
    assert "budget" not in message
    assert len(server.requests) == 6


def test_with_a_budget_set_the_refusal_is_still_the_servers(server: FakeServer) -> None:
    server.push(*reads(2), Fail.overflow(), Fail.overflow())
    message = str(run(server, context=ContextBudget(100_000)))
    assert message.startswith("the model's server refused the request's size (")
    assert "compaction shrank the request once (" in message
    assert "the server refused it again, and then compaction has nothing left to drop" in message
    assert "budget" not in message


def test_a_compactor_that_fails_after_a_refusal_is_named(server: FakeServer) -> None:
    def compactor(items: list[Any], target: int) -> list[Any]:
        raise RuntimeError("summariser offline")

    server.push(*reads(2), Fail.overflow())
    message = str(run(server, context=ContextBudget(100_000, compactor=compactor)))
    assert message.startswith("the model's server refused the request's size (")
    assert message.endswith("and the compactor raised RuntimeError: summariser offline")
