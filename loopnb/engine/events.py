"""The event stream: the only thing observers see of a run.

Events are immutable facts (frozen, slotted dataclasses) tagged by ``kind`` and numbered by
``seq`` within their run. Errors travel as text, never as live exception objects. One pydantic
adapter (``EVENT_ADAPTER``) turns any event to and from JSON; the engine itself never serialises.

The order within a run is fixed: ``RunStarted`` first, then per turn ``TurnStarted`` ...
``TurnFinished``, and exactly one ``RunFinished`` last.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter

from loopnb.engine.errors import Channel, HardProducer, SoftProducer
from loopnb.engine.frozen import positional
from loopnb.engine.messages import Message, ModelReply, ToolCall, ToolResult

__all__ = [
    "EVENT_ADAPTER",
    "BreakerState",
    "BreakerTransitioned",
    "CompletionRejected",
    "ContextCompacted",
    "DetectorFired",
    "Event",
    "HardErrorRaised",
    "ModelFailed",
    "ModelReplied",
    "RecoveryDecided",
    "RunFinished",
    "RunStarted",
    "SoftErrorReturned",
    "ToolDispatched",
    "TurnFinished",
    "TurnStarted",
]

BreakerState = Literal["closed", "open", "half_open"]

_EVENT = {"frozen": True, "slots": True, "kw_only": True}


@dataclass(**_EVENT)
class RunStarted:
    """A run began. ``settings`` records the safety configuration the run used."""

    seq: int
    run_id: str
    at: float
    task: str
    system: str | None
    models: tuple[str, ...]
    tools: tuple[str, ...]
    advertised: tuple[str, ...]
    settings: dict[str, Any] = field(default_factory=dict)
    kind: Literal["run_started"] = "run_started"


@dataclass(**_EVENT)
class TurnStarted:
    """A turn began: one model request and the dispatch of all its tool calls."""

    seq: int
    run_id: str
    at: float
    turn: int
    kind: Literal["turn_started"] = "turn_started"


@dataclass(**_EVENT)
class ModelReplied:
    """A model answered a request."""

    seq: int
    run_id: str
    at: float
    turn: int
    model: str
    reply: ModelReply
    latency_ms: float
    kind: Literal["model_replied"] = "model_replied"


@dataclass(**_EVENT)
class ModelFailed:
    """A model could not answer (``ModelUnavailable``); the fallback chain decides what next."""

    seq: int
    run_id: str
    at: float
    turn: int
    model: str
    error: str
    status: int | None
    latency_ms: float
    kind: Literal["model_failed"] = "model_failed"


@dataclass(**_EVENT)
class ToolDispatched:
    """One dispatch attempt of one tool call, and what it produced.

    ``attempt`` is 0 for the original call and 1..5 for recovery retries. ``executed`` is False
    when nothing ran (pre-answer, refusal, veto, open breaker, invalid arguments).
    """

    seq: int
    run_id: str
    at: float
    turn: int
    call: ToolCall
    attempt: int
    result: ToolResult
    executed: bool
    latency_ms: float
    kind: Literal["tool_dispatched"] = "tool_dispatched"


@dataclass(**_EVENT)
class RecoveryDecided:
    """A recovery strategy answered after a failed attempt.

    ``decision`` is ``retry``/``skip``/``ask_user``/``fail``; ``valid`` is False when the strategy
    answered something that is not a decision (or raised), which is treated as ``fail``.
    """

    seq: int
    run_id: str
    at: float
    turn: int
    call_id: str
    tool: str
    attempt: int
    max_attempts: int
    decision: Literal["retry", "skip", "ask_user", "fail"]
    corrected_input: dict[str, Any] | None
    delay: float
    note: str | None
    valid: bool = True
    kind: Literal["recovery_decided"] = "recovery_decided"


@dataclass(**_EVENT)
class BreakerTransitioned:
    """A circuit breaker changed state. ``cooldown`` is the seconds an open breaker waits."""

    seq: int
    run_id: str
    at: float
    turn: int
    target: str
    scope: Literal["tool", "model"]
    previous: BreakerState
    state: BreakerState
    failures: int
    cooldown: float
    kind: Literal["breaker_transitioned"] = "breaker_transitioned"


@dataclass(**_EVENT)
class DetectorFired:
    """A safety detector acted: the loop detector refused or stopped, convergence warned/stopped/asked."""

    seq: int
    run_id: str
    at: float
    turn: int
    detector: Literal["loop", "convergence", "max_turns"]
    action: Literal["refuse", "stop", "warn", "ask_user"]
    text: str
    count: int
    kind: Literal["detector_fired"] = "detector_fired"


@dataclass(**_EVENT)
class CompletionRejected:
    """The run's done-check rejected a final reply; the model is told why and goes on."""

    seq: int
    run_id: str
    at: float
    turn: int
    reply: str
    reason: str
    kind: Literal["completion_rejected"] = "completion_rejected"


