"""Read a pydantic-ai message history (``ModelMessagesTypeAdapter`` JSON) as loopnb turns.

A history is a list of requests and responses, each tagged with the ``run_id`` of the agent run it
came from (a conversation carried on with ``message_history=`` holds several). One response and the
returns that answer its tool calls, in the requests after it, make a turn; a response without
calls is the run's final answer. pydantic-ai marks every return with an ``outcome`` and a retried
one with its ``retry`` cause and counter, which give each call's producer and ``source_status``
(``"pydantic-ai:retried/unknown_tool"``):

=========================  ===========================  ================================
outcome / retry cause      producer (soft)              why
=========================  ===========================  ================================
``retried/model_retry``    ``tool_error``               the tool raised ``ModelRetry``
``retried/validation_error`` ``invalid_arguments``      arguments failed the tool's schema
``retried/unknown_tool``   ``not_advertised``           a name the agent never offered
``retried/unavailable_tool`` ``not_advertised``         offered to no model yet (tool search)
``failed``                 ``tool_error``               ``ToolFailed``, an MCP error result
``denied``                 ``hook_veto``                refused by the approval step
=========================  ===========================  ================================

How a run ended is not written down; the history's last messages show it. Calls left without a
return (``capture_run_messages()`` after an exception) are the turn the run ended on: hard
``tool_recovery_exhausted`` when the tool had used its last retry (pydantic-ai's
``UnexpectedModelBehavior``), else ``source_error``, an exception that escaped a tool. Calls
answered only by a later run were interrupted (``source_error``) or deferred for approval
(``user_input_required``). ``from_pydantic_ai(..., error=exc)`` names the exception when the caller
has it, which settles the cases the history cannot (a usage limit, a failed model request).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopnb.engine._errors import HardProducer, SoftProducer, SourceProducer
from loopnb.engine._events import Event
from loopnb.engine._messages import ToolCall, Usage
from loopnb.foreign import _pydantic_ai_history as history
from loopnb.foreign import _pydantic_ai_text as text
from loopnb.foreign._disagree import Mark
from loopnb.foreign._transcript import RunWriter, TurnWriter, status
from loopnb.record._errors import RecordingError

if TYPE_CHECKING:
    from loopnb.record._recording import Recording

NAME = "pydantic-ai"

_SOFT: dict[str, SoftProducer] = {
    "retried/model_retry": "tool_error",
    "retried/validation_error": "invalid_arguments",
    "retried/unknown_tool": "not_advertised",
    "retried/unavailable_tool": "not_advertised",
    "retried": "tool_error",
    "failed": "tool_error",
    "denied": "hook_veto",
}
_NOT_OFFERED = frozenset({"retried/unknown_tool", "retried/unavailable_tool"})
_NOT_RUN = frozenset(
    {"retried/validation_error", "retried/unknown_tool", "retried/unavailable_tool", "denied"}
)
_SKIPPED = frozenset(
    {
        "Tool not executed - a final result was already processed.",
        "Output tool not used - a final result was already processed.",
    }
)
_FINAL = "Final result processed."

MARKS: dict[str, Mark] = {
    "success": "ok",
    **{said: "retry" for said in _SOFT},
    "retry-prompt": "retry",
    "missing": "missing",
    "unreturned": "crash",
    "retries_exceeded": "ended",
    "usage_limit": "ended",
    "model_error": "ended",
    "cancelled": "ended",
    "interrupted": "ended",
    "deferred": "ended",
    "unanswered": "ended",
    "raised": "ended",
}
"""Every ``source_status`` this reader writes (after ``"pydantic-ai:"``) and what it means: a
call's outcome (and retry cause), or, on the turn a run ended on, what the history shows of it."""


def read(path: Path) -> Recording:
    """The runs of a pydantic-ai history saved as JSON (``result.all_messages_json()``)."""
    try:
        messages = json.loads(path.read_bytes())
    except json.JSONDecodeError as exc:
        raise RecordingError(
            f"not a pydantic-ai history: invalid JSON ({exc.msg}, column {exc.colno})",
            path=path,
            line=exc.lineno,
        ) from exc
    except OSError as exc:
        raise RecordingError(f"cannot read: {exc}", path=path) from exc
    return _recording(messages, path=path, base=path.stem, version=None, error=None)


