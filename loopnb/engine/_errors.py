"""Every exception loopnb defines, and the one place that says which channel a failure takes.

The tree::

    Exception
    ├── LoopError                 hard: ends the run; carries the salvaged run (``err.run``)
    │   ├── Cancelled             a cancel token fired, Ctrl-C, or a kernel interrupt
    │   ├── ContextExceeded       the request cannot fit, even after compaction
    │   ├── LoopDetected          a safety system's stop: loop detector, convergence, ``max_turns``
    │   ├── UserInputRequired     a safety system's ask_user: convergence with action AskUser
    │   ├── ToolRecoveryExhausted recovery asked for a 6th retry (``attempts`` = total calls)
    │   └── FallbackExhausted     every model in the chain failed or sits in its cooldown
    ├── ToolError                 soft: raised by a tool; its text goes to the model verbatim
    ├── ModelUnavailable          raised by a model (or an adapter) that cannot answer now
    │   └── ModelContextOverflow  the model's server says the request is too long
    └── ModelAuthError            a model's credentials were refused (names the variable to set)

    UserWarning
    └── LoopnbWarning             loopnb's own warnings (a detached observer, a bad decision)

Constructors only store fields: no logging, no I/O. Every class pickles and round-trips ``str()``;
a pickle rebuilds an error through a ``functools.partial`` of its public class with its fields, so
it names no private path.
"""

from __future__ import annotations

import functools
import json
import sys
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from loopnb.engine._result import RunResult


Channel = Literal["ok", "soft", "hard"]

SoftProducer = Literal[
    "tool_error",
    "tool_panic",
    "invalid_arguments",
    "not_advertised",
    "registry_miss",
    "hook_veto",
    "breaker_open",
    "timeout",
    "loop_refusal",
    "recovery_gave_up",
    "completion_rejected",
    "convergence_warning",
]
HardProducer = Literal[
    "cancelled",
    "context_exceeded",
    "loop_detected",
    "user_input_required",
    "tool_recovery_exhausted",
    "fallback_exhausted",
]
SourceProducer = Literal["source_error"]
"""A run another framework ended where none of the six hard producers fits (a tool's crash, an
exception that escaped the agent): only readers of foreign runs write it; loopnb's engine never does."""
Producer = SoftProducer | HardProducer | SourceProducer

FailureReason = Literal["refused", "reset", "unresolved", "unreachable", "no_reply", "cut_off", "timed_out"]
"""What went wrong on the way to a model when no HTTP status says it (``ModelUnavailable.reason``)."""

SOFT_PRODUCERS: tuple[SoftProducer, ...] = (
    "tool_error",
    "tool_panic",
    "invalid_arguments",
    "not_advertised",
    "registry_miss",
    "hook_veto",
    "breaker_open",
    "timeout",
    "loop_refusal",
    "recovery_gave_up",
    "completion_rejected",
    "convergence_warning",
)
HARD_PRODUCERS: tuple[HardProducer, ...] = (
    "cancelled",
    "context_exceeded",
    "loop_detected",
    "user_input_required",
    "tool_recovery_exhausted",
    "fallback_exhausted",
)


_CHANNEL_OF: dict[str | None, Channel] = {
    None: "ok",
    **dict.fromkeys(SOFT_PRODUCERS, "soft"),
    **dict.fromkeys(HARD_PRODUCERS, "hard"),
}


def channel_of(producer: str | None) -> Channel:
    """Decide the channel of a failure from its producer: the only place that decides it.

    ``None`` means nothing failed. Every soft producer is something the model's next turn can
    act on; every hard producer is something no next turn can save. The engine calls it for
    every turn it reports (``TurnFinished.channel``) and for the hard ending of a run.
    """
    channel = _CHANNEL_OF.get(producer)
    if channel is None:
        raise ValueError(f"unknown producer {producer!r}; expected one of {SOFT_PRODUCERS + HARD_PRODUCERS}")
    return channel


def exception_text(exc: BaseException) -> str:
    """``str(exc)``, or ``<unprintable X>`` when the exception cannot even say what it is.

    For failure paths, which must not fail in turn: a ``__str__`` that raises is reported, not raised.
    """
    return text_of(exc)