@dataclass(**_EVENT)
class ContextCompacted:
    """Compaction dropped old turns so the next request fits the budget."""

    seq: int
    run_id: str
    at: float
    turn: int
    tokens_before: int
    tokens_after: int
    dropped_items: int
    max_tokens: int
    kind: Literal["context_compacted"] = "context_compacted"


@dataclass(**_EVENT)
class SoftErrorReturned:
    """A soft error reached the model: ``text`` is exactly what it read."""

    seq: int
    run_id: str
    at: float
    turn: int
    producer: SoftProducer
    text: str
    tool: str | None
    call_id: str | None
    kind: Literal["soft_error_returned"] = "soft_error_returned"


@dataclass(**_EVENT)
class HardErrorRaised:
    """A ``LoopError`` ended the run; ``error`` is the variant's class name."""

    seq: int
    run_id: str
    at: float
    turn: int
    producer: HardProducer
    error: str
    message: str
    kind: Literal["hard_error_raised"] = "hard_error_raised"


@dataclass(**_EVENT)
class TurnFinished:
    """A turn ended. Everything a turn row needs, as facts.

    ``results`` are the tool results the model read, one per call; ``feedback`` the engine's own
    messages (a rejected answer, a convergence warning). A turn the run ended on is ``hard`` with
    ``dropped=True``: it never reached the scratchpad.
    """

    seq: int
    run_id: str
    at: float
    turn: int
    started_at: float
    latency_ms: float
    channel: Channel
    producer: SoftProducer | HardProducer | None
    model: str | None
    reply: ModelReply | None
    results: tuple[ToolResult, ...]
    feedback: tuple[Message, ...]
    recovery_attempts: int
    breakers: dict[str, BreakerState]
    dropped: bool = False
    error_text: str | None = None
    kind: Literal["turn_finished"] = "turn_finished"


@dataclass(**_EVENT)
class RunFinished:
    """The run ended: ``outcome`` ``ok`` with the output, or ``hard`` with the error's variant."""

    seq: int
    run_id: str
    at: float
    outcome: Literal["ok", "hard"]
    turns: int
    output: str | None
    error: str | None
    message: str | None
    scratchpad_discarded: bool = False
    kind: Literal["run_finished"] = "run_finished"


_MISSING = object()


def _fast_init(cls: type) -> None:
    """Give a frozen, slotted event class a faster ``__init__`` with the same signature.

    A frozen dataclass's own ``__init__`` goes through ``object.__setattr__`` once per field,
    which made building an event four times slower than the turn it describes. This one writes
    each slot through its descriptor; instances stay frozen (assignment still raises).
    """
    names, params, body = [], [], []
    env: dict[str, Any] = {"_MISSING": _MISSING}
    for f in fields(cls):
        names.append(f.name)
        env[f"_set_{f.name}"] = getattr(cls, f.name).__set__
        if f.default is not MISSING:
            env[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
        elif f.default_factory is not MISSING:
            env[f"_factory_{f.name}"] = f.default_factory
            params.append(f"{f.name}=_MISSING")
            body.append(f"    if {f.name} is _MISSING: {f.name} = _factory_{f.name}()")
        else:
            params.append(f.name)
        body.append(f"    _set_{f.name}(self, {f.name})")
    source = f"def __init__(self, *, {', '.join(params)}):\n" + "\n".join(body)
    exec(source, env)  # generated from the class's own field list, nothing else
    init = env["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    cls.__init__ = init  # type: ignore[misc]


Event = Annotated[
    RunStarted
    | TurnStarted
    | ModelReplied
    | ModelFailed
    | ToolDispatched
    | RecoveryDecided
    | BreakerTransitioned
    | DetectorFired
    | CompletionRejected
    | ContextCompacted
    | SoftErrorReturned
    | HardErrorRaised
    | TurnFinished
    | RunFinished,
    Field(discriminator="kind"),
]

for _cls in (
    RunStarted,
    TurnStarted,
    ModelReplied,
    ModelFailed,
    ToolDispatched,
    RecoveryDecided,
    BreakerTransitioned,
    DetectorFired,
    CompletionRejected,
    ContextCompacted,
    SoftErrorReturned,
    HardErrorRaised,
    TurnFinished,
    RunFinished,
):
    _fast_init(_cls)


new_turn_started = positional(TurnStarted)
new_model_replied = positional(ModelReplied)
new_tool_dispatched = positional(ToolDispatched)
new_soft_error_returned = positional(SoftErrorReturned)
new_turn_finished = positional(TurnFinished)

EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)
"""Validates and serialises any event: ``EVENT_ADAPTER.dump_json(e)``, ``validate_json(b)``."""