def from_pydantic_ai(messages: Any, *, error: BaseException | None = None, run_id: str = NAME) -> Recording:
    """A recording of a pydantic-ai run's messages.

    Args:
        messages: ``result.all_messages()`` (or the result itself), the list
            ``capture_run_messages()`` holds, their JSON (bytes or str), or its list of dicts.
        error: The exception the run raised, if it failed: names the cause the history alone
            cannot (``UsageLimitExceeded``, a failed model request, cancellation).
        run_id: The run id to use for messages that carry none (histories before ``run_id``).
    """
    version = None
    output = None
    if hasattr(messages, "all_messages"):
        output = getattr(messages, "output", None)
        messages = messages.all_messages()
    if isinstance(messages, bytes | str):
        try:
            messages = json.loads(messages)
        except json.JSONDecodeError as exc:
            raise RecordingError(
                f"not a pydantic-ai history: invalid JSON ({exc.msg}, line {exc.lineno})"
            ) from exc
    elif isinstance(messages, Sequence) and any(not isinstance(m, dict) for m in messages):
        from pydantic_ai import __version__
        from pydantic_ai.messages import ModelMessagesTypeAdapter

        version = __version__
        messages = ModelMessagesTypeAdapter.dump_python(list(messages), mode="json")
    deferred = type(output).__name__ == "DeferredToolRequests"
    return _recording(messages, path=None, base=run_id, version=version, error=error, deferred=deferred)


def _recording(
    messages: Any,
    *,
    path: Path | None,
    base: str,
    version: str | None,
    error: BaseException | None,
    deferred: bool = False,
) -> Recording:
    from loopnb.record._recording import Recording

    runs = history.runs(messages, path, base)
    events: list[Event] = []
    for i, run in enumerate(runs):
        last = i == len(runs) - 1
        events.extend(_write(run, path, error if last else None, deferred and last))
    meta = {"source": {"format": NAME, "version": version}}
    return Recording.from_events(events, meta=meta, path=path)


def _said(part: dict[str, Any]) -> str:
    """What the source said of a return: its outcome, and a retry's cause."""
    if part.get("part_kind") == "retry-prompt":
        return "retry-prompt"
    outcome = str(part.get("outcome", "success"))
    cause = (part.get("retry") or {}).get("cause") if outcome == "retried" else None
    return f"{outcome}/{cause}" if cause else outcome


def _legacy_producer(part: dict[str, Any]) -> SoftProducer:
    content = part.get("content")
    if not isinstance(content, str):
        return "invalid_arguments"
    return "not_advertised" if content.startswith("Unknown tool name:") else "tool_error"


def _write(run: history.Run, path: Path | None, error: BaseException | None, deferred: bool) -> list[Event]:
    """The run's events: every step a turn, then how the run ended."""
    models = [str(s.message["model_name"]) for s in run.steps if s.message.get("model_name")]
    offered = [
        c.name
        for s in run.steps
        for c in s.calls
        if c.id in s.returns and _said(s.returns[c.id][0]) not in _NOT_OFFERED
    ]
    writer = RunWriter(
        run.run_id,
        task=run.task,
        at=run.at or 0.0,
        system=run.system,
        models=list(dict.fromkeys(models)),
        tools=list(dict.fromkeys(offered)),
        settings=run.settings,
    )
    spent: dict[str, tuple[int, int]] = {}
    for n, step in enumerate(run.steps, 1):
        last = n == len(run.steps)
        msg = step.message
        replied = history.epoch(msg.get("timestamp"), path, step.where)
        asked = step.asked_at if step.asked_at is not None else replied
        turn = writer.turn(at=asked)
        turn.reply(
            history.reply_text(msg["parts"]),
            step.calls,
            model=msg.get("model_name"),
            usage=_usage(msg.get("usage")),
            at=replied,
            latency_ms=_ms(asked, replied),
        )
        unanswered = [c for c in step.calls if c.id not in step.returns]
        answered = [c for c in step.calls if c.id in step.returns]
        cut = [c for c in answered if step.returns[c.id][0].get("outcome") == "interrupted"]
        later = [c for c in answered if step.returns[c.id][1] != run.run_id and c not in cut]
        said: list[str] = []
        for call in step.calls:
            if last and (call in unanswered or call in cut or call in later):
                continue
            if call in unanswered:
                said.append("missing")
                turn.result(
                    call.id, "", name=call.name, source_status=status(NAME, "missing"), executed=False
                )
            else:
                said.append(
                    _result(turn, call, step.returns[call.id], msg.get("provider_name"), replied, spent, path)
                )
        for part, at in step.feedback:
            render = (
                text.feedback_text if part.get("part_kind") == "retry-feedback" else text.legacy_retry_text
            )
            turn.feedback(render(part), "completion_rejected", at=at)
        mark = next((x for x in said if x != "success"), "success" if said else None)
        if last and (error is not None or unanswered or cut or later):
            if error is not None:
                return _end_with(writer, error, unanswered)
            return _end_dangling(writer, unanswered, cut, later, spent, deferred)
        turn.finish(source_status=status(NAME, mark))
        if last and (not run.ends_asking or _final_result(step)):
            output = _final_output(step) if step.calls else history.reply_text(msg["parts"])
            return writer.finish(output, at=None if run.ends_asking else replied)
    if error is not None:
        return _end_with(writer, error, [])
    return writer.end_hard(
        "source_error",
        "the history ends with a request the model never answered: the run stopped before its next"
        " model request (from_pydantic_ai(..., error=exc) names why)",
        at=run.asked_at,
        source_status=status(NAME, "unanswered"),
    )


