"""Deterministic runs for the notebook tests: scripted models, a fake clock, no network, no sleeping.

Each function returns ``(engine, task)``; ``PAYLOAD`` is HTML that would run script if a view
ever rendered it unescaped.
"""

from __future__ import annotations

import time

from loopnb import (
    CancelToken,
    CircuitBreaker,
    Engine,
    FakeClock,
    FallbackChain,
    FunctionModel,
    ModelUnavailable,
    Retry,
    ScriptedModel,
    Skip,
    ToolCall,
    ToolError,
    tool,
)

PAYLOAD = (
    "<img src=x onerror=\"window.__pwned=1;document.title='pwned'\">"
    "<script>window.__pwned=2;document.title='pwned'</script>"
)


@tool
def read_file(path: str) -> str:
    """Read a UTF-8 text file."""
    if path != "src/main.rs":
        raise ToolError(f"file {path} not found")
    return "fn main() {}"


@tool
def fetch(url: str) -> str:
    """Fetch a page; this one answers with hostile HTML, as an error."""
    raise ToolError(f"upstream said: {PAYLOAD}")


@tool
def echo(i: int) -> str:
    """Echo a number."""
    return str(i)


def typo() -> tuple[Engine, str]:
    """The spec's first example: a misspelt path (soft), then the right one, then an answer."""
    model = ScriptedModel(
        [
            ToolCall("read_file", {"path": "src/mian.rs"}),
            ToolCall("read_file", {"path": "src/main.rs"}),
            "src/main.rs defines main()",
        ]
    )
    return Engine(model, [read_file], clock=FakeClock()), "what does src/main.rs define?"


def payload() -> tuple[Engine, str]:
    """Hostile text in a tool's error, in the model's reply, in its call's arguments and name."""
    model = ScriptedModel(
        [
            ToolCall("fetch", {"url": PAYLOAD}),
            ToolCall(PAYLOAD, {}),
            ToolCall("read_file", {"path": "src/main.rs"}),
            f"the page said {PAYLOAD}",
        ]
    )
    clock = FakeClock()
    engine = Engine(
        model, [fetch, read_file], clock=clock, breakers=CircuitBreaker(failure_threshold=1, cooldown=60)
    )
    return engine, f"summarise {PAYLOAD}"


class RetryThen:
    """Retry ``times`` times, then answer ``then``."""

    def __init__(self, times: int, then: object = None) -> None:
        self.times = times
        self.then = then if then is not None else Skip(note="giving up")

    def decide(self, failure: object, attempt: int, max_attempts: int) -> object:
        return Retry(note=f"retry {attempt + 1}") if attempt < self.times else self.then


def flaky(fail_first: int):
    """A tool that fails its first ``fail_first`` calls, then works."""
    calls = {"n": 0}

    @tool
    def flaky_tool(key: str) -> str:
        """Flaky."""
        calls["n"] += 1
        if calls["n"] <= fail_first:
            raise ToolError(f"flaky failure {calls['n']}")
        return f"ok {key}"

    return flaky_tool


def recovered(retries: int = 2) -> tuple[Engine, str]:
    """Recovery retries a failing call ``retries`` times and then it works."""
    model = ScriptedModel([ToolCall("flaky_tool", {"key": "a"}), "done"])
    engine = Engine(model, [flaky(retries)], recovery=RetryThen(5), clock=FakeClock())
    return engine, "recover"


def exhausted() -> tuple[Engine, str]:
    """Recovery keeps saying retry: the sixth retry hits the wall (ToolRecoveryExhausted)."""
    model = ScriptedModel([ToolCall("flaky_tool", {"key": "a"}), "never reached"])
    engine = Engine(model, [flaky(100)], recovery=RetryThen(100), clock=FakeClock())
    return engine, "exhaust"


def gave_up() -> tuple[Engine, str]:
    """Recovery retries once, then skips: the model reads the original failure."""
    model = ScriptedModel([ToolCall("flaky_tool", {"key": "a"}), "fine"])
    engine = Engine(model, [flaky(100)], recovery=RetryThen(1), clock=FakeClock())
    return engine, "give up"


