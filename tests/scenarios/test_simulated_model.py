"""The simulated model the scenarios rely on: every seed, every process, every tool, every text.

A teacher relies on a scenario ending as declared whatever the seed, on a run replaying exactly
in another process, on the model reading nothing but the transcript and the tool specs, and on
it doing something sensible (and finishing) with tools that are not the scenario workspace's.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import os
import subprocess
import sys
import textwrap
from typing import Literal

import pytest
from pydantic import BaseModel

from loopnb import (
    ContextBudget,
    Engine,
    FallibleModel,
    LoopError,
    Message,
    ModelReply,
    RunResult,
    ToolCall,
    ToolError,
    ToolResult,
    ToolSpec,
    scenarios,
    tool,
)

SEEDED = [n for n in scenarios.names() if n != "hanging_tool"]  # the one with a real 0.2 s timeout
FILES = {"src/main.rs": "fn main() {}", "src/lib.rs": "pub fn add", "README.md": "A tiny Rust program."}


def finish(engine: Engine, task: str) -> RunResult:
    try:
        return engine.run(task)
    except LoopError as err:
        assert err.run is not None
        return err.run


def calls_of(run: RunResult) -> list[tuple[str, object]]:
    return [(c.name, c.arguments) for m in run.messages if isinstance(m, ModelReply) for c in m.tool_calls]


# -- every seed ----------------------------------------------------------------------------


def test_every_scenario_ends_as_declared_for_seeds_0_to_200() -> None:
    wrong = [
        (name, seed, outcome.mismatch())
        for name in SEEDED
        for seed in range(201)
        if not (outcome := scenarios.get(name).run(seed=seed)).as_expected
    ]
    assert wrong == []


# -- determinism ---------------------------------------------------------------------------

_DIGEST = textwrap.dedent(
    """
    import hashlib
    from loopnb import scenarios
    h = hashlib.sha256()
    for name in {names!r}:
        for seed in range(8):
            outcome = scenarios.get(name).run(seed=seed)
            h.update(repr([*outcome.run.messages, outcome.output]).encode())
    print(h.hexdigest())
    """
)


def _digest_in_a_process(hash_seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    code = _DIGEST.format(names=SEEDED)
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=True
    )
    return proc.stdout.strip()


def test_the_same_seed_gives_the_same_transcripts_whatever_the_hash_seed() -> None:
    digests = {_digest_in_a_process(s) for s in ("0", "1", "random")}
    here = hashlib.sha256()
    for name in SEEDED:
        for seed in range(8):
            outcome = scenarios.get(name).run(seed=seed)
            here.update(repr([*outcome.run.messages, outcome.output]).encode())
    assert digests == {here.hexdigest()}


def test_one_model_run_twice_in_a_process_replays_identically() -> None:
    model = FallibleModel(seed=5)
    tools = [_read_file("names the path"), _search]
    first = finish(Engine(model, tools=tools), "Read src/mian.rs and search 'needle'")
    second = finish(Engine(model, tools=tools), "Read src/mian.rs and search 'needle'")
    assert first.messages == second.messages and first.output == second.output


# -- the model reads the error text --------------------------------------------------------

TEXTS = {
    "vague": lambda path: "failed",
    "a traceback": lambda path: "Traceback (most recent call last):\nFileNotFoundError: [Errno 2]",
    "names the path": lambda path: f"file {path} not found",
    "lists the files": lambda path: f"no such file; files: {', '.join(FILES)}",
    "names it and suggests": lambda path: f"file {path} not found. Did you mean 'src/main.rs'?",
}


def _read_file(style: str):  # type: ignore[no-untyped-def]
    @tool
    def read_file(path: str) -> str:
        """Read a UTF-8 text file."""
        if path not in FILES:
            raise ToolError(TEXTS[style](path))
        return FILES[path]

    return read_file


@tool
def _search(query: str) -> str:
    """Search the code."""
    return f"1 hit for {query}"


def _read_rate(style: str, plan: str, mistakes: tuple[str, ...]) -> float:
    call = ToolCall("read_file", {"path": plan})
    models = [FallibleModel([call], mistakes=mistakes, seed=seed) for seed in range(30)]  # type: ignore[arg-type]
    runs = [
        finish(Engine(m, tools=[_read_file(style)]), "What does the main source file do?") for m in models
    ]
    return sum("fn main" in (r.output or "") for r in runs) / len(runs)


def test_a_precise_error_text_is_recovered_from_and_a_vague_one_is_not() -> None:
    slip = {style: _read_rate(style, "src/main.rs", ("typo",)) for style in TEXTS}
    guess = {style: _read_rate(style, "src/main.py", ()) for style in TEXTS}
    assert slip == {
        "vague": 0.0,
        "a traceback": 0.0,
        "names the path": 1.0,
        "lists the files": 1.0,
        "names it and suggests": 1.0,
    }
    # A wrong guess: naming the path it meant cannot help; offering one does.
    assert guess == {
        "vague": 0.0,
        "a traceback": 0.0,
        "names the path": 0.0,
        "lists the files": 1.0,
        "names it and suggests": 1.0,
    }


def test_a_list_of_alternatives_is_read_the_closest_one_taken() -> None:
    model = FallibleModel([ToolCall("read_file", {"path": "src/main.py"})], mistakes=())
    run = finish(Engine(model, tools=[_read_file("lists the files")]), "What does the main source file do?")
    assert calls_of(run) == [("read_file", {"path": "src/main.py"}), ("read_file", {"path": "src/main.rs"})]


def test_a_list_with_nothing_close_is_not_a_hint() -> None:
    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        raise ToolError("no such file; the workspace holds only: Cargo.lock, build.ninja")

    plan = [ToolCall("read_file", {"path": "src/main.rs"})]
    run = finish(Engine(FallibleModel(plan, mistakes=()), tools=[read_file]), "go")
    assert {args["path"] for _, args in calls_of(run)} == {"src/main.rs"}  # type: ignore[index]


def test_the_reply_depends_on_what_a_model_reads_and_nothing_else() -> None:
    """Producers, notes and attempt counts are the engine's bookkeeping: a real model never sees them."""
    model = FallibleModel(seed=3)
    spec = _read_file("names the path").spec
    items: list[Message | ModelReply | ToolResult] = [
        Message(role="user", content="What does src/main.rs do?"),
        ModelReply(tool_calls=(ToolCall("read_file", {"path": "src/mian.rs"}, id="fallible-0-0"),)),
    ]
    plain = ToolResult("file src/mian.rs not found", is_error=True, call_id="fallible-0-0")
    dressed = dataclasses.replace(plain, producer="registry_miss", note="analysis: x", attempts=6)
    assert model.reply([*items, plain], [spec]) == FallibleModel(seed=3).reply([*items, dressed], [spec])


