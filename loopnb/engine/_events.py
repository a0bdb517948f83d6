"""The event stream: the only thing observers see of a run.

Events are facts, plain slotted dataclasses tagged by ``kind`` and numbered by ``seq`` within
their run; treat them as immutable (the engine never changes one it has emitted). Each fact is in
one event and never copied into a later one: a turn's reply is in its ``ModelReplied``, each
dispatch attempt's result in its ``ToolDispatched``, and ``TurnFinished`` adds only the engine's
verdict (``loopnb.engine._turns`` puts a turn back together). Errors travel as text, never as live
exception objects. One pydantic adapter (``EVENT_ADAPTER``) turns any event to and from JSON,
both to write a recording and to validate one on load; the engine itself never serialises.

The order within a run is fixed: ``RunStarted`` first, then per turn ``TurnStarted`` ...
``TurnFinished``, and exactly one ``RunFinished`` last.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, TypeGuard, get_args

from pydantic import Field, TypeAdapter

from loopnb.engine._errors import Channel, HardProducer, SoftProducer, SourceProducer
from loopnb.engine._messages import ModelReply, ToolResult

BreakerState = Literal["closed", "open", "half_open"]
DetectorName = Literal["loop", "convergence", "max_turns"]
"""The safety detectors that act on a run: the loop detector, convergence, and a user's ``max_turns``."""
_DETECTOR_NAMES: frozenset[str] = frozenset(get_args(DetectorName))
DetectorAction = Literal["refuse", "stop", "warn", "ask_user"]
"""What a detector did: refused a call softly, stopped the run, warned the model, asked for a human."""

_EVENT = {"slots": True, "kw_only": True}


def is_detector(name: str) -> TypeGuard[DetectorName]:
    """True for the name of one of loopnb's own detectors: the names a ``DetectorFired`` holds."""
    return name in _DETECTOR_NAMES


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
    breakers: tuple[str, ...] = ()
    """Every breaker of the run (models' and tools'), by name; all start closed."""
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
    """A model answered a request (``latency_ms`` to the microsecond)."""

    seq: int
    run_id: str
    at: float
    turn: int
    reply: ModelReply
    """What the model answered; ``reply.model`` names the model."""
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
    injected: str | None = None
    """The label of the fault ``loopnb.inject`` made this request fail with; ``None`` otherwise."""
    kind: Literal["model_failed"] = "model_failed"


@dataclass(**_EVENT)
class ToolDispatched:
    """One dispatch attempt of one tool call, and what it produced.

    The call itself is in the turn's ``ModelReplied`` (``result.call_id`` names it; a retry's
    corrected arguments are in the ``RecoveryDecided`` before it). ``attempt`` is 0 for the
    original call and 1..5 for recovery retries. ``executed`` is False when nothing ran
    (pre-answer, refusal, veto, open breaker, invalid arguments).
    """

    seq: int
    run_id: str
    at: float
    turn: int
    result: ToolResult
    attempt: int = 0
    executed: bool = True
    latency_ms: float = 0.0
    source_status: str | None = None
    """What the framework that made the run said of this call (its span's status, its own
    outcome): the record a foreign run's audit compares with the channel table; ``None`` for
    loopnb's own runs and for a call the source kept no record of."""
    injected: str | None = None
    """The label of the fault ``loopnb.inject`` made this attempt fail with (``error("disk
    busy").first(2)``); ``None`` for a call nothing was injected into."""
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
    """A safety detector acted: the loop detector refused or stopped, convergence warned/stopped/asked,
    ``max_turns`` stopped. loopnb's own detectors only: a user's safety system is recorded by what it
    did (the refusal or warning the model read, the hard error)."""

    seq: int
    run_id: str
    at: float
    turn: int
    detector: DetectorName
    action: DetectorAction
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
    producer: HardProducer | SourceProducer
    error: str
    message: str
    kind: Literal["hard_error_raised"] = "hard_error_raised"


@dataclass(**_EVENT)
class TurnFinished:
    """A turn ended, on ``channel``: the engine's verdict on the turn.

    Only what is new at this moment is here: what the model asked and read is in the turn's
    earlier events (``loopnb.engine._turns`` puts a turn back together). ``producer`` is the first
    non-ok producer of the turn (the LoopError variant's on a hard turn); ``breakers`` the state
    of each breaker that is not closed as the turn ends (``RunStarted.breakers`` names them all);
    the turn's wall time is from its ``TurnStarted`` to here. A turn the run ended on is ``hard``
    with ``dropped=True``: it never reached the scratchpad.
    """

    seq: int
    run_id: str
    at: float
    turn: int
    channel: Channel = "ok"
    producer: SoftProducer | HardProducer | SourceProducer | None = None
    breakers: dict[str, BreakerState] = field(default_factory=dict)
    """The breakers that are not closed as the turn ends (every other one of the run is)."""
    dropped: bool = False
    source_status: str | None = None
    """What the framework that made the run said of the turn (a run read by ``loopnb.load`` from
    another framework); ``None`` for loopnb's own runs."""
    kind: Literal["turn_finished"] = "turn_finished"


@dataclass(**_EVENT)
class RunFinished:
    """The run ended: ``outcome`` ``ok`` with the output, or ``hard`` with the error's variant
    (``error`` its class name, ``producer`` its snake_case name, ``message`` its text)."""

    seq: int
    run_id: str
    at: float
    outcome: Literal["ok", "hard"]
    turns: int
    output: str | None = None
    error: str | None = None
    producer: HardProducer | SourceProducer | None = None
    message: str | None = None
    scratchpad_discarded: bool = False
    kind: Literal["run_finished"] = "run_finished"


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

EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)
"""Validates and serialises any event: ``EVENT_ADAPTER.dump_json(e)``, ``validate_json(b)``."""

EVENT_TYPES: tuple[type[Event], ...] = get_args(get_args(Event)[0])
"""Every event class, in the union's order."""
