"""Shared runs for the recording tests: each one a real ``Engine`` run on a scripted model and a
``FakeClock``, its events kept by an observer."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from loopnb import (
    CancelToken,
    CircuitBreaker,
    ContextBudget,
    ConvergenceDetector,
    Engine,
    Fail,
    FakeClock,
    FunctionModel,
    LoopDetector,
    LoopError,
    ModelContextOverflow,
    ModelReply,
    ModelUnavailable,
    Retry,
    RunResult,
    ScriptedModel,
    Skip,
    ToolCall,
    ToolError,
    Usage,
    tool,
)
from loopnb.record import Recorder

TASK = "What does src/main.rs do?"


@tool
def read_file(path: str) -> str:
    """Read a UTF-8 text file."""
    if path != "src/main.rs":
        raise ToolError(f"file {path} not found")
    return "fn main() {}"


@dataclass
class Run:
    """One engine run: every event an observer saw, and how it ended."""

    events: list[Any] = field(default_factory=list)
    outcome: RunResult | LoopError | None = None


def run_engine(engine: Engine, task: str = TASK, *, run_id: str = "run-1", **options: Any) -> Run:
    """Run ``engine`` on ``task`` as ``run_id``; a hard ending is kept, not raised."""
    run = Run()
    unsubscribe = engine.subscribe(run.events.append)
    try:
        run.outcome = engine.run(task, run_id=run_id, **options)
    except LoopError as err:
        run.outcome = err
    finally:
        unsubscribe()
    return run


def timed_model(clock: FakeClock, steps: Sequence[Any], *, name: str = "scripted", seconds: float = 0.0):
    """Replies with ``steps`` in order (an exception step is raised), each request taking
    ``seconds`` on ``clock``."""
    script = iter(steps)

    def reply(messages: object, tools: object) -> Any:
        clock.advance(seconds)
        step = next(script)
        if isinstance(step, BaseException):
            raise step
        return step

    return FunctionModel(reply, name=name)


def reply(*calls: ToolCall, text: str | None = None, usage: tuple[int, int] | None = None) -> ModelReply:
    """A model reply with ``calls``, ``text`` and ``usage`` (input, output tokens)."""
    tokens = Usage(input_tokens=usage[0], output_tokens=usage[1]) if usage else None
    return ModelReply(text=text, tool_calls=calls, usage=tokens)


# -- the runs the tests share --------------------------------------------------------------------


def typo_run(run_id: str = "r1") -> Run:
    """The spec's classic: a misspelt path (soft), the right one, the answer. 3 turns."""
    clock = FakeClock()
    model = ScriptedModel(
        [
            ToolCall("read_file", {"path": "src/mian.rs"}),
            ToolCall("read_file", {"path": "src/main.rs"}),
            "It prints nothing.",
        ]
    )
    return run_engine(Engine(model, [read_file], clock=clock), run_id=run_id)


class _RetryOnceForX:
    """Retries ``x`` once then fails; retries anything else for ever (past the ceiling)."""

    def decide(self, failure: Any, attempt: int, max_attempts: int) -> Any:
        if failure.call.arguments.get("path") == "x":
            return Retry() if attempt < 1 else Fail()
        return Retry()


def hard_run(run_id: str = "r2") -> Run:
    """Model 'other', 20 s a request; read_file's breaker opens after one failure (cooldown 30 s).

    Turn 1: read_file('x') fails, is retried once, recovery fails it (soft ``recovery_gave_up``)
    and the breaker opens. Turn 2: read_file refused by the open breaker (soft ``breaker_open``).
    Turn 3, past the cooldown: the breaker half-opens, read_file('y') fails and is retried past
    the ceiling (hard ``tool_recovery_exhausted``, 5 retries). 3 turns.
    """
    clock = FakeClock()
    steps = [ToolCall("read_file", {"path": p}) for p in ("x", "src/main.rs", "y")]
    engine = Engine(
        timed_model(clock, steps, name="other", seconds=20.0),
        [read_file],
        recovery=_RetryOnceForX(),
        breakers={"read_file": CircuitBreaker(failure_threshold=1, cooldown=30.0)},
        clock=clock,
    )
    return run_engine(engine, run_id=run_id)


def context_run(run_id: str = "ctx") -> Run:
    """Two ok turns (a 50- then a 400-character file) under an 80-token budget; turn 3's request
    does not fit even with turn 1 compacted away: ``context_exceeded``. 3 turns, all dropped."""

    @tool
    def cat(path: str) -> str:
        """Print a file."""
        return ("x" if path == "small" else "y") * (50 if path == "small" else 400)

    clock = FakeClock()
    steps = [ToolCall("cat", {"path": "small"}), ToolCall("cat", {"path": "big"}), "never asked"]
    engine = Engine(ScriptedModel(steps), [cat], context=ContextBudget(max_tokens=80), clock=clock)
    return run_engine(engine, run_id=run_id)


# -- runs made of outcomes, for property and streak tests ----------------------------------------