def text_of(value: object) -> str:
    """``str(value)``, or ``<unprintable X>`` when its ``__str__`` raises (whatever it raises but
    ``KeyboardInterrupt``, which is Ctrl-C landing there). A ``str`` subclass gives its text
    without running its own ``__str__``.

    For what a hook, a done-check, a tool or a model hands the engine: printing it must not fail.
    """
    if isinstance(value, str):
        return str.__str__(value)
    try:
        return str(value)
    except KeyboardInterrupt:
        raise
    except BaseException:
        return f"<unprintable {type(value).__name__}>"


def shown(value: object, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters, or ``<unprintable X>`` when even that fails."""
    try:
        text = repr(value)
    except KeyboardInterrupt:
        raise
    except BaseException:
        return f"<unprintable {type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def arguments_text(arguments: object, *, sort_keys: bool = False) -> str:
    """A call's arguments as a person reads them: a str as sent, else JSON (a value JSON cannot hold
    by its ``str``, or ``<unprintable X>``), else each pair by its repr (``<unprintable X>`` when that
    raises).

    Raises nothing but ``KeyboardInterrupt`` (Ctrl-C landing there), whatever the arguments' own
    ``__str__``, ``__repr__`` or ``items()`` raise: views and comparisons show a model's arguments
    as it sent them, and a model may send anything.
    """
    if isinstance(arguments, str):
        return str.__str__(arguments)
    try:
        return json.dumps(arguments, sort_keys=sort_keys, ensure_ascii=False, default=text_of)
    except KeyboardInterrupt:
        raise
    except BaseException:  # keys JSON cannot sort, nesting too deep, a huge int: each pair by its repr
        if type(arguments) is dict:
            pairs = [f"{shown(k, sys.maxsize)}: {shown(v, sys.maxsize)}" for k, v in arguments.items()]
            return "{" + ", ".join(pairs) + "}"
        return shown(arguments, sys.maxsize)


class LoopnbWarning(UserWarning):
    """A warning from loopnb itself (an observer detached, a strategy answered nonsense)."""


class ToolError(Exception):
    """Raised by a tool to fail softly.

    Raised by: tool functions. Caught by: the dispatcher. The model reads ``str(err)`` verbatim as
    a tool result with ``is_error=True``; the run continues. Write the text for the model: name what
    failed and, where you can, what would work instead.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.message,))


