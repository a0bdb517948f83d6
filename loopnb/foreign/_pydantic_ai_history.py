"""A pydantic-ai message history walked as runs and steps, from its JSON shapes alone.

Each message names the agent run it came from (``run_id``); a step is one response and the
returns that answered its tool calls, found by call id in the requests after it (in the same run,
or in a later one: a deferred or interrupted call is answered by the run that resumed it).

One pass: ``steps`` checks each message's shape, notes what it says of its run (prompts, models,
tools) and hands over each step as soon as the next response of its run shows it complete, so
that no step outlives its turn (a long history's steps would otherwise all stay alive).

A shape the reader relies on that is not pydantic-ai's is never guessed at: it goes to
``Unread.skip`` naming the message and part and what was expected (skipped with a warning, or a
``RecordingError`` with ``errors="raise"``). A message that is not an object with a ``parts`` list
and a ``kind`` is skipped; so is a part that is not an object, or whose ``outcome`` is not a
string, whose ``retry`` is not an object (or its ``cause`` not a string, its ``attempt`` or
``max_retries`` not a whole number), or, for a text or system prompt part, whose ``content`` is
not a string; a ``usage`` that is not an object or holds a token count that is not a whole number
from 0 to 2**63 - 1 (``token_problem``), and a timestamp that is not ISO 8601, are left out of a
message read without them.
"""

from __future__ import annotations

import json
import reprlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from loopnb.engine import ToolCall, Usage
from loopnb.foreign._formats import Unread
from loopnb.foreign._transcript import token_problem, too_deep
from loopnb.record import RecordingError

NAME = "pydantic-ai"
"""The format's name in ``loopnb.formats()`` and in every ``source_status`` it writes."""

NOT_OFFERED = frozenset({"unknown_tool", "unavailable_tool"})
"""Retry causes for a call of a tool the model was not offered."""

Answer = tuple[dict[str, Any], str, float | None]
"""A call's return part, the run whose request held it, and when it returned."""


@dataclass(slots=True)
class Step:
    """One response, and the returns (in later requests) that answered its calls."""

    asked_at: float | None
    """When the request this answers was sent."""
    at: float | None
    """When the response came."""
    message: dict[str, Any]
    number: int
    """The response's place in the history (1-based), for an error to name."""
    usage: Usage | None
    calls: list[ToolCall] = field(default_factory=list)
    returns: dict[str, Answer] = field(default_factory=dict)
    feedback: list[tuple[dict[str, Any], float | None]] | None = None
    """Retry feedback for the response as a whole (no tool call): part and time."""


@dataclass(slots=True)
class Run:
    """One agent run: what its requests said, the models and tools it used, and how it stopped."""

    run_id: str
    system: str | None = None
    task: str = ""
    at: float | None = None
    models: dict[str, None] = field(default_factory=dict)
    tools: dict[str, None] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    asked_at: float | None = None
    """When its last request was sent."""
    ends_asking: bool = False
    """Whether its last message is a request (the run stopped before the model answered)."""
    steps: int = 0


def fail(path: Path | None, message: int | None, part: int | None, what: str) -> RecordingError:
    """The error for damaged content: where in the history (message and part, 1-based) and what
    was expected."""
    where = "top level" if message is None else f"message {message}"
    return RecordingError(f"{where}{'' if part is None else f', part {part}'}: {what}", path=path)


def not_json(exc: ValueError | RecursionError, path: Path | None) -> RecordingError:
    """The error for a history ``json`` cannot parse: a syntax error, bytes that are not UTF-8,
    an int past Python's limit on digits, or nesting past the recursion limit."""
    if isinstance(exc, RecursionError):
        return RecordingError(f"not a pydantic-ai history: {too_deep('its JSON')}", path=path)
    if not isinstance(exc, json.JSONDecodeError):
        return RecordingError(f"not a pydantic-ai history: unreadable JSON ({exc})", path=path)
    if path is None:
        return RecordingError(f"not a pydantic-ai history: invalid JSON ({exc.msg}, line {exc.lineno})")
    return RecordingError(
        f"not a pydantic-ai history: invalid JSON ({exc.msg}, column {exc.colno})", path=path, line=exc.lineno
    )


_parse = datetime.fromisoformat


def _where(message: int, part: int | None = None) -> str:
    """Where in the history an item is, as ``fail`` names it."""
    return f"message {message}" + ("" if part is None else f", part {part}")


def epoch(value: Any, unread: Unread, message: int, part: int | None = None) -> float | None:
    """An ISO 8601 timestamp as epoch seconds (``None`` when the source kept none, or kept one
    that is no time: then it goes to ``unread``)."""
    if value is None:
        return None
    try:
        return _parse(value).timestamp()
    except (TypeError, ValueError):
        unread.skip(_where(message, part), f"timestamp {value!r} is not an ISO 8601 time")
        return None


