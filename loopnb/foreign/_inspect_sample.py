"""One Inspect AI sample (a dict as the log holds it) written down as one loopnb run.

The agent's turns are the sample's ``ModelEvent``s outside the scorers and outside any tool (a
sub-agent's or a scorer's model calls are not the agent's turns); the ``ToolEvent``s that follow
carry its calls' results. A sample whose events are gone is read from its messages. An event
that cannot be read goes to ``Unread.skip`` and the sample keeps the rest.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from loopnb.engine import ToolCall, Usage
from loopnb.engine._errors import HardProducer, SoftProducer, SourceProducer
from loopnb.engine._events import Event
from loopnb.foreign._formats import Unread
from loopnb.foreign._transcript import RunWriter, TurnWriter, status, token_problem
from loopnb.record import RecordingError

NAME = "inspect"

LIMITS: dict[str, HardProducer | SourceProducer] = {
    "token": "context_exceeded",
    "context": "context_exceeded",
    "cost": "context_exceeded",
    "message": "loop_detected",
    "turn": "loop_detected",
    "time": "cancelled",
    "working": "cancelled",
    "operator": "cancelled",
    "custom": "source_error",
}
"""The producer of each kind of ``sample.limit`` (see ``_inspect``'s table for why)."""

_SOFT: dict[str, SoftProducer] = {"timeout": "timeout", "approval": "hook_veto"}
_ATTACHMENT = "attachment://"
_SKIPPED_SPANS = frozenset({"scorers", "scorer", "tool"})
_TOOL_FRAME = re.compile(r"_call_tools\.py\", line \d+, in (call_tool|execute_tools)\b")
_EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*)\(")


class Bad(Exception):
    """A value of the log that is not what Inspect writes: where, and what was expected."""


def expect(value: Any, kind: type | tuple[type, ...], where: str) -> Any:
    """``value``, when it is of ``kind``; else ``Bad`` naming ``where``."""
    if not isinstance(value, kind):
        names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        raise Bad(f"{where}: expected {names}, found {type(value).__name__}")
    return value


def _time(value: Any, where: str) -> float | None:
    if value is None or value == "":
        return None
    try:
        return datetime.fromisoformat(expect(value, str, where)).timestamp()
    except ValueError as exc:
        raise Bad(f"{where}: expected an ISO 8601 time, found {value!r}") from exc


def _time_or_none(value: Any) -> float | None:
    """``_time`` of ``value``, ``None`` for no time (its event says so when it is read)."""
    try:
        return _time(value, "")
    except Bad:
        return None


def _millis(start: float | None, end: float | None) -> float:
    return max(0.0, (end - start) * 1000.0) if start is not None and end is not None else 0.0


def producer(kind: str, text: str, function: str, offered: set[str] | None) -> SoftProducer:
    """The soft producer of a ``ToolCallError`` of ``kind`` for a call of ``function``."""
    if kind != "parsing":
        return _SOFT.get(kind, "tool_error")
    unknown = text == f"Tool {function} not found"
    if offered is not None and function not in offered:
        return "not_advertised"
    if unknown:
        return "not_advertised" if offered is None else "registry_miss"
    return "invalid_arguments"


class SampleReader:
    """The events of one sample (or one failed attempt of it): ``events(...)`` walks it once;
    ``label`` names the sample for ``unread``, which takes each event that cannot be read."""

    def __init__(
        self,
        sample: dict[str, Any],
        spec: dict[str, Any],
        run_id: str,
        settings: dict[str, Any],
        label: str = "the sample",
        unread: Unread | None = None,
    ):
        self.sample, self.spec, self.run_id, self.settings = sample, spec, run_id, settings
        self.label, self.unread = label, unread or Unread()
        attachments = sample.get("attachments")
        self.attachments: dict[str, Any] = attachments if isinstance(attachments, dict) else {}
        self.messages = [
            m for m in expect(sample.get("messages") or [], list, "messages") if isinstance(m, dict)
        ]
        self.tool_messages = {str(m.get("tool_call_id")): m for m in self.messages if m.get("role") == "tool"}
        self.turn: TurnWriter | None = None
        self.waiting: dict[str, ToolCall] = {}  # the open turn's calls with no result yet
        self.offered: set[str] | None = None  # the tools the open turn's request offered
        self.crashed = False  # a tool of the open turn raised
        self.said: str | None = None  # what Inspect said of the open turn's calls

    def text(self, value: Any) -> str:
        """What the model read of a content value: a string, a content part, or a list of parts."""
        if value is None:
            return ""
        if isinstance(value, str):
            if value.startswith(_ATTACHMENT):
                return str(self.attachments.get(value[len(_ATTACHMENT) :], value))
            return value
        if isinstance(value, list):
            return "\n".join(t for t in (self.text(v) for v in value) if t)
        if isinstance(value, dict):
            kind = value.get("type")
            if kind == "text":
                return self.text(value.get("text"))
            return "" if kind == "reasoning" else f"[{kind}]"
        return str(value)

    def _agent(self, events: list[Any]) -> list[tuple[str, dict[str, Any]]]:
        """The model and tool events of the agent itself, each with where it is."""
        skipped: set[str] = set()
        depth = 0  # older logs mark the scorers with step events instead of spans
        kept: list[tuple[str, dict[str, Any]]] = []
        for i, ev in enumerate(events):
            if not isinstance(ev, dict):
                self._skip(f"events[{i}]", Bad(f"events[{i}]: expected dict, found {type(ev).__name__}"))
                continue
            kind = ev.get("event")
            if kind == "span_begin":
                if str(ev.get("type")) in _SKIPPED_SPANS or str(ev.get("parent_id")) in skipped:
                    skipped.add(str(ev.get("id")))
            elif kind == "step" and ev.get("type") in ("scorer", "scorers"):
                depth += 1 if ev.get("action") == "begin" else -1
            elif kind in ("model", "tool") and self._agents(ev, depth, skipped):
                kept.append((f"events[{i}]", ev))
        return kept

    @staticmethod
    def _agents(ev: dict[str, Any], depth: int, skipped: set[str]) -> bool:
        """Whether a model or tool event is the agent's own (finished, outside scorers and tools)."""
        return depth <= 0 and str(ev.get("span_id")) not in skipped and not ev.get("pending")

    def _from_messages(self) -> list[tuple[str, dict[str, Any]]]:
        """Model events made up from the assistant messages, for a sample whose events are gone
        (the calls' results then come from the tool messages)."""
        return [
            (
                f"messages[{i}]",
                {"event": "model", "model": m.get("model"), "output": {"choices": [{"message": m}]}},
            )
            for i, m in enumerate(self.messages)
            if m.get("role") == "assistant"
        ]

    def events(self, events: list[Any], *, error: Any, limit: Any) -> list[Event]:
        """The run's events: its turns from ``events``, ended by ``error``, ``limit`` or the output."""
        agent = self._agent(events) if events else self._from_messages()
        models = [str(self.spec["model"])] if self.spec.get("model") else []
        tools: list[str] = []
        for _, ev in agent:
            if ev["event"] != "model":
                continue
            if ev.get("model") and str(ev["model"]) not in models:
                models.append(str(ev["model"]))
            offered = ev.get("tools")
            for t in offered if isinstance(offered, list) else []:
                if isinstance(t, dict) and str(t.get("name")) not in tools:
                    tools.append(str(t.get("name")))
        first = next((t for t in (_time_or_none(e.get("timestamp")) for _, e in agent) if t), 0.0)
        run = RunWriter(
            self.run_id,
            task=self.text(_prompt(self.sample.get("input"))),
            at=_time(self.sample.get("started_at"), "started_at") or first,
            system=next(
                (self.text(m.get("content")) for m in self.messages if m.get("role") == "system"), None
            ),
            models=models,
            tools=tools,
            settings=self.settings,
        )
        raised = self._raised(agent, error)
        for where, ev in agent:
            try:
                self._event(run, where, ev, raised)
            except Bad as exc:
                self._skip(where, exc)
        return self._end(run, events, error, limit)

    def _skip(self, where: str, exc: Bad) -> None:
        """Skip event ``where``, which cannot be read (``exc`` says why): the sample reads on."""
        said = str(exc)
        why = said[len(where) :].lstrip(".: ") if said.startswith(where) else said
        error = RecordingError(f"{self.label}, {said}", path=self.unread.path)
        self.unread.skip(f"{self.label}, {where}", why or said, error=error)

    def _event(self, run: RunWriter, where: str, ev: dict[str, Any], raised: dict[str, Any] | None) -> None:
        """One model or tool event of the agent: a turn begins, or a call's result comes."""
        if ev["event"] == "model":
            try:
                at = _time(ev.get("timestamp"), f"{where}.timestamp")
            except Bad as exc:  # the turn is read without its time
                self._skip(where, exc)
                at = None
            self._settle()
            self.turn = run.turn(at=at)
            self.waiting, self.crashed, self.said = {}, False, None
            offered = ev.get("tools")
            self.offered = (
                {str(t.get("name")) for t in offered if isinstance(t, dict)}
                if isinstance(offered, list)
                else None
            )
            if not ev.get("error"):
                self._reply(ev, where, at)
        elif self.turn is not None:
            call_id = str(expect(ev.get("id"), str, f"{where}.id"))
            self.waiting.pop(call_id, None)
            if ev is raised:
                self.crashed = True  # the tool raised: the sample ends on this turn, with no result
            else:
                self._result(call_id, ev.get("function"), ev.get("result"), ev.get("error"), ev, where)

    def _raised(self, agent: list[tuple[str, dict[str, Any]]], error: Any) -> dict[str, Any] | None:
        """The tool event whose tool raised and ended the sample: the one marked ``failed`` (its
        ``error`` stays empty), or in a log from before that mark, when the sample's traceback
        runs through Inspect's tool call, the last unfailed tool event of the last turn."""
        tools = [ev for _, ev in agent if ev["event"] == "tool"]
        marked = next((ev for ev in tools if ev.get("failed") and not ev.get("error")), None)
        if marked is not None or not isinstance(error, dict):
            return marked
        if not _TOOL_FRAME.search(self.text(error.get("traceback"))):
            return None
        last = max((i for i, (_, ev) in enumerate(agent) if ev["event"] == "model"), default=-1)
        after = [ev for _, ev in agent[last + 1 :] if ev["event"] == "tool" and not ev.get("error")]
        return after[-1] if after else None

    def _end(self, run: RunWriter, events: list[Any], error: Any, limit: Any) -> list[Event]:
        end = run.when(_time(self.sample.get("completed_at"), "completed_at"))
        if not error and not limit:
            self._settle()
            output = self.sample.get("output")
            return run.finish(
                self.text(output.get("completion")) if isinstance(output, dict) else None, at=end
            )
        turn = self.turn
        if turn is not None and not (self.waiting or self.crashed or turn.reply_ is None):
            self._settle()  # the turn was over: the sample ended after it
        if error:
            error = expect(error, dict, "error")
            message = self.text(error.get("message"))
            crash = self.crashed or bool(_TOOL_FRAME.search(self.text(error.get("traceback"))))
            name = _EXCEPTION.match(message)
            return run.end_hard(
                "source_error",
                message,
                error=name.group(1) if name else "SourceError",
                at=end,
                source_status=status(NAME, "failed" if crash else "error"),
            )
        kind = str(expect(limit, dict, "limit").get("type"))
        said = self.text(limit.get("reason")) or next(
            (str(e.get("message")) for e in reversed(events) if e.get("event") == "sample_limit"),
            f"{kind} limit of {limit.get('limit')} exceeded",
        )
        return run.end_hard(
            LIMITS.get(kind, "source_error"), said, at=end, source_status=status(NAME, f"{kind}_limit")
        )

    def _reply(self, ev: dict[str, Any], where: str, start: float | None) -> None:
        """The model's answer of model event ``ev`` (``start``: its time, already read)."""
        assert self.turn is not None
        output = expect(ev.get("output") or {}, dict, f"{where}.output")
        choices = expect(output.get("choices") or [{}], list, f"{where}.output.choices")
        choice = expect(choices[0], dict, f"{where}.output.choices[0]")
        message = expect(choice.get("message") or {}, dict, f"{where}.output.choices[0].message")
        calls = []
        for j, c in enumerate(expect(message.get("tool_calls") or [], list, f"{where} tool_calls")):
            at = f"{where} tool_calls[{j}]"
            args = expect(c, dict, at).get("arguments")
            name, call_id = (
                expect(c.get("function"), str, f"{at}.function"),
                expect(c.get("id"), str, f"{at}.id"),
            )
            calls.append(ToolCall(name, args if isinstance(args, dict | str) else {}, id=call_id))
        usage = output.get("usage")
        model = ev.get("model") or output.get("model")
        self.turn.reply(
            self.text(message.get("content")) or None,
            calls,
            model=None if model is None else str(model),
            usage=Usage(_count(usage, "input_tokens", where), _count(usage, "output_tokens", where))
            if isinstance(usage, dict)
            else None,
            at=start,
            latency_ms=_millis(start, _time(ev.get("completed"), f"{where}.completed")),
        )
        self.waiting = {c.id: c for c in calls}

    def _result(self, call_id: str, function: Any, result: Any, error: Any, ev: Any, where: str) -> None:
        """What the model read for one call: the tool's output, or the ``ToolCallError``'s message."""
        assert self.turn is not None
        name = str(function or "")
        start = _time(ev.get("timestamp"), f"{where}.timestamp") if ev else None
        end = _time(ev.get("completed"), f"{where}.completed") if ev else None
        if not error:
            kind, text, soft = "ok", self.text(result), None
        else:
            error = expect(error, dict, f"{where}.error")
            kind, text = str(error.get("type")), self.text(error.get("message"))
            soft = producer(kind, text, name, self.offered)
        said = status(NAME, kind)
        if self.said is None or (self.said == status(NAME, "ok") and soft is not None):
            self.said = said
        self.turn.result(
            call_id,
            text,
            name=name,
            producer=soft,
            source_status=said,
            at=end,
            latency_ms=_millis(start, end),
        )

    def _settle(self) -> None:
        """Finish the open turn: a call no event answered takes its tool message, if any."""
        turn = self.turn
        if turn is None or turn.finished:
            return
        for call_id, call in self.waiting.items():
            m = self.tool_messages.get(call_id)
            if m is None:
                missing = status(NAME, "missing")
                self.said = missing if self.said in (None, status(NAME, "ok")) else self.said
                turn.result(call_id, "", name=call.name, source_status=missing, executed=False)
            else:
                where = f"the tool message of call {call_id}"
                self._result(call_id, call.name, m.get("content"), m.get("error"), None, where)
        self.waiting = {}
        turn.finish(source_status=self.said)


def _count(usage: dict[str, Any], key: str, where: str) -> int:
    value = usage.get(key)
    problem = None if value is None else token_problem(value)
    if problem is not None:
        raise Bad(f"{where}.output.usage.{key}: {problem}")
    return value or 0


def _prompt(value: Any) -> Any:
    if isinstance(value, list):
        return next((m.get("content") for m in value if isinstance(m, dict) and m.get("role") == "user"), "")
    return value