def breaker() -> tuple[Engine, str, FakeClock]:
    """A tool breaker opens after two failures, refuses, cools down, half-opens, closes on success."""
    clock = FakeClock()
    ping = flaky(2)
    plan = [
        ToolCall("flaky_tool", {"key": "a"}),
        ToolCall("flaky_tool", {"key": "b"}),
        ToolCall("flaky_tool", {"key": "c"}),
        "advance",
        ToolCall("flaky_tool", {"key": "d"}),
        "done",
    ]
    state = {"i": 0}

    def reply(messages: object, tools: object) -> object:
        step = plan[state["i"]]
        state["i"] += 1
        if step == "advance":
            clock.advance(11)
            step = plan[state["i"]]
            state["i"] += 1
        return step

    engine = Engine(
        FunctionModel(reply, name="planner"),
        [ping],
        clock=clock,
        breakers=CircuitBreaker(failure_threshold=2, cooldown=10),
    )
    return engine, "ping", clock


class Down:
    """A model whose server is unreachable."""

    name = "primary"

    async def complete(self, messages: object, tools: object) -> object:
        raise ModelUnavailable("connection refused")


def fallback() -> tuple[Engine, str]:
    """The primary model is down: its breaker opens and the backup answers."""
    backup = ScriptedModel([ToolCall("read_file", {"path": "src/main.rs"}), "ok"], name="backup")
    chain = FallbackChain([Down(), backup], breaker=CircuitBreaker(failure_threshold=1, cooldown=30))
    return Engine(chain, [read_file], clock=FakeClock()), "fall back"


def fallback_exhausted() -> tuple[Engine, str]:
    """Every model is down: FallbackExhausted on turn 1."""
    chain = FallbackChain([Down()], breaker=CircuitBreaker(failure_threshold=1, cooldown=30))
    return Engine(chain, [read_file], clock=FakeClock()), "nobody home"


def looping() -> tuple[Engine, str]:
    """The model repeats the same failing call: refused at 4 and 5, LoopDetected at 6."""
    model = ScriptedModel([ToolCall("read_file", {"path": "nope"})] * 8)
    return Engine(model, [read_file], clock=FakeClock()), "loop"


def cancelled() -> tuple[Engine, str, CancelToken]:
    """A tool fires the run's cancel token on turn 2: the run ends as Cancelled."""
    token = CancelToken()

    @tool
    def press_stop(i: int) -> str:
        """Fires the cancel token on its second call."""
        if i == 2:
            token.cancel("the user pressed stop")
        return "ok"

    model = ScriptedModel([ToolCall("press_stop", {"i": 1}), ToolCall("press_stop", {"i": 2}), "never"])
    return Engine(model, [press_stop], clock=FakeClock()), "stop me", token


def endless(delay: float = 0.0) -> tuple[Engine, str]:
    """A model that never stops calling ``echo`` (for the background-run controls).

    ``delay`` seconds of real time per turn keep a run in a served notebook from hogging the CPU.
    """
    count = {"n": 0}

    def reply(messages: object, tools: object) -> object:
        count["n"] += 1
        if delay:
            time.sleep(delay)
        return ToolCall("echo", {"i": count["n"]})

    return Engine(FunctionModel(reply, name="endless"), [echo], clock=FakeClock()), "count forever"


def long_run(turns: int) -> tuple[Engine, str]:
    """``turns`` turns: calls of ``echo``, every tenth a soft registry miss, then an answer."""
    steps: list[object] = []
    for i in range(turns - 1):
        steps.append(ToolCall("ech0", {"i": i}) if i % 10 == 9 else ToolCall("echo", {"i": i}))
    steps.append("done")
    return Engine(ScriptedModel(steps), [echo], clock=FakeClock()), "count"


@tool
def search(query: str) -> str:
    """Search the code base (its index is offline today)."""
    raise ToolError("search index offline: try read_file with a path")


def demo() -> tuple[Engine, str]:
    """A little of everything for the README picture: soft errors, recovery, breakers, fallback."""
    backup = ScriptedModel(
        [
            ToolCall("read_file", {"path": "src/mian.rs"}),
            ToolCall("read_file", {"path": "src/main.rs"}),
            ToolCall("search", {"query": "fn main"}),
            ToolCall("search", {"query": "main("}),
            ToolCall("search", {"query": "main"}),
            ToolCall("raed_file", {"path": "src/lib.rs"}),
            ToolCall("flaky_tool", {"key": "src/lib.rs"}),
            "src/main.rs defines main(); src/lib.rs is fine",
        ],
        name="backup",
    )
    chain = FallbackChain([Down(), backup], breaker=CircuitBreaker(failure_threshold=1, cooldown=30))
    engine = Engine(
        chain,
        [read_file, search, flaky(2)],
        recovery=RetryThen(2),
        breakers=CircuitBreaker(failure_threshold=2, cooldown=20),
        clock=FakeClock(),
    )
    return engine, "what do src/main.rs and src/lib.rs define?"