def owners(messages: Any, path: Path | None, base: str) -> list[str]:
    """The run each message belongs to (checking that ``messages`` is a list)."""
    if not isinstance(messages, list):
        raise fail(path, None, None, f"expected a JSON list of messages, got {type(messages).__name__}")
    return _owners(messages, base)


def steps(
    messages: list[Any],
    owners: list[str],
    found: dict[str, Run],
    unread: Unread,
    *,
    consume: bool = False,
) -> Iterator[tuple[Run, Step | None, bool]]:
    """Each run's steps as ``(run, step, last)``: a step as the next response of its run shows
    it complete, then every run's last step (``None`` for a run that never got a response).

    ``found`` fills with the runs in order of first appearance, each with what its messages said
    so far (prompts, models, tools: complete once the last steps come). Each message's shape is
    checked as it is read (one that cannot be read goes to ``unread``). ``consume`` lets go of
    each message as it is read (``messages`` is the reader's own), so that what is written
    replaces what was parsed instead of piling up beside it.
    """
    pending: dict[str, Step] = {}
    open_: dict[str, Step] = {}
    system: str | None = None
    for i, (msg, rid) in enumerate(zip(messages, owners, strict=True), 1):
        if consume:
            messages[i - 1] = None
        parts = msg.get("parts") if isinstance(msg, dict) else None
        if not isinstance(parts, list):
            unread.skip(_where(i), 'expected an object with "kind" and a "parts" list')
            continue
        kind = msg.get("kind")
        if kind not in ("request", "response"):
            unread.skip(_where(i), f'"kind" is {kind!r}, expected "request" or "response"')
            continue
        at = epoch(msg.get("timestamp"), unread, i)
        run = found.get(rid)
        if run is None:
            run = found[rid] = Run(rid, system=system, at=at)
            if msg.get("conversation_id"):
                run.settings["conversation_id"] = msg["conversation_id"]
        if kind == "request":
            _request(run, parts, at, pending, open_.get(rid), unread, i)
            if run.system is None and isinstance(msg.get("instructions"), str):
                run.system = msg["instructions"]
            system = run.system or system
            continue
        model = msg.get("model_name")
        if model:
            run.models[str(model)] = None
        done = open_.get(rid)
        if done is not None:
            yield run, done, False
        open_[rid] = _response(run, msg, at, pending, unread, i)
        run.steps += 1
        run.ends_asking = False
    for rid, run in found.items():
        yield run, open_.get(rid), True


def _owners(messages: list[Any], base: str) -> list[str]:
    """The run each message belongs to: its ``run_id``; for a request without one (pydantic-ai's
    repair of an interrupted history writes such), the run of the next message that names one,
    which is the run that sent it; else the run before it (``base`` when none names any)."""
    named = [str(m["run_id"]) if isinstance(m, dict) and m.get("run_id") else "" for m in messages]
    if "" not in named:
        return named
    ahead = [""] * len(messages)
    nxt = ""
    for i in range(len(messages) - 1, -1, -1):
        nxt = named[i] or nxt
        ahead[i] = nxt
    owners: list[str] = []
    current = base
    for i, msg in enumerate(messages):
        kind = msg.get("kind") if isinstance(msg, dict) else None
        current = named[i] or (ahead[i] if kind == "request" else "") or current
        owners.append(current)
    return owners


def _request(
    run: Run,
    parts: list[Any],
    at: float | None,
    pending: dict[str, Step],
    last: Step | None,
    unread: Unread,
    i: int,
) -> None:
    """Match a request's returns to the calls they answer, and note its prompts and the tools
    whose calls it answers (unless pydantic-ai refused the name)."""
    for j, found in enumerate(parts, 1):
        part = _checked(found, unread, i, j)
        if part is None:
            continue
        kind = part.get("part_kind")
        if kind == "tool-return" or _answers_a_call(kind, part):
            call_id = str(part.get("tool_call_id"))
            step = pending.pop(call_id, None)
            if step is not None:
                step.returns[call_id] = (part, run.run_id, epoch(part.get("timestamp"), unread, i, j))
            retry = part.get("retry")
            name = part.get("tool_name")
            if name and (not isinstance(retry, dict) or retry.get("cause") not in NOT_OFFERED):
                run.tools[str(name)] = None
        elif kind in ("retry-feedback", "retry-prompt") and last is not None:
            if last.feedback is None:
                last.feedback = []
            last.feedback.append((part, epoch(part.get("timestamp"), unread, i, j)))
        elif kind == "system-prompt" and run.system is None:
            run.system = part.get("content")
        elif kind == "user-prompt" and not run.task:
            run.task = _prompt(part.get("content"))
    run.asked_at = at
    run.ends_asking = True


