"""Read a pydantic-ai message history (``ModelMessagesTypeAdapter`` JSON) as loopnb turns.

A history is a list of requests and responses, each tagged with the ``run_id`` of the agent run it
came from (a conversation carried on with ``message_history=`` holds several). One response and the
returns that answer its tool calls, in the requests after it, make a turn; a response without
calls is the run's final answer. pydantic-ai marks every return with an ``outcome`` and a retried
one with its ``retry`` cause and counter, which give each call's producer and ``source_status``
(``"pydantic-ai:retried/unknown_tool"``):

- ``retried/model_retry``: soft ``tool_error`` (the tool raised ``ModelRetry``);
- ``retried/validation_error``: soft ``invalid_arguments`` (the arguments failed the tool's schema);
- ``retried/unknown_tool``: soft ``not_advertised`` (a name the agent never offered the model);
- ``retried/unavailable_tool``: soft ``not_advertised`` (a tool registered but not yet offered, e.g.
  before tool search revealed it: the model was never told of it, so not ``registry_miss``);
- ``failed``: soft ``tool_error`` (``ToolFailed``, an MCP error result);
- ``denied``: soft ``hook_veto`` (the approval step refused the call before it ran).

How a run ended is not written down; the history's last messages show it. Calls left without a
return (``capture_run_messages()`` after an exception) are the turn the run ended on: hard
``tool_recovery_exhausted`` when the tool had used its last retry (pydantic-ai's
``UnexpectedModelBehavior``); else the history does not say why the run stopped (an exception in
the tool, a usage limit, a cancellation all leave it so): ``source_error``, ``unanswered``, never a
guessed crash. Calls answered only by a later run were interrupted (``source_error``) or deferred
for approval (``user_input_required``). ``from_pydantic_ai(..., error=exc)`` names the exception
when the caller has it, which settles the cases the history cannot (a crash in a tool, a usage
limit, a failed model request).

Damage is never read around: a message or part not of the shape pydantic-ai writes
(``_pydantic_ai_history`` lists them) is skipped whole, with a ``RecordingWarning`` naming the
message and part and what was expected (``meta["unread"]`` lists them; ``errors="raise"`` raises
instead), so that no turn claims an outcome the source never gave; its turn keeps the rest. A
value nested past the recursion limit is a ``RecordingError``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopnb.engine import ToolCall
from loopnb.engine._errors import SoftProducer
from loopnb.engine._events import Event, RunStarted
from loopnb.foreign import _pydantic_ai_ends as ends
from loopnb.foreign import _pydantic_ai_history as history
from loopnb.foreign import _pydantic_ai_text as text
from loopnb.foreign import _sniff
from loopnb.foreign._formats import Errors, ForeignFormat, Unread
from loopnb.foreign._transcript import RunWriter, TurnWriter, status, too_deep
from loopnb.record import RecordingError
from loopnb.record._disagree import Mark

if TYPE_CHECKING:
    from loopnb.record import Recording

NAME = history.NAME

_SOFT: dict[str, SoftProducer] = {
    "retried/model_retry": "tool_error",
    "retried/validation_error": "invalid_arguments",
    "retried/unknown_tool": "not_advertised",
    "retried/unavailable_tool": "not_advertised",
    "retried": "tool_error",
    "failed": "tool_error",
    "denied": "hook_veto",
    "interrupted": "tool_error",
}
_NOT_RUN = frozenset(
    {"retried/validation_error", "retried/unknown_tool", "retried/unavailable_tool", "denied"}
)
_SKIPPED = frozenset(
    {
        "Tool not executed - a final result was already processed.",
        "Output tool not used - a final result was already processed.",
    }
)

MARKS: dict[str, Mark] = {
    "success": "ok",
    **{said: "retry" for said in _SOFT},
    "retry-prompt": "retry",
    "missing": "missing",
    "unreturned": "crash",  # with the exception the caller gave: the tool raised
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

_MESSAGES = ("ModelRequest", "ModelResponse")
_STATUS = {said: f"{NAME}:{said}" for said in MARKS}
_SUCCESS = _STATUS["success"]


def read(path: Path, unread: Unread | None = None) -> Recording:
    """The runs of a pydantic-ai history saved as JSON (``result.all_messages_json()``). An
    item that cannot be read goes to ``unread`` (by default, skipped with a warning)."""
    from loopnb.record._frames import collector_paused

    unread = unread or Unread("warn", path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise RecordingError(f"cannot read: {exc}", path=path) from exc
    try:
        with collector_paused():  # the parsed history holds no cycles: see collector_paused
            messages = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise history.not_json(exc, path) from exc
    del data
    return _recording(messages, unread, base=path.stem, version=None, error=None, consume=True)


def from_pydantic_ai(
    messages: Any, *, error: BaseException | None = None, run_id: str = NAME, errors: Errors = "warn"
) -> Recording:
    """A recording of a pydantic-ai run's messages.

    Args:
        messages: ``result.all_messages()`` (or the result itself), the list
            ``capture_run_messages()`` holds, their JSON (bytes or str), or its list of dicts.
        error: The exception the run raised, if it failed: names the cause the history alone
            cannot (``UsageLimitExceeded``, a failed model request, cancellation).
        run_id: The run id to use for messages that carry none (histories before ``run_id``).
        errors: ``"warn"`` skips a message or part that cannot be read with a
            ``RecordingWarning`` (``meta["unread"]`` lists it); ``"raise"`` raises
            ``RecordingError``.
    """
    unread = Unread(errors)
    version = None
    output = None
    ours = True  # a list parsed or dumped here, not the caller's own
    if hasattr(messages, "all_messages"):
        output = getattr(messages, "output", None)
        messages = messages.all_messages()
    if isinstance(messages, bytes | str):
        try:
            messages = json.loads(messages)
        except (ValueError, RecursionError) as exc:
            raise history.not_json(exc, None) from exc
    elif isinstance(messages, Sequence) and messages and all(type(m).__name__ in _MESSAGES for m in messages):
        from pydantic_ai import __version__
        from pydantic_ai.messages import ModelMessagesTypeAdapter

        version = __version__
        messages = ModelMessagesTypeAdapter.dump_python(list(messages), mode="json")
    else:
        ours = False
    deferred = type(output).__name__ == "DeferredToolRequests"
    return _recording(
        messages, unread, base=run_id, version=version, error=error, deferred=deferred, consume=ours
    )


def _recording(
    messages: Any,
    unread: Unread,
    *,
    base: str,
    version: str | None,
    error: BaseException | None,
    deferred: bool = False,
    consume: bool = False,
) -> Recording:
    """The recording of ``messages``: one ``RunWriter`` per run, each step written as it comes;
    ``error`` and ``deferred`` say how the history's last run ended; ``consume`` when the list
    is the reader's own (parsed here), to be emptied as it is read."""
    from loopnb.record import Recording
    from loopnb.record._frames import collector_paused

    path = unread.path
    try:
        with collector_paused():  # messages, steps and events hold no cycles: see collector_paused
            events = _events(messages, unread, base, error, deferred, consume)
    except RecursionError as exc:  # a response's own is caught where it can be named
        raise RecordingError(too_deep("a value of the history"), path=path) from exc
    if not events and unread.items:
        raise unread.nothing_read("messages")
    meta = {"source": {"format": NAME, "version": version}, "unread": unread.meta()}
    return Recording.from_events(events, meta=meta, path=path)


