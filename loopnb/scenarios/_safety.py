"""Scenarios for the safety systems: what keeps softness from becoming a trap."""

from __future__ import annotations

from typing import Any

from loopnb.engine import CircuitBreaker, ConvergenceDetector, ModelUnavailable, ToolCall, ToolError, tool
from loopnb.engine._recovery import AnalyseAndCorrect, Decision, Failure, Retry
from loopnb.engine.models import FallbackChain, FallibleModel, ScriptedModel
from loopnb.scenarios._scenario import Build, Scenario
from loopnb.scenarios._workspace import FILES, make_read_file


def _stubborn_loop(b: Build) -> dict[str, Any]:
    plan = [ToolCall("read_file", {"path": "config.yaml"})]
    model = FallibleModel(plan, mistakes=(), stubbornness=1.0, seed=b.seed)
    return {"model": model, "tools": [make_read_file()]}


def _converging_answers(b: Build) -> dict[str, Any]:
    def cites_a_source(text: str) -> str | None:
        if "https://" in text:
            return None
        return "cite the source: link the census table the figure comes from"

    answer = (
        "Lyon has about 520,000 inhabitants within the city limits, and about 2.3 million "
        "in the wider metropolitan area."
    )
    return {
        "model": FallibleModel(answer=answer, mistakes=(), seed=b.seed),
        "done": cites_a_source,
        "convergence": ConvergenceDetector(threshold=0.85, window=3, action="stop"),
    }


def _flaky_tool_breaker(b: Build) -> dict[str, Any]:
    calls = {"n": 0}
    clock = b.clock

    @tool
    def service_status(service: str) -> str:
        """The health of a service, from the status API."""
        calls["n"] += 1
        if calls["n"] <= 2:
            raise ToolError("status API answered 503 Service Unavailable; try again later")
        return f"{service}: healthy (p99 120 ms)"

    @tool
    async def wait(seconds: float) -> str:
        """Wait a number of seconds."""
        await clock.sleep(seconds)
        return f"waited {seconds:g}s"

    status = ToolCall("service_status", {"service": "payments"})
    model = ScriptedModel(
        [
            status,  # 503: the breaker counts 1
            status,  # 503 again: 2 failures open the breaker
            status,  # refused without calling the API: open
            ToolCall("wait", {"seconds": 30}),  # the cooldown passes (instantly, on a FakeClock)
            status,  # half-open trial goes through, succeeds: closed again
            "payments is healthy again (p99 120 ms).",
        ],
        name="scripted",
    )
    return {
        "model": model,
        "tools": [service_status, wait],
        "breakers": {"service_status": CircuitBreaker(failure_threshold=2, cooldown=30.0)},
    }


def _fallback_chain(b: Build) -> dict[str, Any]:
    status = ToolCall("read_file", {"path": "server.log"})
    primary = ScriptedModel(
        [status, ModelUnavailable("HTTP 503 from the primary's server", status=503)],
        name="primary",
    )
    backup = ScriptedModel(
        [
            ToolCall("read_file", {"path": "notes.txt"}),
            ModelUnavailable("connection refused by the backup's server"),
        ],
        name="backup",
    )
    chain = FallbackChain([primary, backup], breaker=CircuitBreaker(failure_threshold=1, cooldown=60.0))
    return {"model": chain, "tools": [make_read_file()]}


class RetryForever:
    """A misbehaving recovery strategy: it answers Retry whatever it is told."""

    def decide(self, failure: Failure, attempt: int, max_attempts: int) -> Decision:
        return Retry(note=f"retry {attempt + 1}, whatever the ceiling says")

    def __repr__(self) -> str:
        return "RetryForever()"


def _recovery_ceiling(b: Build) -> dict[str, Any]:
    @tool
    def push(branch: str) -> str:
        """Push a branch to the remote."""
        raise ToolError(f"remote rejected {branch}: protected branch")

    model = ScriptedModel([ToolCall("push", {"branch": "main"}), "pushed."], name="scripted")
    return {"model": model, "tools": [push], "recovery": RetryForever()}


def _recovery_success(b: Build) -> dict[str, Any]:
    model = FallibleModel(
        [ToolCall("read_file", {"path": "src/lib.rs"})],
        answer="src/lib.rs defines add(a, b), which returns a + b.",
        mistakes=("typo",),
        seed=b.seed,
    )
    strategy = AnalyseAndCorrect(candidates={"path": lambda: list(FILES)})
    return {"model": model, "tools": [make_read_file()], "recovery": strategy}


SAFETY_SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        name="stubborn_loop",
        title="A model that keeps asking for the same missing file",
        teaches="Every soft error is an invitation to loop. The loop detector refuses identical "
        "failing calls 4 and 5 before execution, and the 6th ends the run with LoopDetected.",
        task="What is in config.yaml?",
        ending="loop_detected",
        soft=frozenset({"tool_error", "loop_refusal"}),
        builder=_stubborn_loop,
    ),
    Scenario(
        name="converging_answers",
        title="Rejected answers that converge: convergence stops the run",
        teaches="A done-check rejects answers that cite nothing; a model that restates nearly "
        "the same answer is converging, not progressing, and the run stops with LoopDetected.",
        task="How many people live in Lyon? Cite your source.",
        ending="loop_detected",
        soft=frozenset({"completion_rejected"}),
        builder=_converging_answers,
    ),
    Scenario(
        name="flaky_tool_breaker",
        title="A flaky tool trips its breaker and recovers after the cooldown",
        teaches="Sustained failure becomes a soft refusal ('tool temporarily unavailable: "
        "circuit breaker open'); after the cooldown a half-open trial succeeds and the breaker "
        "closes again. Runs on a FakeClock: the 30 s cooldown takes no time.",
        task="Is the payments service healthy?",
        ending="ok",
        soft=frozenset({"tool_error", "breaker_open"}),
        builder=_flaky_tool_breaker,
        fake_clock=True,
    ),
    Scenario(
        name="fallback_chain",
        title="Two models: the first goes down, then both",
        teaches="A model that cannot answer trips its breaker and the next model answers in the "
        "same turn; when every model is spent while cooldowns run, FallbackExhausted ends the run.",
        task="Check the server log and the release notes.",
        ending="fallback_exhausted",
        soft=frozenset(),
        builder=_fallback_chain,
        fake_clock=True,
    ),
    Scenario(
        name="recovery_ceiling",
        title="A strategy that says Retry forever meets the ceiling",
        teaches="Attempt 0 plus 5 retries: the driver refuses a 6th retry whatever the strategy "
        "says, with ToolRecoveryExhausted(attempts=6). The tool ran exactly 6 times.",
        task="Push main.",
        ending="tool_recovery_exhausted",
        soft=frozenset(),
        builder=_recovery_ceiling,
        fake_clock=True,
    ),
    Scenario(
        name="recovery_success",
        title="Analyse-and-correct fixes a misspelt path on a retry",
        teaches="Recovery adds memory between 'error seen' and 'retry blindly': the analysis "
        "corrects the retry's input (never the record) and the model reads the success.",
        task="What does src/lib.rs define?",
        ending="ok",
        soft=frozenset(),
        builder=_recovery_success,
        fake_clock=True,
    ),
)
