"""LangGraph threads, read from a ``SqliteSaver`` database as loopnb turns.

One run per thread: its messages as the latest checkpoint holds them (the ``messages`` channel,
or whichever channel holds LangChain messages), one turn per ``AIMessage`` with the
``ToolMessage``s that answer its calls, and the writes still pending on the latest checkpoint.
LangGraph tells the two channels apart itself: a tool error the model read is a
``ToolMessage(status="error")`` (kept as ``langgraph:error``, mark ``retry``), and a failure that
ended the run is an ``__error__`` write (``langgraph:__error__``, or ``__error__:tool_call`` when
the run failed with a tool call in flight: ``crash``). ``ToolNode``'s own texts name the row of
the table: an unknown tool is ``not_advertised``, arguments it could not invoke the tool with are
``invalid_arguments``; either under ``status="success"`` (older ``ToolNode``s set no status) is
``langgraph:success`` (``soft_shown_as_success``).

What the database's damage gets is listed in ``_langgraph_db``: a thread whose latest checkpoint
cannot be read is read up to the latest that can, its end unknown (``unanswered``, as a thread that
stops with nothing pending to say why). A thread with no messages loads with a ``RecordingWarning``;
token counts that are not counts go to ``Unread.skip`` (read as no usage).
"""

from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loopnb.engine import ToolCall, Usage
from loopnb.engine._errors import HardProducer, SoftProducer, SourceProducer
from loopnb.engine._events import Event
from loopnb.foreign import _sniff
from loopnb.foreign._formats import ForeignFormat, Unread
from loopnb.foreign._langgraph_db import (
    SKIPPED,
    Checkpoint,
    Thread,
    Write,
    checkpoint,
    dated,
    decoded,
    is_state,
    shallow,
    threads,
)
from loopnb.foreign._langgraph_file import Obj
from loopnb.foreign._transcript import RunWriter, TurnWriter, status, unexplained
from loopnb.record import Recording, RecordingError, RecordingWarning
from loopnb.record._disagree import Mark

NAME = "langgraph"

MARKS: dict[str, Mark] = {
    "success": "ok",
    "error": "retry",
    "missing": "missing",
    "__error__:tool_call": "crash",
    "__error__": "ended",
    "__interrupt__": "ended",
    "unanswered": "ended",
    "step_guard": "ended",
}
"""Every ``source_status`` this reader writes (after ``"langgraph:"``) and what it means: a
``ToolMessage``'s ``status``; ``missing`` for a call no ``ToolMessage`` answers; on the turn a run
ended on, the pending write that ended it (``__error__:tool_call`` when its tool calls were in
flight), ``step_guard`` where the prebuilt agent's step guard answered in the model's place, or
``unanswered`` for a thread that stops with nothing pending to say why."""

STEP_GUARD = "Sorry, need more steps to process this request."
"""What ``create_react_agent``'s step guard stores in place of the model's reply when too few steps
remain (``remaining_steps``) for the tool calls it asked for; the run ends on it."""
STEP_GUARD_ENDED = (
    f"the prebuilt agent's step guard answered {STEP_GUARD!r} in the model's place: too few steps "
    "remained (recursion_limit) for the tool calls the model asked for, which the thread does not keep"
)

UNKNOWN_TOOL = re.compile(
    r"^Error: (?P<tool>.+?) is not a valid tool, try one of \[(?P<tools>.*)\]\.?$", re.S
)
INVALID_ARGS = re.compile(r"^Error invoking tool '(?P<tool>.+?)' with kwargs .* with error:\n", re.S)
OLD_INVALID_ARGS = re.compile(r"^Error: \d+ validation errors? for (?P<tool>\S+)\n")
"""How langgraph 0.3's ``ToolNode`` answered arguments the tool's schema refused: the pydantic
``ValidationError`` it caught, in its "Error: ...\n Please fix your mistakes." wrapper."""
_KINDS = {"HumanMessage": "human", "AIMessage": "ai", "ToolMessage": "tool", "SystemMessage": "system"}
_HARD_BY_ERROR: dict[str, HardProducer] = {
    "GraphRecursionError": "loop_detected",
    "CancelledError": "cancelled",
    "KeyboardInterrupt": "cancelled",
    "ContextWindowExceededError": "context_exceeded",
}