SOFT_OUTCOMES = (
    "tool_error",
    "tool_panic",
    "invalid_arguments",
    "not_advertised",
    "registry_miss",
    "hook_veto",
)
"""The soft producers ``script_run`` can make a turn end with (besides ``ok``)."""


@tool
def panics(n: int) -> str:
    """Raises."""
    raise RuntimeError(f"panic {n}")


def _veto(call: ToolCall, ctx: Any) -> str | None:
    return "no vetoed calls" if call.name == "vetoed" else None


class _Stubborn:
    """Retries a call as many times as ``retries`` says for its id, then skips it."""

    def __init__(self, retries: dict[str, int]) -> None:
        self.retries = retries

    def decide(self, failure: Any, attempt: int, max_attempts: int) -> Any:
        return Retry() if attempt < self.retries.get(failure.call.id, 0) else Skip()


def _call(outcome: str, turn: int) -> ToolCall:
    """A call that ends with ``outcome``; its arguments differ every turn (no loop forms)."""
    cid = f"c{turn}"
    return {
        "ok": ToolCall("read_file", {"path": "src/main.rs"}, id=cid),
        "tool_error": ToolCall("read_file", {"path": f"src/{turn}.rz"}, id=cid),
        "tool_panic": ToolCall("panics", {"n": turn}, id=cid),
        "invalid_arguments": ToolCall("panics", {"n": f"#{turn}"}, id=cid),
        "not_advertised": ToolCall("invented", {"n": turn}, id=cid),
        "registry_miss": ToolCall("ghost", {"n": turn}, id=cid),
        "hook_veto": ToolCall("vetoed", {"n": turn}, id=cid),
    }[outcome]


def script_run(
    turns: Sequence[tuple[str, int]],
    end: str | None = None,
    *,
    run_id: str = "run-1",
    model: str = "scripted",
) -> Run:
    """A run whose turns end as ``turns`` says: ``(outcome, retries)`` with outcome ``ok`` or one
    of ``SOFT_OUTCOMES`` (a failure of a tool that runs is retried ``retries`` times, then
    skipped). It ends with the final reply 'done' (``end=None``) or the hard producer ``end``,
    in one more turn (``user_input_required``: two more, the first a rejected answer).
    """
    clock = FakeClock()
    token = CancelToken()
    retries = {f"c{i}": r for i, (outcome, r) in enumerate(turns, 1) if r}
    steps: list[Any] = [reply(_call(outcome, i)) for i, (outcome, _) in enumerate(turns, 1)]
    n = len(steps) + 1
    options: dict[str, Any] = {}
    if end is None:
        steps.append("done")
    elif end == "cancelled":
        steps.append(lambda: token.cancel("stopped") or reply(_call("ok", n)))
    elif end == "context_exceeded":
        steps.append(ModelContextOverflow("the request is too long"))
    elif end == "loop_detected":  # two identical failing calls in one reply; the second is stopped
        options["loop_detector"] = LoopDetector(warn_after=1, stop_after=1)
        steps.append(reply(ToolCall("read_file", {"path": "loop"}), ToolCall("read_file", {"path": "loop"})))
    elif end == "user_input_required":
        options["done"] = lambda text: "not yet"
        options["convergence"] = ConvergenceDetector(window=2, action="ask_user")
        steps += ["the same answer", "the same answer"]
    elif end == "tool_recovery_exhausted":
        retries[f"c{n}"] = 99
        steps.append(reply(_call("tool_error", n)))
    elif end == "fallback_exhausted":
        steps.append(ModelUnavailable("the model is down"))
    else:
        raise ValueError(f"script_run: end must be None or a hard producer, got {end!r}")
    if retries:
        options["recovery"] = _Stubborn(retries)
    played = iter(steps)
    failing: list[BaseException] = []

    def answer(messages: object, tools: object) -> Any:
        step = failing[0] if failing else next(played)
        if isinstance(step, BaseException):  # a model that fails keeps failing
            failing[:] = [step]
            raise step
        return step() if callable(step) else step

    engine = Engine(
        FunctionModel(answer, name=model),
        [read_file, panics],
        hooks=[_veto],
        advertise=["read_file", "panics", "ghost", "vetoed"],
        clock=clock,
        **options,
    )
    return run_engine(engine, run_id=run_id, cancel=token)


def recorded(*runs: Run, **options: object) -> Recorder:
    """A ``Recorder(**options)`` that has observed every event of ``runs``."""
    rec = Recorder(**options)  # type: ignore[arg-type]
    for run in runs:
        for e in run.events:
            rec(e)
    return rec


@pytest.fixture
def recorder() -> Recorder:
    return recorded(typo_run(), hard_run())


def engine_typo(recorder: Recorder) -> Engine:
    return Engine(
        model=ScriptedModel(
            [
                ToolCall("read_file", {"path": "src/mian.rs"}),
                ToolCall("read_file", {"path": "src/main.rs"}),
                "It prints nothing.",
            ]
        ),
        tools=[read_file],
        observers=[recorder],
    )