# -- the user's own tools ------------------------------------------------------------------


class Colour(enum.Enum):
    red = "red"
    blue = "blue"


class Window(BaseModel):
    start: int
    end: int = 10


class Query(BaseModel):
    window: Window
    tags: list[str] = []


@tool
def ping() -> str:
    """No arguments at all."""
    return "pong"


@tool
def many(
    path: str, lines: int, verbose: bool, ratio: float, tags: list[str], mode: Literal["fast", "slow"]
) -> str:
    """Many arguments of many types."""
    return f"{path} {lines} {verbose} {ratio} {tags} {mode}"


@tool
def paint(colour: Colour, coats: int = 2) -> str:
    """An enum argument (a $ref in the schema)."""
    return f"painted {colour.value} x{coats}"


@tool
def query(q: Query) -> str:
    """A nested pydantic model."""
    return f"window {q.window.start}-{q.window.end}"


@tool
def maybe(path: str | None = None, limit: int | None = None) -> str:
    """Only optional arguments."""
    return f"{path} {limit}"


USER_TOOLS = [ping, many, paint, query, maybe, _read_file("names the path"), _search]
PLANS = {
    "no arguments": [ToolCall("ping")],
    "many arguments": [
        ToolCall(
            "many",
            {"path": "a/b.txt", "lines": 3, "verbose": True, "ratio": 0.5, "tags": ["x"], "mode": "fast"},
        )
    ],
    "an enum": [ToolCall("paint", {"colour": "red", "coats": 2})],
    "a nested model": [ToolCall("query", {"q": {"window": {"start": 1, "end": 5}, "tags": ["t"]}})],
    "optional arguments": [ToolCall("maybe", {"path": None, "limit": None})],
    "two steps": [ToolCall("read_file", {"path": "src/main.rs"}), ToolCall("search", {"query": "main"})],
}