class ModelUnavailable(Exception):
    """A model cannot answer right now (connection refused, 5xx, 429, timeout, script exhausted).

    Raised by: models and adapters. Caught by: the engine's fallback chain, which counts it on the
    model's breaker and moves to the next model. The model never sees it. When no model is left,
    the run ends with ``FallbackExhausted``. ``retry_after`` is the seconds the server asked the
    client to wait before asking again (its ``Retry-After``), when it said; ``math.inf`` when
    asking again can never help (a spent script). ``reason`` names what went wrong on the way when
    no HTTP status says it (``"refused"``, ``"reset"``, ``"cut_off"``, ...: see ``FailureReason``).
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        reason: FailureReason | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.retry_after = retry_after
        self.reason = reason

    def __reduce__(self) -> tuple[Any, ...]:
        rebuild = functools.partial(
            type(self), status=self.status, retry_after=self.retry_after, reason=self.reason
        )
        return (rebuild, (self.message,))


class ModelContextOverflow(ModelUnavailable):
    """The model's server refused the request as too long for its context window.

    Raised by: adapters. Caught by: the engine, which compacts harder and asks again; when
    compaction can drop nothing more the run ends with ``ContextExceeded``.
    """


class ModelAuthError(ModelUnavailable):
    """A model's credentials were refused (HTTP 401/403).

    Raised by: adapters, with ``env_var`` naming the variable that holds the key. Counts as a model
    failure; the ``FallbackExhausted`` that follows names the variable to set.
    """

    def __init__(self, message: str, *, status: int | None = None, env_var: str | None = None) -> None:
        super().__init__(message, status=status)
        self.env_var = env_var

    def __reduce__(self) -> tuple[Any, ...]:
        rebuild = functools.partial(type(self), status=self.status, env_var=self.env_var)
        return (rebuild, (self.message,))


class LoopError(Exception):
    """A hard error: the run ends now and your code receives it.

    Raised by: the engine only (never by a tool). Caught by: your code. The model never sees it.
    ``run`` is the salvaged run after ``finalize()``: completed turns commit, the in-flight turn is
    dropped (``ContextExceeded`` keeps only the system prompt and the task).

    Where each is born (the spec's map; every place the engine makes one, by module and function
    under ``loopnb.engine``)::

        Cancelled              _state.RunState.checkpoint: a cancellation checkpoint (the token fired)
        ContextExceeded        _compaction.Compaction._fit: the budget (no fit even after compaction)
                               _compaction.Compaction._compacted: the compaction feed's no-progress guard
                               _compaction.Compaction._ask_after_overflow: either, the server refused
        LoopDetected           _state.RunState.stop: its one raise, for a safety system that said stop
                               _watch.RunSafety.act: the loop detector's stop threshold (before a call)
                               _watch.RunSafety.act: convergence with action Stop (a rejected answer)
                               _watch.RunSafety.act: a user's max_turns (loopnb's, not in the spec) at a turn
                               _watch.RunSafety.act: a safety system of your own (Engine(safety=...))
        UserInputRequired      _state.RunState.ask_user: its one raise, for a safety system that said ask_user
                               _watch.RunSafety.act: convergence with action AskUser
        ToolRecoveryExhausted  _recovery.drive: the recovery ceiling (a 6th retry)
        FallbackExhausted      models._fallback.FallbackChain.ask: every model in the chain spent
                               models._fallback.FallbackChain._exhausted: builds it, naming each failure

    No tool-level error appears here: a tool cannot end a run.
    """

    producer: HardProducer

    def __init__(self, message: str, *, run: RunResult | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.run = run

    def __reduce__(self) -> tuple[Any, ...]:
        return (functools.partial(type(self), **self._fields()), (self.message,))

    def _fields(self) -> dict[str, Any]:
        return {"run": self.run}

    def _render_traceback_(self) -> list[str]:
        """What IPython shows for it in a notebook: one line, ``Cancelled: interrupted ...``.

        A hard error is how a run ends, not a bug in the caller's code: the engine's frames (and a
        kernel interrupt's chain) would bury the one line that says why. Outside IPython, Python's
        own traceback is unchanged.
        """
        return [f"{type(self).__name__}: {self.message}"]


class Cancelled(LoopError):
    """The user ended the run: a ``CancelToken`` fired, Ctrl-C, or a kernel interrupt.

    Raised at a cancellation checkpoint (before each model call and each dispatch).
    """

    producer = "cancelled"


class ContextExceeded(LoopError):
    """No request can be built that fits the context budget, even after compaction.

    Raised when compaction cannot bring the request under the budget or makes no progress.
    The scratchpad is discarded whole: ``err.run.messages`` keeps the system prompt and the task.
    """

    producer = "context_exceeded"


class LoopDetected(LoopError):
    """The model proved it will not adapt: the loop detector's stop threshold, convergence with
    action Stop, a user-set ``max_turns``, or a safety system of the user's that said stop."""

    producer = "loop_detected"


class UserInputRequired(LoopError):
    """Convergence with action AskUser (or a user's safety system that said ask_user): the run needs
    a human, not another turn."""

    producer = "user_input_required"


class ToolRecoveryExhausted(LoopError):
    """A recovery strategy asked for a retry past the ceiling.

    ``attempts`` counts total calls of the tool: 6 means the original call plus 5 retries.
    """

    producer = "tool_recovery_exhausted"

    def __init__(self, message: str, *, attempts: int = 6, run: RunResult | None = None) -> None:
        super().__init__(message, run=run)
        self.attempts = attempts

    def _fields(self) -> dict[str, Any]:
        return {"run": self.run, "attempts": self.attempts}


class FallbackExhausted(LoopError):
    """Every model in the fallback chain failed or is in its breaker's cooldown.

    ``env_var`` names the environment variable to set when a model's credentials were refused.
    """

    producer = "fallback_exhausted"

    def __init__(self, message: str, *, env_var: str | None = None, run: RunResult | None = None) -> None:
        super().__init__(message, run=run)
        self.env_var = env_var

    def _fields(self) -> dict[str, Any]:
        return {"run": self.run, "env_var": self.env_var}