def _events(
    messages: Any, unread: Unread, base: str, error: BaseException | None, deferred: bool, consume: bool
) -> list[Event]:
    """The events of ``messages``, run after run (see ``_recording``), in one pass."""
    path = unread.path
    owners = history.owners(messages, path, base)
    found: dict[str, history.Run] = {}
    writers: dict[str, _Writer] = {}
    final: str | None = None  # the history's last run: the one ``error`` and ``deferred`` are about
    for run, step, last in history.steps(messages, owners, found, unread, consume=consume):
        writer = writers.get(run.run_id)
        if writer is None:
            writer = writers[run.run_id] = _Writer(run)
        if last and final is None:
            final = next(reversed(found))
        ends = last and run.run_id == final
        try:
            writer.step(step, last=last, error=error if ends else None, deferred=deferred and ends)
        except RecursionError as exc:
            raise history.fail(
                path,
                step.number if step else None,
                None,
                too_deep("a value of the response or of the returns that answer it"),
            ) from exc
    return [event for rid in found for event in writers[rid].events()]


class _Writer:
    """One run's events, a step at a time; the last step also says how the run ended."""

    def __init__(self, run: history.Run) -> None:
        self.source = run
        self.run = RunWriter(
            run.run_id,
            task=run.task,
            at=run.at or 0.0,
            system=run.system,
            models=list(run.models),
            tools=list(run.tools),
            settings=run.settings,
        )
        self.spent: dict[str, tuple[int, int]] = {}
        """Each tool's last retry counter: (attempt, max_retries)."""

    def events(self) -> list[Event]:
        """The run's events, its start saying what the whole history said of the run (its
        prompts, models and tools: the writer began before the later messages were read)."""
        run, started = self.source, self.run.events[0]
        if isinstance(started, RunStarted):
            tools = tuple(run.tools)
            self.run.events[0] = dataclasses.replace(
                started,
                task=run.task,
                system=run.system,
                models=tuple(run.models),
                tools=tools,
                advertised=tools,
                settings=dict(run.settings),
            )
        return self.run.events

    def step(
        self, step: history.Step | None, *, last: bool, error: BaseException | None, deferred: bool
    ) -> None:
        """Write ``step`` as a turn (``None``: the run got no response); end the run on the last."""
        if step is None:
            ends.stopped(self.run, error, self.source.asked_at)
            return
        msg = step.message
        asked = step.asked_at if step.asked_at is not None else step.at
        turn = self.run.turn(at=asked)
        turn.reply(
            history.reply_text(msg["parts"]),
            step.calls,
            model=msg.get("model_name"),
            usage=step.usage,
            at=step.at,
            latency_ms=_ms(asked, step.at),
        )
        if last:
            self._last(turn, step, error, deferred)
        else:
            turn.finish(source_status=self._results(turn, step, step.calls))

    def _results(self, turn: TurnWriter, step: history.Step, calls: list[ToolCall]) -> str | None:
        """Write what the model read for ``calls`` and for the response as a whole; returns the
        turn's ``source_status``: its first call's that was no success, else ``success``."""
        provider = step.message.get("provider_name")
        worst: str | None = None
        for call in calls:
            answer = step.returns.get(call.id)
            if answer is None:
                said = "missing"
                turn.result(call.id, "", name=call.name, source_status=_STATUS[said], executed=False)
            else:
                said = _result(turn, call, answer, provider, step.at, self.spent)
            if worst is None or worst == "success":
                worst = said
        for part, at in step.feedback or ():
            render = (
                text.feedback_text if part.get("part_kind") == "retry-feedback" else text.legacy_retry_text
            )
            turn.feedback(render(part), "completion_rejected", at=at)
        return None if worst is None else _STATUS.get(worst) or status(NAME, worst)

    def _last(
        self, turn: TurnWriter, step: history.Step, error: BaseException | None, deferred: bool
    ) -> None:
        """Write the run's last step, and how the run ended."""
        run = self.source
        unanswered: list[ToolCall] = []
        cut: list[ToolCall] = []
        later: list[ToolCall] = []
        held: list[ToolCall] = []
        for call in step.calls:
            answer = step.returns.get(call.id)
            if answer is None:
                unanswered.append(call)
            elif answer[0].get("outcome") == "interrupted":
                cut.append(call)
            elif answer[1] != run.run_id:
                later.append(call)
            else:
                held.append(call)
        said = self._results(turn, step, held)
        answered = not run.ends_asking or ends.final_result(step)  # the run's final answer
        if unanswered or cut or later or (answered and error is not None):
            if error is not None:
                ends.end_with(self.run, error, unanswered)
            else:
                ends.end_dangling(self.run, unanswered, cut, later, self.spent, deferred)
            return
        turn.finish(source_status=said)
        if answered:
            output = ends.final_output(step) if step.calls else history.reply_text(step.message["parts"])
            self.run.finish(output, at=None if run.ends_asking else step.at)
        else:
            ends.stopped(self.run, error, self.source.asked_at)


