"""A pydantic-ai message history grouped into runs and steps, from its JSON shapes alone.

Each message names the agent run it came from (``run_id``); a step is one response and the
returns that answered its tool calls, found by call id in the requests after it (in the same run,
or in a later one: a deferred or interrupted call is answered by the run that resumed it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from loopnb.engine._messages import ToolCall
from loopnb.record._errors import RecordingError


@dataclass(slots=True)
class Step:
    """One response, and the returns (in later requests) that answered its calls."""

    run: str
    asked_at: float | None
    message: dict[str, Any]
    where: str
    calls: list[ToolCall] = field(default_factory=list)
    returns: dict[str, tuple[dict[str, Any], str, str]] = field(default_factory=dict)
    """Each answered call's return part, the run whose request held it, and where it is."""
    feedback: list[tuple[dict[str, Any], float | None]] = field(default_factory=list)


@dataclass(slots=True)
class Run:
    """One agent run's steps, and what its requests said (the prompts, when it asked)."""

    run_id: str
    system: str | None = None
    task: str = ""
    at: float | None = None
    steps: list[Step] = field(default_factory=list)
    asked_at: float | None = None
    ends_asking: bool = False
    settings: dict[str, Any] = field(default_factory=dict)


def fail(path: Path | None, where: str, what: str) -> RecordingError:
    """The error for damaged content: where in the history (message, part) and what was expected."""
    return RecordingError(f"{where}: {what}", path=path)


def epoch(value: Any, path: Path | None, where: str) -> float | None:
    """An ISO 8601 timestamp as epoch seconds (``None`` when the source kept none)."""
    if value is None:
        return None
    try:
        return datetime.fromisoformat(value).timestamp()
    except (TypeError, ValueError) as exc:
        raise fail(path, where, f"timestamp {value!r} is not an ISO 8601 time") from exc


def runs(messages: Any, path: Path | None, base: str) -> list[Run]:
    """Group the history into runs and steps, matching each return to the call it answers."""
    if not isinstance(messages, list):
        got = type(messages).__name__
        raise fail(path, "top level", f"expected a JSON list of messages, got {got}")
    found: dict[str, Run] = {}
    pending: dict[str, Step] = {}
    system: str | None = None
    for i, (msg, rid) in enumerate(zip(messages, _owners(messages, base), strict=True), 1):
        where = f"message {i}"
        if not isinstance(msg, dict) or not isinstance(msg.get("parts"), list):
            raise fail(path, where, 'expected an object with "kind" and a "parts" list')
        if rid not in found:
            found[rid] = Run(rid, system=system)
            if msg.get("conversation_id"):
                found[rid].settings["conversation_id"] = msg["conversation_id"]
        run = found[rid]
        at = epoch(msg.get("timestamp"), path, where)
        if run.at is None:
            run.at = at
        kind = msg.get("kind")
        if kind == "request":
            _request(run, msg, at, pending, path, where)
            system = run.system or system
        elif kind == "response":
            run.steps.append(_response(run, msg, path, where, pending))
            run.ends_asking = False
        else:
            raise fail(path, where, f'"kind" is {kind!r}, expected "request" or "response"')
    return list(found.values())


def _owners(messages: list[Any], base: str) -> list[str]:
    """The run each message belongs to: its ``run_id``; for a request without one (pydantic-ai's
    repair of an interrupted history writes such), the run of the next message that names one,
    which is the run that sent it; else the run before it (``base`` when none names any)."""
    named = [str(m["run_id"]) if isinstance(m, dict) and m.get("run_id") else None for m in messages]
    ahead: list[str | None] = [None] * len(messages)
    nxt: str | None = None
    for i in range(len(messages) - 1, -1, -1):
        nxt = named[i] or nxt
        ahead[i] = nxt
    owners: list[str] = []
    current = base
    for i, msg in enumerate(messages):
        kind = msg.get("kind") if isinstance(msg, dict) else None
        current = named[i] or (ahead[i] if kind == "request" and ahead[i] else None) or current
        owners.append(current)
    return owners


def _request(
    run: Run, msg: dict[str, Any], at: float | None, pending: dict[str, Step], path: Path | None, where: str
) -> None:
    for j, part in enumerate(msg["parts"], 1):
        if not isinstance(part, dict):
            raise fail(path, f"{where}, part {j}", 'expected an object with a "part_kind"')
        kind = part.get("part_kind")
        if kind == "system-prompt":
            run.system = run.system or part.get("content")
        elif kind == "user-prompt":
            run.task = run.task or _prompt(part.get("content"))
        elif kind == "retry-feedback" or (kind == "retry-prompt" and part.get("tool_name") is None):
            if run.steps:
                run.steps[-1].feedback.append(
                    (part, epoch(part.get("timestamp"), path, f"{where}, part {j}"))
                )
        elif isinstance(kind, str) and (kind.endswith("return") or kind == "retry-prompt"):
            step = pending.pop(str(part.get("tool_call_id")), None)
            if step is not None:
                step.returns[str(part.get("tool_call_id"))] = (part, run.run_id, f"{where}, part {j}")
    if run.system is None and isinstance(msg.get("instructions"), str):
        run.system = msg["instructions"]
    run.asked_at = at
    run.ends_asking = True


def _response(run: Run, msg: dict[str, Any], path: Path | None, where: str, pending: dict[str, Step]) -> Step:
    step = Step(run.run_id, run.asked_at, msg, where)
    for j, part in enumerate(msg["parts"], 1):
        if not isinstance(part, dict):
            raise fail(path, f"{where}, part {j}", 'expected an object with a "part_kind"')
        kind = part.get("part_kind")
        if isinstance(kind, str) and kind.endswith("call") and "tool_name" in part:
            call = ToolCall(
                str(part["tool_name"]), _arguments(part.get("args")), id=str(part.get("tool_call_id"))
            )
            step.calls.append(call)
            pending[call.id] = step
        elif kind == "builtin-tool-return" and part.get("tool_call_id") in pending:
            step.returns[str(part["tool_call_id"])] = (part, run.run_id, f"{where}, part {j}")
            del pending[str(part["tool_call_id"])]
    return step


def _arguments(args: Any) -> dict[str, Any] | str:
    if args is None:
        return {}
    if isinstance(args, dict):
        return args
    if isinstance(args, str):
        try:
            parsed = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError:
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
