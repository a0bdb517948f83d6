"""How a pydantic-ai run ended, told from its history's last step or from the exception it raised.

The history writes down no end: calls left without a return, cut off (``interrupted``) or answered
only by a later run show where and how the run stopped, and an exception the caller kept names
what the history cannot (a usage limit, a failed model request, a cancellation).
"""

from __future__ import annotations

from loopnb.engine import ToolCall
from loopnb.engine._errors import HardProducer, SourceProducer
from loopnb.engine._events import Event
from loopnb.foreign._pydantic_ai_history import NAME, Step
from loopnb.foreign._pydantic_ai_text import dumps
from loopnb.foreign._transcript import RunWriter, status, unexplained

UNEXPLAINED = f"{unexplained('history')} (from_pydantic_ai(..., error=exc) names it)"
"""What a run's end says when its history shows where the run stopped but not why."""

_FINAL = "Final result processed."
"""pydantic-ai's return text for the output tool's call that ended the run."""


def final_result(step: Step) -> bool:
    """Whether an output tool's call ended the run."""
    return any(answer[0].get("content") == _FINAL for answer in step.returns.values())


def final_output(step: Step) -> str | None:
    """The arguments of the output tool's call that ended the run: the run's output."""
    for call in step.calls:
        part = step.returns.get(call.id)
        if part is not None and part[0].get("content") == _FINAL:
            return call.arguments if isinstance(call.arguments, str) else dumps(call.arguments)
    return None


def stopped(writer: RunWriter, error: BaseException | None, asked_at: float | None) -> list[Event]:
    """End a run whose last request the model never answered (``error``: what it raised, if known)."""
    if error is not None:
        return end_with(writer, error, [])
    return writer.end_hard(
        "source_error",
        f"the history ends with a request the model never answered: {UNEXPLAINED}",
        at=asked_at,
        source_status=status(NAME, "unanswered"),
    )


def end_dangling(
    writer: RunWriter,
    unanswered: list[ToolCall],
    cut: list[ToolCall],
    later: list[ToolCall],
    spent: dict[str, tuple[int, int]],
    deferred: bool,
) -> list[Event]:
    """End the run on a turn whose calls it never saw answered: left without a result (an
    exception, or a tool past its last retry), cut off (``interrupted``), or resumed by a later
    run (deferred for approval or an external result)."""
    if unanswered and not deferred:
        names = names_of(unanswered)
        used = next(
            (c.name for c in unanswered if c.name in spent and spent[c.name][0] >= spent[c.name][1]), None
        )
        if used is not None:
            return writer.end_hard(
                "tool_recovery_exhausted",
                f"Tool {used!r} exceeded max retries count of {spent[used][1]}: the history ends with"
                f" {names} called again after its last allowed retry",
                error="UnexpectedModelBehavior",
                source_status=status(NAME, "retries_exceeded"),
            )
        return writer.end_hard(  # an exception in the tool, a usage limit, a cancellation: unsaid
            "source_error",
            f"the history ends with {names} called and no result: {UNEXPLAINED}",
            source_status=status(NAME, "unanswered"),
        )
    if cut:
        return writer.end_hard(
            "source_error",
            f"the run ended with {names_of(cut)} in flight: pydantic-ai marked the calls interrupted",
            source_status=status(NAME, "interrupted"),
        )
    return writer.end_hard(
        "user_input_required",
        f"the run stopped for approval or an external result of {names_of(unanswered + later)}"
        " (DeferredToolRequests)",
        error="DeferredToolRequests",
        source_status=status(NAME, "deferred"),
    )


def names_of(calls: list[ToolCall]) -> str:
    """``read_file(), delete()``: the calls' tools, for a message."""
    return ", ".join(f"{c.name}()" for c in calls)


def usage_limit(message: str) -> HardProducer:
    """The table's row for pydantic-ai's ``UsageLimitExceeded`` with ``message``: a limit on
    requests or tool calls is a loop's (as ``max_turns``), one on tokens the context's."""
    looped = "request_limit" in message or "tool_calls_limit" in message
    return "loop_detected" if looped else "context_exceeded"


def end_with(writer: RunWriter, error: BaseException, unanswered: list[ToolCall]) -> list[Event]:
    """End the run on the exception the caller gave: the producer its class fits."""
    names = {cls.__name__ for cls in type(error).__mro__}
    message = f"{type(error).__name__}: {error}"
    producer: HardProducer | SourceProducer
    if "UsageLimitExceeded" in names:
        producer, said = usage_limit(str(error)), "usage_limit"
    elif "OutputTokenLimitExceeded" in names:
        producer, said = "context_exceeded", "usage_limit"
    elif "UnexpectedModelBehavior" in names and "retries" in str(error):
        producer, said = "tool_recovery_exhausted", "retries_exceeded"
    elif names & {"ModelAPIError", "ModelHTTPError", "FallbackExceptionGroup"}:
        producer, said = "fallback_exhausted", "model_error"
    elif names & {"CancelledError", "KeyboardInterrupt"}:
        producer, said = "cancelled", "cancelled"
    else:
        producer, said = "source_error", "unreturned" if unanswered else "raised"
    return writer.end_hard(producer, message, error=type(error).__name__, source_status=status(NAME, said))