def _ms(start: float | None, end: float | None) -> float:
    return 0.0 if start is None or end is None else max(0.0, (end - start) * 1000)


def _result(
    turn: TurnWriter,
    call: ToolCall,
    answer: history.Answer,
    provider: str | None,
    replied: float | None,
    spent: dict[str, tuple[int, int]],
) -> str:
    """Write what the model read for ``call`` (returning what the source said of it), and note
    the tool's retry counter in ``spent``."""
    part, _, at = answer
    if part.get("outcome") == "success" and part.get("part_kind") == "tool-return":  # most returns
        content = part.get("content")
        shown = content if isinstance(content, str) else text.content_text(content)
        turn.result(
            call.id,
            shown,
            name=call.name,
            source_status=_SUCCESS,
            executed=shown not in _SKIPPED,
            at=at,
            latency_ms=_ms(replied, at),
        )
        return "success"
    said = text.said(part)
    producer: SoftProducer | None
    if said == "retry-prompt":
        producer, content = text.legacy_producer(part), text.legacy_retry_text(part)
    else:
        producer, content = _SOFT.get(said), text.return_text(part, provider)
    retry = part.get("retry") or {}
    attempt, limit = retry.get("attempt"), retry.get("max_retries")
    if isinstance(attempt, int) and isinstance(limit, int):
        spent[call.name] = (attempt, limit)
    raw = part.get("content")
    skipped = said == "success" and isinstance(raw, str) and raw in _SKIPPED
    turn.result(
        call.id,
        content,
        name=call.name,
        producer=producer,
        source_status=_STATUS.get(said) or status(NAME, said),
        attempt=attempt if isinstance(attempt, int) else 0,
        executed=said not in _NOT_RUN and not skipped,
        at=at,
        latency_ms=_ms(replied, at),
    )
    return said


FORMAT = ForeignFormat(
    NAME,
    "a pydantic-ai message history (ModelMessagesTypeAdapter JSON)",
    (".json",),
    sniff=_sniff.pydantic_ai,
    reader=read,
    in_memory=from_pydantic_ai,
    marks=MARKS,
)
"""The format this module reads: ``loopnb.formats()`` finds it here."""