@pytest.mark.parametrize("plan", list(PLANS))
def test_user_tools_of_every_shape_are_called_successfully_whatever_the_seed(plan: str) -> None:
    failed = []
    for seed in range(30):
        engine = Engine(FallibleModel(PLANS[plan], seed=seed), tools=USER_TOOLS, max_turns=50)
        run = finish(engine, "Do the thing.")
        results = run.tool_results
        if run.output is None or "could not" in run.output or not results or results[-1].is_error:
            failed.append((seed, [r.content[:80] for r in results]))
    assert failed == []


def test_an_enum_argument_sent_as_a_list_is_fixed_from_the_schema() -> None:
    # The enum's schema is a $ref to $defs: the model used to find no type there and repeat the list.
    plan = [ToolCall("paint", {"colour": "red", "coats": 2})]
    sent = [
        calls_of(finish(Engine(FallibleModel(plan, mistakes=("shape",), seed=s), tools=[paint]), "go"))
        for s in range(40)
    ]
    listed = [c for c in sent if c[0][1].get("colour") == ["red"]]  # type: ignore[union-attr]
    assert listed and all(c[1] == ("paint", {"colour": "red", "coats": 2}) for c in listed)


def test_a_value_outside_an_enum_becomes_the_closest_choice_the_text_names() -> None:
    plan = [ToolCall("many", {**PLANS["many arguments"][0].arguments, "mode": "fastest"})]  # type: ignore[dict-item]
    run = finish(Engine(FallibleModel(plan, mistakes=()), tools=[many]), "go")
    assert [args["mode"] for _, args in calls_of(run)] == ["fastest", "fast"]  # type: ignore[index]
    assert run.tool_results[-1].is_error is False


@pytest.mark.parametrize(
    "task", ["Read src/main.rs and search 'needle'.", "Hello", "", "'a' 'b' 'c' 'd' x/y.py"]
)
def test_a_derived_plan_always_ends_with_a_final_answer(task: str) -> None:
    for seed in range(20):
        run = Engine(FallibleModel(seed=seed, stubbornness=0.3), tools=USER_TOOLS).run(task)
        assert run.output


ODD_SCHEMAS = [
    {"type": "object", "properties": {"path": True}, "required": ["path"]},
    {"type": "object", "properties": {"path": "string"}, "required": ["path"]},
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": "path"},
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": None},
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["nope", 3]},
    {"type": "object", "properties": {"path": {"type": ["string", "null"]}}, "required": ["path"]},
    {"type": "object", "properties": {"path": {"anyOf": "string"}}, "required": ["path"]},
    {"type": "object", "properties": {"path": {"$ref": "#/$defs/Missing"}}, "required": ["path"]},
    {
        "properties": {"path": {"$ref": "#/$defs/A"}},
        "$defs": {"A": {"$ref": "#/$defs/A"}},
        "required": ["path"],
    },
    {"type": "object", "properties": None},
    {},
]
ERROR_TEXTS = [
    "failed",
    "invalid arguments for tool 'read_file': path is required; expected string",
    "file src/mian.rs not found",
    "path: expected string. Did you mean 'src/main.rs'?",
    "tool 'read_fil' is not available",
    "Tool not found: read_fil. Available: read_file Did you mean 'read_file'?",
    "Tool not found: . Available: ",
]


@pytest.mark.parametrize("schema", ODD_SCHEMAS, ids=range(len(ODD_SCHEMAS)))
def test_any_advertised_schema_is_read_without_crashing(schema: dict) -> None:
    spec = ToolSpec(name="read_file", parameters=schema)
    plans = [
        None,
        [ToolCall("read_file", {"path": "src/main.rs"})],
        [ToolCall("read_file", {"path": 3, "x": [1]})],
    ]
    for plan in plans:
        for seed in range(12):
            model = FallibleModel(plan, seed=seed)
            items: list[Message | ModelReply | ToolResult] = [
                Message(role="user", content="Read src/main.rs, 'x'")
            ]
            for text in ERROR_TEXTS:
                reply = model.reply(items, [spec])
                items.append(reply)
                if reply.is_final:
                    break
                call = reply.tool_calls[0]
                items.append(ToolResult(text, is_error=True, name=call.name, call_id=call.id))