@dataclass(slots=True)
class _Message:
    kind: str
    value: dict[str, Any]
    id: str | None


def read(path: Path, unread: Unread | None = None) -> Recording:
    """The threads of a LangGraph ``SqliteSaver`` database, one run each. A checkpoint or write
    that cannot be read goes to ``unread`` (by default, skipped with a warning)."""
    from loopnb.record._frames import collector_paused

    path = Path(path)
    unread = unread or Unread("warn", path)
    events: list[Event] = []
    with collector_paused():  # decoded blobs, threads and events hold no cycles: see collector_paused
        found, versions = threads(path, unread)
        found.reverse()
        while found:  # each thread freed once written: the collector, back, walks only what is kept
            events.extend(_write_thread(found.pop(), unread))
    if not events:
        raise unread.nothing_read("checkpoints")
    known = sorted(str(v) for v in versions if v is not None)
    source = {"format": NAME, "version": f"checkpoint v{known[-1]}" if known else None}
    return Recording.from_events(events, meta={"source": source, "unread": unread.meta()}, path=path)


def message(obj: Any) -> _Message | None:
    """A LangChain message as serde stored it (an ``Obj``, or an older ``lc`` JSON constructor)."""
    if isinstance(obj, Obj):
        value, cls = obj.value, obj.name
    elif (
        isinstance(obj, dict)
        and obj.get("type") == "constructor"
        and isinstance(obj.get("id"), list)
        and obj["id"]
    ):
        value, cls = obj.get("kwargs"), str(obj["id"][-1])
    elif isinstance(obj, dict) and "content" in obj and "type" in obj:
        value, cls = obj, ""
    else:
        return None
    if not isinstance(value, dict):
        return None
    kind = str(value.get("type") or _KINDS.get(cls.removesuffix("Chunk"), ""))
    kind = _KINDS.get(kind.removesuffix("Chunk"), kind)
    if not kind:
        return None
    said = value.get("id")
    return _Message(kind, value, None if said is None else str(said))


def _messages(values: dict[str, Any]) -> tuple[str | None, list[_Message]]:
    """The channel holding the thread's messages, and them."""
    names = ["messages", *(k for k in values if k != "messages")]
    for name in names:
        raw = values.get(name)
        if isinstance(raw, list) and raw:
            found = [m for m in map(message, raw) if m is not None]
            if found and len(found) == len(raw):
                return name, found
    return None, []


def _replayed(thread: Thread, latest: str, unread: Unread) -> tuple[str | None, list[_Message]]:
    """The messages rebuilt from the writes of every finished step, for a channel whose
    checkpoints keep no value (LangGraph's ``DeltaChannel`` stores its writes only): each
    message appended, or put in place of the one with its id; ``RemoveMessage`` deletes."""
    by_channel: dict[str, list[_Message]] = {}
    for write in thread.writes:
        if write.checkpoint_id == latest or not is_state(write.channel):
            continue  # the latest step's writes never reached the state
        value = decoded(write, unread)
        if value is SKIPPED:
            continue
        raw = value if isinstance(value, list) else [value]
        found = [m for m in map(message, raw) if m is not None]
        if found and len(found) == len(raw):
            by_channel.setdefault(write.channel, []).extend(found)
    name = "messages" if "messages" in by_channel else next(iter(by_channel), None)
    out: dict[str, _Message] = {}
    for n, m in enumerate(by_channel.get(name or "", [])):
        key = m.id or f"#{n}"
        if m.kind == "remove":
            out = {} if key == "__remove_all__" else {k: v for k, v in out.items() if k != key}
        else:
            out[key] = m  # a new id goes last; a known one keeps its place
    return name, list(out.values())


