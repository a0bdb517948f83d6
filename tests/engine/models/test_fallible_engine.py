"""FallibleModel inside the real engine: every slip it makes is read back and fixed."""

from __future__ import annotations

import pytest

from loopnb import Engine, ToolCall, ToolError, tool
from loopnb.engine import ModelReply
from loopnb.engine.models import FallibleModel

FILES = {"src/main.rs": "fn main() {}", "notes.txt": "ship it"}


@tool
def read_file(path: str) -> str:
    """Read a UTF-8 text file."""
    if path not in FILES:
        raise ToolError(f"file {path} not found")
    return FILES[path]


@tool
def head(path: str, lines: int) -> str:
    """The first lines of a file."""
    if path not in FILES:
        raise ToolError(f"file {path} not found")
    return "\n".join(FILES[path].splitlines()[:lines])


def first_calls(seed: int, plan: list[ToolCall]) -> tuple[list[ToolCall], str | None, list[str]]:
    engine = Engine(FallibleModel(plan, seed=seed), tools=[read_file, head])
    result = engine.run("Look at src/main.rs")
    sent = [c for m in result.messages if isinstance(m, ModelReply) for c in m.tool_calls]
    producers = [r.producer or "ok" for r in result.tool_results]
    return sent, result.output, producers


@pytest.mark.parametrize("seed", range(25))
def test_any_seed_reaches_the_answer_through_the_engine(seed: int) -> None:
    plan = [
        ToolCall("read_file", {"path": "src/main.rs"}),
        ToolCall("head", {"path": "notes.txt", "lines": 2}),
    ]
    sent, output, producers = first_calls(seed, plan)
    assert output == "read_file(src/main.rs) returned: fn main() {}. head(notes.txt, 2) returned: ship it."
    assert producers.count("ok") == 2
    assert set(producers) - {"ok"} <= {"tool_error", "invalid_arguments", "not_advertised"}
    assert len(sent) <= 4  # one slip per step, one correction each


def test_across_seeds_every_kind_of_slip_shows_up_and_is_fixed() -> None:
    plan = [ToolCall("head", {"path": "notes.txt", "lines": 2})]
    seen = set()
    for seed in range(40):
        sent, output, producers = first_calls(seed, plan)
        assert output == "head(notes.txt, 2) returned: ship it."
        seen.add(producers[0])
        if producers[0] == "invalid_arguments":
            args = sent[0].arguments
            assert isinstance(args, dict)
            seen.add("wrong key" if set(args) != {"path", "lines"} else "wrong type")
    assert {"tool_error", "invalid_arguments", "not_advertised", "wrong key", "wrong type"} <= seen


def test_a_derived_plan_runs_through_the_engine() -> None:
    engine = Engine(FallibleModel(mistakes=()), tools=[read_file])
    result = engine.run("What do src/main.rs and notes.txt say?")
    assert (
        result.output
        == "read_file(src/main.rs) returned: fn main() {}. read_file(notes.txt) returned: ship it."
    )


def test_the_same_engine_run_twice_replays_identically() -> None:
    engine = Engine(FallibleModel(seed=11), tools=[read_file, head])
    a = engine.run("Look at src/main.rs and notes.txt")
    b = engine.run("Look at src/main.rs and notes.txt")
    assert [r.content for r in a.tool_results] == [r.content for r in b.tool_results]
    assert a.output == b.output