def _answers_a_call(kind: Any, part: dict[str, Any]) -> bool:
    """A legacy retry of a tool call, or a typed return (tool search, capability load)."""
    if kind == "retry-prompt":
        return part.get("tool_name") is not None
    return isinstance(kind, str) and kind.endswith("-return") and "tool_call_id" in part


def _response(
    run: Run, msg: dict[str, Any], at: float | None, pending: dict[str, Step], unread: Unread, i: int
) -> Step:
    """The step of response ``msg`` (message ``i``): its calls, waiting for their returns; its
    parts that cannot be read left out of it."""
    parts: list[Any] = msg["parts"]
    kept = [(j, part) for j, part in enumerate(parts, 1) if _checked(part, unread, i, j) is not None]
    if len(kept) < len(parts):
        msg = {**msg, "parts": [part for _, part in kept]}  # a copy: the caller's history stays as it was
    step = Step(run.asked_at, at, msg, i, _usage(msg.get("usage"), unread, i))
    for j, part in kept:
        kind = part.get("part_kind")
        if kind == "tool-call" or (isinstance(kind, str) and kind.endswith("-call") and "tool_name" in part):
            call = ToolCall(
                str(part["tool_name"]), _arguments(part.get("args")), id=str(part.get("tool_call_id"))
            )
            step.calls.append(call)
            pending[call.id] = step
        elif kind == "builtin-tool-return" and part.get("tool_call_id") in pending:
            del pending[str(part["tool_call_id"])]
            step.returns[str(part["tool_call_id"])] = (
                part,
                run.run_id,
                epoch(part.get("timestamp"), unread, i, j),
            )
    return step


_TEXTS = frozenset({"text", "speech", "system-prompt"})
"""The parts whose ``content`` is text: a model's reply, or a system prompt."""


def _checked(part: Any, unread: Unread, i: int, j: int) -> dict[str, Any] | None:
    """``part``, if the fields the reader relies on have pydantic-ai's shapes; else ``None``,
    and ``unread`` says what is wrong with it."""
    problem = _shape_problem(part)
    if problem is None and isinstance(part, dict):
        return part
    unread.skip(_where(i, j), problem or "")
    return None


def _shape_problem(part: Any) -> str | None:
    """What is wrong with a part's shape, or ``None``."""
    if not isinstance(part, dict):
        return 'expected an object with a "part_kind"'
    outcome, retry, content = part.get("outcome"), part.get("retry"), part.get("content")
    if outcome is not None and not isinstance(outcome, str):
        return f'"outcome": expected a string, found {type(outcome).__name__}'
    if retry is not None and not isinstance(retry, dict):
        return f'"retry": expected an object, found {type(retry).__name__}'
    if retry is not None and not isinstance(retry.get("cause"), str | None):
        return f'"retry.cause": expected a string, found {type(retry["cause"]).__name__}'
    for key in ("attempt", "max_retries"):
        count = None if retry is None else retry.get(key)
        if count is not None and (type(count) is not int or not 0 <= count < 2**63):
            return f'"retry.{key}": expected a whole number of retries, found {reprlib.repr(count)}'
    if part.get("part_kind") in _TEXTS and not isinstance(content, str | None):
        return f'"content": expected a string (the text), found {type(content).__name__}'
    return None


def _usage(usage: Any, unread: Unread, i: int) -> Usage | None:
    """A response's token counts (``None`` when it kept none, or none ``unread`` let through)."""
    if usage is None:
        return None
    if not isinstance(usage, dict):
        unread.skip(_where(i), f'"usage": expected an object, found {type(usage).__name__}')
        return None
    counts = []
    for side in ("input_tokens", "output_tokens"):
        count = usage.get(side)
        problem = None if count is None else token_problem(count)
        if problem is not None:
            unread.skip(_where(i), f'"usage.{side}": {problem}')
            return None
        counts.append(count or 0)
    return Usage(*counts)


def _arguments(args: Any) -> dict[str, Any] | str:
    if args is None:
        return {}
    if isinstance(args, dict):
        return args
    if isinstance(args, str):
        try:
            parsed = json.loads(args) if args.strip() else {}
        except (ValueError, RecursionError):  # not JSON loopnb can read: kept as the model wrote it
            return args
        return parsed if isinstance(parsed, dict) else args
    return str(args)


def _prompt(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(c for c in content if isinstance(c, str))
    return ""


def reply_text(parts: list[Any]) -> str | None:
    """The response's text as ``ModelResponse.text`` joins it."""
    texts: list[str] = []
    adjacent = False
    for part in parts:
        if part.get("part_kind") in ("text", "speech") and part.get("content"):
            if adjacent:
                texts[-1] += part["content"]
            else:
                texts.append(part["content"])
            adjacent = True
        else:
            adjacent = False
    return "\n\n".join(texts) if texts else None