def text_of(content: Any) -> str:
    """A message's content as text: a string, or the text blocks of a list of blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            str(b.get("text", "")) if isinstance(b, dict) else str(b)
            for b in content
            if isinstance(b, str) or (isinstance(b, dict) and b.get("type") == "text")
        ]
        return "\n".join(parts)
    return "" if content is None else str(content)


def _seen(thread: Thread, channel: str | None, msgs: list[_Message], unread: Unread) -> dict[str, float]:
    """When each message first appeared: the time of the checkpoint its step made (read from the
    checkpoints' lengths where ``dated`` can, else from the writes)."""
    found = dated(thread, [m.id for m in msgs]) if channel == "messages" else None
    if found is not None:
        return found
    ts = {cp.id: cp.ts for cp in thread.checkpoints}
    made: dict[str | None, float | None] = {}
    for cp in thread.checkpoints:
        made.setdefault(cp.parent_id, cp.ts)
    seen: dict[str, float] = {}
    for write in thread.writes:
        if write.channel != channel:
            continue
        at = made.get(write.checkpoint_id) or ts.get(write.checkpoint_id)
        for m in map(message, shallow(write, unread)):
            if m is not None and m.id is not None and at is not None:
                seen.setdefault(m.id, at)
    return seen


def _tokens(value: Any) -> int | None:
    """A token count as a frame can hold it (0 when absent), or ``None`` when it is no count."""
    if value is None:
        return 0
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    return value if type(value) is int and 0 <= value < 2**63 else None


def _usage(message: _Message, thread: Thread, unread: Unread) -> Usage | None:
    usage = message.value.get("usage_metadata")
    if not isinstance(usage, dict):
        return None
    read, wrote = _tokens(usage.get("input_tokens")), _tokens(usage.get("output_tokens"))
    if read is None or wrote is None:
        found = f"{usage.get('input_tokens')!r:.40} and output_tokens {usage.get('output_tokens')!r:.40}"
        said = f"usage_metadata should hold counts of tokens, found input_tokens {found}"
        where = f"thread {thread.thread_id}, message {message.id}"
        unread.skip(where, said, left="its usage is not counted")
        return None
    return Usage(input_tokens=read, output_tokens=wrote)


def _model(value: dict[str, Any]) -> str | None:
    meta = value.get("response_metadata")
    if isinstance(meta, dict):
        name = meta.get("model_name") or meta.get("model")
        return None if name is None else str(name)
    return None


def _calls(value: dict[str, Any]) -> list[ToolCall]:
    calls: list[ToolCall] = []
    found = value.get("tool_calls")
    for n, call in enumerate(found if isinstance(found, list) else ()):
        if isinstance(call, dict):
            args = call.get("args")
            arguments = args if isinstance(args, (dict, str)) else {}
            calls.append(
                ToolCall(str(call.get("name", "")), arguments, id=str(call.get("id") or f"call-{n}"))
            )
    return calls


def _offered(msgs: list[_Message]) -> list[str]:
    """The tools the agent had, as far as the thread shows: those ``ToolNode`` listed when it
    refused an unknown one, and those that answered."""
    names: list[str] = []
    for m in msgs:
        if m.kind != "tool":
            continue
        unknown = UNKNOWN_TOOL.match(text_of(m.value.get("content")))
        listed = (
            [t.strip() for t in unknown.group("tools").split(",")]
            if unknown
            else [str(m.value.get("name") or "")]
        )
        names.extend(n for n in listed if n and n not in names)
    return names


def _producer(text: str, said: str, tool: str) -> SoftProducer | None:
    """The table's row for a tool's answer to a call of ``tool``: ``ToolNode``'s texts first, then
    the status."""
    if text.startswith("Error"):  # every text of ToolNode's own does; most answers are not its
        if UNKNOWN_TOOL.match(text):
            return "not_advertised"
        old = OLD_INVALID_ARGS.match(text)
        if INVALID_ARGS.match(text) or (old and old.group("tool") == tool):  # not one the tool raised
            return "invalid_arguments"
    return "tool_error" if said == "error" else None


def _latest(thread: Thread, unread: Unread) -> tuple[Checkpoint, dict[str, Any]] | None:
    """The thread's latest checkpoint that can be read and its channel values (each later one goes
    to ``unread``), or ``None``. Checkpoint ids sort by time (uuid6): a later one is past it."""
    for latest in reversed(thread.checkpoints):
        where = f"thread {thread.thread_id}, checkpoint {latest.id}"
        try:
            values = checkpoint(latest, where, unread.path or Path()).get("channel_values") or {}
        except RecordingError as exc:
            unread.skip(where, exc)
            continue
        if isinstance(values, dict):
            return latest, values
        unread.skip(where, "channel_values should be a map")
    return None


def _write_thread(thread: Thread, unread: Unread) -> list[Event]:
    path = unread.path or Path()
    found = _latest(thread, unread)
    if found is None:
        return []
    latest, values = found
    cut = latest is not thread.checkpoints[-1] or any(cid > latest.id for cid in thread.unread)
    where = f"thread {thread.thread_id}, checkpoint {latest.id}"
    channel, msgs = _messages(values)
    settings: dict[str, Any] = {"thread_id": thread.thread_id}
    if channel is None:
        channel, msgs = _replayed(thread, latest.id, unread)
        settings["messages_from"] = "writes"
    if channel is not None:
        settings["channel"] = channel
    if not msgs:
        said = "no messages, neither in the checkpoint's channels nor in the writes: a run with no turns"
        warnings.warn(f"{path}: {where}: {said}", RecordingWarning, stacklevel=4)
    seen = _seen(thread, channel, msgs, unread)
    first_human = next((m for m in msgs if m.kind == "human"), None)
    system = next((m for m in msgs if m.kind == "system"), None)
    ais = [m for m in msgs if m.kind == "ai"]
    writer = RunWriter(
        thread.thread_id,
        task=text_of(first_human.value.get("content")) if first_human else "",
        at=thread.checkpoints[0].ts or 0.0,
        system=text_of(system.value.get("content")) if system else None,
        models=list(dict.fromkeys(m for m in (_model(a.value) for a in ais) if m)),
        tools=_offered(msgs),
        settings=settings,
    )
    answers = {str(m.value.get("tool_call_id")): m for m in msgs if m.kind == "tool"}
    pending = [
        w
        for w in thread.writes
        if w.checkpoint_id == latest.id and w.channel in ("__error__", "__interrupt__")
    ]
    last_ai = max((i for i, m in enumerate(msgs) if m.kind == "ai"), default=-1)
    for index, ai in enumerate(msgs):
        if ai.kind != "ai":
            continue
        if index == len(msgs) - 1 and not (pending or cut) and _step_guard(ai.value):
            at = seen.get(ai.id or "", latest.ts)
            return writer.end_hard(
                "loop_detected", STEP_GUARD_ENDED, at=at, source_status=status(NAME, "step_guard")
            )
        turn = writer.turn(at=seen.get(ai.id or ""))
        calls = _calls(ai.value)
        text = text_of(ai.value.get("content")) or None
        usage = _usage(ai, thread, unread)
        turn.reply(text, calls, model=_model(ai.value), usage=usage, at=seen.get(ai.id or ""))
        unanswered = [c for c in calls if c.id not in answers]
        if index == last_ai and unanswered and (pending or cut or index == len(msgs) - 1):
            return _end(writer, pending, in_flight=True, latest_ts=latest.ts, cut=cut)
        for call in calls:
            _result(turn, call, answers.get(call.id), seen)
        turn.finish()
    tail = msgs[last_ai + 1 :] if last_ai >= 0 else msgs
    if cut or pending or any(m.kind != "ai" for m in tail) or (last_ai >= 0 and _calls(msgs[last_ai].value)):
        return _end(writer, pending, in_flight=False, latest_ts=latest.ts, cut=cut)
    return writer.finish(text_of(msgs[last_ai].value.get("content")) if last_ai >= 0 else None, at=latest.ts)


def _result(turn: TurnWriter, call: ToolCall, answer: _Message | None, seen: dict[str, float]) -> None:
    if answer is None:
        turn.result(call.id, "", name=call.name, source_status=status(NAME, "missing"), executed=False)
        return
    text = text_of(answer.value.get("content"))
    said = str(answer.value.get("status") or "success")
    producer = _producer(text, said, call.name)
    turn.result(
        call.id,
        text,
        name=call.name,
        producer=producer,
        source_status=status(NAME, said),
        executed=producer not in ("not_advertised", "invalid_arguments"),
        at=seen.get(answer.id or ""),
    )


def _step_guard(value: dict[str, Any]) -> bool:
    """Whether an AI message is the step guard's: its exact text, and nothing a model's reply
    carries (no tool calls, no response metadata, no usage; the guard keeps only the reply's id),
    so that a model that said those words itself is not taken for it."""
    return (
        value.get("content") == STEP_GUARD
        and not value.get("tool_calls")
        and not value.get("response_metadata")
        and not value.get("usage_metadata")
    )


def _error_class(text: str) -> str:
    """``KeyError`` of ``"KeyError('x')"`` (serde keeps an exception as its ``repr``)."""
    match = re.match(r"^([A-Za-z_][\w.]*)\(", text)
    return match.group(1).rsplit(".", 1)[-1] if match else "Error"


def _end(
    writer: RunWriter, pending: list[Write], *, in_flight: bool, latest_ts: float | None, cut: bool = False
) -> list[Event]:
    """End the run hard on what the pending writes say (or on the open turn's unanswered calls;
    ``cut``: the thread's later checkpoints could not be read)."""
    error = next((w for w in pending if w.channel == "__error__"), None)
    interrupt = next((w for w in pending if w.channel == "__interrupt__"), None)
    producer: HardProducer | SourceProducer
    if error is not None:
        message = _value_text(error.value)
        kind = _error_class(message)
        producer = _HARD_BY_ERROR.get(kind, "source_error")
        said = "__error__:tool_call" if in_flight and producer == "source_error" else "__error__"
        return writer.end_hard(producer, message, error=kind, at=latest_ts, source_status=status(NAME, said))
    if interrupt is not None:
        message = f"interrupted, waiting for input: {_value_text(interrupt.value)}"
        return writer.end_hard(
            "user_input_required",
            message,
            error="GraphInterrupt",
            at=latest_ts,
            source_status=status(NAME, "__interrupt__"),
        )
    if cut:
        message = "the thread's later checkpoints could not be read (meta['unread'] lists them)"
    elif in_flight:
        message = "the thread stops with calls no tool answered"
    else:
        message = "the thread stops before the model answered"
    message = f"{unexplained()}: {message}, and no pending write says more"
    return writer.end_hard("source_error", message, at=latest_ts, source_status=status(NAME, "unanswered"))


def _value_text(value: Any) -> str:
    if isinstance(value, Obj):
        return _value_text(value.value)
    if isinstance(value, list) and value:
        return "; ".join(_value_text(v) for v in value)
    if isinstance(value, dict):
        inner = value.get("value", value)
        return inner if isinstance(inner, str) else repr(inner)
    return value if isinstance(value, str) else repr(value)


FORMAT = ForeignFormat(
    NAME,
    "a LangGraph SQLite checkpointer database",
    (".sqlite", ".sqlite3", ".db"),
    sniff=_sniff.langgraph,
    reader=read,
    marks=MARKS,
)
"""The format this module reads: ``loopnb.formats()`` finds it here."""