def _ms(start: float | None, end: float | None) -> float:
    return 0.0 if start is None or end is None else max(0.0, (end - start) * 1000)


def _result(
    turn: TurnWriter,
    call: ToolCall,
    answer: tuple[dict[str, Any], str, str],
    provider: str | None,
    replied: float | None,
    spent: dict[str, tuple[int, int]],
    path: Path | None,
) -> str:
    """Write what the model read for ``call`` (returning what the source said of it), and note
    the tool's retry counter in ``spent``."""
    part, _, where = answer
    said = _said(part)
    producer: SoftProducer | None
    if said == "retry-prompt":
        producer, content = _legacy_producer(part), text.legacy_retry_text(part)
    else:
        producer, content = _SOFT.get(said), text.return_text(part, provider)
    retry = part.get("retry") or {}
    attempt, limit = retry.get("attempt"), retry.get("max_retries")
    if isinstance(attempt, int) and isinstance(limit, int):
        spent[call.name] = (attempt, limit)
    at = history.epoch(part.get("timestamp"), path, where)
    content_of = part.get("content")
    skipped = said == "success" and isinstance(content_of, str) and content_of in _SKIPPED
    turn.result(
        call.id,
        content,
        name=call.name,
        producer=producer,
        source_status=status(NAME, said),
        attempt=attempt if isinstance(attempt, int) else 0,
        executed=said not in _NOT_RUN and not skipped,
        at=at,
        latency_ms=_ms(replied, at),
    )
    return said


def _usage(usage: Any) -> Usage | None:
    if not isinstance(usage, dict):
        return None
    return Usage(
        input_tokens=int(usage.get("input_tokens") or 0), output_tokens=int(usage.get("output_tokens") or 0)
    )


def _final_result(step: history.Step) -> bool:
    """Whether an output tool's call ended the run (pydantic-ai's fixed return text)."""
    return any(answer[0].get("content") == _FINAL for answer in step.returns.values())


def _final_output(step: history.Step) -> str | None:
    for call in step.calls:
        part = step.returns.get(call.id)
        if part is not None and part[0].get("content") == _FINAL:
            return call.arguments if isinstance(call.arguments, str) else text.dumps(call.arguments)
    return None


def _end_dangling(
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
        names = _names(unanswered)
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
        return writer.end_hard(
            "source_error",
            f"the history ends with {names} called and no result: an exception escaped the tool and"
            " ended the run",
            source_status=status(NAME, "unreturned"),
        )
    if cut:
        return writer.end_hard(
            "source_error",
            f"the run ended with {_names(cut)} in flight: pydantic-ai marked the calls interrupted",
            source_status=status(NAME, "interrupted"),
        )
    return writer.end_hard(
        "user_input_required",
        f"the run stopped for approval or an external result of {_names(unanswered + later)}"
        " (DeferredToolRequests)",
        error="DeferredToolRequests",
        source_status=status(NAME, "deferred"),
    )


def _names(calls: list[ToolCall]) -> str:
    return ", ".join(f"{c.name}()" for c in calls)


def _end_with(writer: RunWriter, error: BaseException, unanswered: list[ToolCall]) -> list[Event]:
    """End the run on the exception the caller gave: the producer its class fits."""
    names = {cls.__name__ for cls in type(error).__mro__}
    message = f"{type(error).__name__}: {error}"
    producer: HardProducer | SourceProducer
    if "UsageLimitExceeded" in names:
        limit = str(error)
        producer = (
            "loop_detected" if "request_limit" in limit or "tool_calls_limit" in limit else "context_exceeded"
        )
        said = "usage_limit"
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