def test_a_compacted_transcript_does_not_send_the_model_back_to_the_start() -> None:
    # Compaction drops the oldest turns; counting its steps from what is left, the model used to
    # start its plan over, and over: successes reset the loop detector, so the run never ended.
    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        return f"contents of {path} " * 10

    plan = [ToolCall("read_file", {"path": f"docs/f{i}.txt"}) for i in range(6)]
    for seed in range(10):
        engine = Engine(
            FallibleModel(plan, mistakes=(), seed=seed),
            tools=[read_file],
            context=ContextBudget(max_tokens=200),
            max_turns=40,
        )
        run = engine.run("Read the docs.")  # max_turns only as a net: it raises LoopDetected
        read = [r.content.split()[2] for r in run.tool_results]  # every call, compacted or not
        assert read == [f"docs/f{i}.txt" for i in range(6)]
        assert run.output and "docs/f5.txt" in run.output


def test_a_compacted_run_with_slips_still_ends() -> None:
    plan = [ToolCall("read_file", {"path": p}) for p in FILES]
    for seed in range(20):
        engine = Engine(
            FallibleModel(plan, seed=seed),
            tools=[_read_file("names the path")],
            context=ContextBudget(max_tokens=150),
            max_turns=60,
        )
        assert engine.run("Read every file.").output


# -- bad arguments -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "says"),
    [
        ({"seed": "7"}, TypeError, "seed must be an int, got '7'"),
        ({"seed": 1.5}, TypeError, "seed must be an int, got 1.5"),
        ({"seed": True}, TypeError, "seed must be an int, got True"),
        ({"seed": None}, TypeError, "seed must be an int, got None"),
        ({"stubbornness": "0.5"}, TypeError, "stubbornness must be a number within [0, 1], got '0.5'"),
        ({"stubbornness": None}, TypeError, "stubbornness must be a number"),
        ({"stubbornness": True}, TypeError, "stubbornness must be a number"),
        ({"stubbornness": float("nan")}, ValueError, "stubbornness must be within [0, 1], got nan"),
        ({"stubbornness": 1.5}, ValueError, "stubbornness must be within [0, 1], got 1.5"),
        ({"mistake_rate": "1"}, TypeError, "mistake_rate must be a number"),
        ({"mistakes": "typo"}, TypeError, "for one kind write ('typo',)"),
        ({"mistakes": None}, TypeError, "mistakes must be a collection of ('typo', 'shape', 'hallucinate')"),
        ({"mistakes": ["typo", "typos"]}, ValueError, "unknown mistakes ['typos']"),
        ({"name": None}, TypeError, "name must be a str, got None"),
        ({"name": " "}, ValueError, "name must not be empty"),
        ({"plan": 5}, TypeError, "plan must be a list of ToolCall objects, got 5"),
        ({"plan": ToolCall("read_file")}, TypeError, "plan must be a list of ToolCall objects"),
        (
            {"plan": [ToolCall("ping"), {"name": "x"}]},
            TypeError,
            "plan[1] is {'name': 'x'} (dict); expected a ToolCall",
        ),
    ],
)
def test_bad_model_arguments_say_which_what_came_and_what_was_expected(
    kwargs: dict, error: type, says: str
) -> None:
    with pytest.raises(error) as info:
        FallibleModel(**kwargs)
    assert str(info.value).startswith("FallibleModel: ") and says in str(info.value)


def test_an_integer_like_seed_is_accepted_as_its_int() -> None:
    class Seven(int):
        pass

    assert FallibleModel(seed=Seven(7)).seed == 7 and type(FallibleModel(seed=Seven(7)).seed) is int


@pytest.mark.parametrize("seed", ["3", 1.5, True, object()])
@pytest.mark.parametrize("name", ["mistyped_path", "recovery_ceiling"])  # seeded and scripted
def test_a_scenario_refuses_a_seed_that_is_not_an_int(name: str, seed: object) -> None:
    with pytest.raises(TypeError, match=f"scenario {name}: seed must be an int or None, got"):
        scenarios.get(name).run(seed=seed)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("asked", "hint"),
    [("Mistyped_Path", "mistyped_path"), (" stubborn_loop", "stubborn_loop"), ("vague", "vague_error")],
)
def test_an_unknown_scenario_name_gets_the_close_one_suggested(asked: str, hint: str) -> None:
    with pytest.raises(KeyError) as info:
        scenarios.get(asked)
    assert (
        f"Did you mean '{hint}'?" in info.value.args[0]
        and "the scenarios are: mistyped_path," in info.value.args[0]
    )


def test_an_unhashable_scenario_name_is_a_key_error_too() -> None:
    with pytest.raises(KeyError, match=r"no scenario named \['mistyped_path'\]"):
        scenarios.get(["mistyped_path"])  # type: ignore[arg-type]
