"""Read OpenAI Agents SDK traces: the spans a ``TracingProcessor`` exports, as loopnb turns.

A file holds ``Span.export()`` / ``Trace.export()`` dicts as JSON Lines (what
``loopnb.integrations.openai_agents.JsonlProcessor`` writes), a JSON list, or the backend
exporter's ``{"data": [...]}``. One run per trace (per ``task`` span when a trace holds several
runs); a turn is the runner's ``turn`` span (each model span when a trace has none), its calls
the function and handoff spans in it. What the SDK does, and how it reads here:

- a tool that raises: the model reads the failure function's text (by default the fixed "An
  error occurred while running the tool. Please try again."); the span's ``error`` is set as it
  is for a run-ending failure, only its free-text message adds "(non-fatal)": soft
  ``tool_error`` (``invalid_arguments`` when the arguments were not a JSON object or did not
  validate, ``hook_veto`` for a rejected approval), status ``error``;
- a tool that timed out: the model reads "Tool 'x' timed out after N seconds." and the span
  shows no error: soft ``timeout``, status ``ok``;
- an unknown tool: the turn span's error "Tool not found" and no function span; by default the
  SDK raises ``ModelBehaviorError`` (hard ``source_error``, status ``tool_not_found``), with
  ``tool_not_found_behavior="return_error_to_model"`` the model reads "Tool 'x' not found."
  (soft ``not_advertised``, status ``missing``);
- ``MaxTurnsExceeded``: hard ``loop_detected`` (loopnb's own ``max_turns`` ends that way) on the
  turn the runner refused to start; a guardrail's tripwire, a failed model call or an exception
  that escaped: hard ``source_error``; a tool's exception that escaped
  (``failure_error_function=None``): hard ``source_error``, status ``crashed``; a trace that ends
  on calls no span ran does not say why the run stopped (``unanswered``).

A line, span or value that cannot be read goes to ``Unread.skip`` (a ``RecordingWarning`` naming
it, or with ``errors="raise"`` a ``RecordingError``): a span whose ids or times are damaged is left
out, a span field of the wrong shape (a reply, a usage, a name) is read as absent.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from loopnb.engine import ToolCall, Usage
from loopnb.engine._errors import HardProducer, SoftProducer, SourceProducer
from loopnb.engine._events import Event
from loopnb.foreign import _sniff
from loopnb.foreign._agents_replies import Reply, arguments, prompt_in, read_back, reply_of, usage_of
from loopnb.foreign._agents_spans import (
    Span,
    Trace,
    Turn,
    handoff_tool,
    listed,
    parse_lines,
    traces,
    turns_of,
    walk,
)
from loopnb.foreign._formats import Errors, ForeignFormat, Unread
from loopnb.foreign._transcript import RunWriter, status, unexplained
from loopnb.record import RecordingError

if TYPE_CHECKING:
    from loopnb.record import Recording
    from loopnb.record._disagree import Mark

NAME = "openai-agents"

MARKS: dict[str, Mark] = {
    "ok": "ok",
    "error": "error",
    "missing": "missing",
    "crashed": "crash",
    "tool_not_found": "unknown",
    "max_turns": "ended",
    "guardrail": "ended",
    "model_error": "ended",
    "agent_error": "ended",
    "unanswered": "ended",
}
"""Every status written: per call ``ok`` / ``error`` (the span's ``error``) / ``missing`` (no
span); per turn ``ok`` / ``error`` (the turn span's), and on the hard turn what ended the run
(``tool_not_found``: the default ``ModelBehaviorError`` on an unknown tool, which the table makes
soft; ``unanswered``: the trace ends on calls no span answers)."""

T = TypeVar("T")

_TIMEOUT = re.compile(r"Tool '.*' timed out after [0-9.]+ seconds\.", re.DOTALL)
_BAD_ARGUMENTS = "Invalid JSON input for tool"


@dataclass(slots=True)
class _End:
    producer: HardProducer | SourceProducer
    message: str
    said: str
    on_last: bool
    error: str | None = None
    at: float | None = None


def _tool_name(span: Span) -> str:
    if span.kind == "handoff":
        return handoff_tool(span.text("to_agent") or "")
    return span.text("name") or ""


class _Run:
    """One run's spans, written down as loopnb events; a span's field that cannot be read goes
    to ``unread`` and is read as absent."""

    def __init__(self, trace: Trace, run_id: str, roots: list[Span], unread: Unread) -> None:
        self.trace = trace
        self.run_id = run_id
        self.unread = unread
        self.spans = list(walk(roots))
        self.agents = [s for s in self.spans if s.kind == "agent"]
        self.outer = [s for s in self.spans if s.kind in ("agent", "task")]
        self.turns = turns_of(self.spans)
        try:  # every span at once; span by span only to tell which cannot be read
            self.seen = read_back(self.spans)
        except RecordingError:
            self.seen = {}
            none: dict[str, str] = {}
            for span in self.spans:
                self.seen.update(self._read(span, none, read_back, (span,)))
        tools: dict[str, None] = {}
        nameless: list[str] = []
        for agent in self.agents:
            tools.update(dict.fromkeys(self._read(agent, nameless, agent.names, "tools")))
            handoffs = self._read(agent, nameless, agent.names, "handoffs")
            tools.update(dict.fromkeys(map(handoff_tool, handoffs)))
        self.tools = tuple(tools)

    def _read(self, span: Span, absent: T, read: Callable[..., T], *args: Any) -> T:
        """What ``read(*args)`` reads of ``span``; ``absent`` when it cannot be read (``unread``
        says why)."""
        try:
            return read(*args)
        except RecordingError as exc:
            self.unread.skip(span.label, exc)
            return absent

    def _name(self, span: Span) -> str:
        try:  # not through _read: a hot path, called for each call of each turn
            return _tool_name(span)
        except RecordingError as exc:
            self.unread.skip(span.label, exc)
            return ""

    def _reply(self, turn: Turn) -> Reply:
        return self._read(turn.models[-1], Reply(), reply_of, turn.models[-1]) if turn.models else Reply()

    def _usage(self, turn: Turn) -> Usage | None:
        span = turn.span
        try:  # each checked, used or not
            found = [u for u in map(usage_of, turn.models) if u is not None]
            usage = usage_of(span) if span is not None else None
        except RecordingError:  # read again a span at a time, to leave out only what cannot be read
            found = [u for s in turn.models if (u := self._read(s, None, usage_of, s)) is not None]
            usage = None if span is None else self._read(span, None, usage_of, span)
        if usage is not None or not found:
            return usage
        return Usage(sum(u.input_tokens for u in found), sum(u.output_tokens for u in found))

    def _calls(self, turn: Turn, reply: Reply) -> list[tuple[ToolCall, Span | None]]:
        """The turn's calls, each with its span: the reply's calls in order, matched by name to
        the spans in start order; spans no reply call claims follow (all of them when the model
        span kept no reply)."""
        pool = list(turn.calls)
        pairs: list[tuple[ToolCall, Span | None]] = []
        for call_id, name, raw in reply.calls:
            span = next((s for s in pool if self._name(s) == name), None)
            if span is not None:
                pool.remove(span)
            pairs.append((ToolCall(name, arguments(raw), id=call_id or (span.id if span else "")), span))
        for span in pool:
            pairs.append((ToolCall(self._name(span), arguments(span.data.get("input")), id=span.id), span))
        missing = turn.not_found
        if missing and not reply.kept and all(call.name != missing for call, _ in pairs):
            pairs.append((ToolCall(missing, {}, id=f"{turn.span.id if turn.span else ''}:{missing}"), None))
        return pairs

    def _result(
        self, turn: Turn, call: ToolCall, span: Span | None
    ) -> tuple[str, SoftProducer | None, str, bool]:
        """What the model read for ``call``, the table's producer, the source's status, and
        whether the tool ran."""
        read = self.seen.get(call.id)
        if span is None:
            missing = turn.not_found
            if missing is not None and (call.name == missing or call.name not in self.tools):
                return read or f"Tool '{call.name}' not found.", "not_advertised", "missing", False
            return read or "", None, "missing", False
        said = "ok" if span.error is None else "error"
        if span.kind == "handoff":
            to = self._read(span, None, span.text, "to_agent")
            return read or json.dumps({"assistant": to}), None, said, True
        output = span.data.get("output")
        content = read if read is not None else "" if output is None else str(output)
        if span.error is None:
            return content, "timeout" if _TIMEOUT.fullmatch(content) else None, said, True
        detail = str(span.error_data("error") or "")
        if isinstance(call.arguments, str) or detail.startswith(_BAD_ARGUMENTS):
            return content, "invalid_arguments", said, False
        if "manually rejected" in detail:
            return content, "hook_veto", said, False
        return content, "tool_error", said, True

    def _ending(self) -> _End | None:
        """What ended the run, when it did not end with a final reply."""
        for span in self.outer:
            if span.error_message == "Max turns exceeded":
                limit = span.error_data("max_turns")
                message = f"Max turns ({limit}) exceeded"
                return _End("loop_detected", message, "max_turns", False, "MaxTurnsExceeded", span.end)
        last = self.turns[-1] if self.turns else None
        marked = [last.span] if last is not None and last.span is not None else []
        for span in [*marked, *self.outer]:
            if span.error_message == "Guardrail tripwire triggered":
                side = (
                    "Input"
                    if span.kind == "turn" or span.error_data("type") == "input_guardrail"
                    else "Output"
                )
                message = f"Guardrail {span.error_data('guardrail')} triggered tripwire"
                error = f"{side}GuardrailTripwireTriggered"
                return _End("source_error", message, "guardrail", last is not None, error, span.end)
        failed = next((s for s in self.outer if s.error is not None), None)
        escaped = None if failed is None else str(failed.error_data("error") or failed.error_message)
        if last is None:
            return None if escaped is None else _End("source_error", escaped, "agent_error", on_last=False)
        for span in last.calls:
            fatal = span.kind == "function" and span.error is not None and span.data.get("output") is None
            if fatal and "non-fatal" not in (span.error_message or ""):
                message = escaped or f"{span.error_message}: {span.error_data('error')}"
                return _End("source_error", message, "crashed", True, at=span.end)
        missing, agent = last.not_found, last.span.data.get("agent_name") if last.span else None
        if missing is None:  # openai-agents 0.2 makes no turn spans: its agent span says it
            teller = next((span for span in self.outer if span.error_message == "Tool not found"), None)
            if teller is not None:
                missing, agent = str(teller.error_data("tool_name") or ""), teller.data.get("name")
        if missing is not None:
            message = f"Tool {missing} not found in agent {agent}"
            return _End("source_error", message, "tool_not_found", True, "ModelBehaviorError", last.end)
        model = last.models[-1] if last.models else None
        if model is not None and model.error is not None:
            said = model.error_data("message") or model.error_data("error") or model.error_message
            name = model.error_data("name")
            kind = str(name) if name else None
            return _End("source_error", str(said), "model_error", True, kind, model.end)
        if model is not None and model.kind == "generation" and _unanswered(model.data):
            # openai-agents 0.2 marks no error on a Chat Completions request that raised (an HTTP
            # 500, say): the span keeps what was sent and no output, which a reply always fills
            message = (
                "the model request got no response; the trace does not say why (its generation span "
                "kept the request, no output and no error)"
            )
            return _End("source_error", message, "model_error", True, at=model.end)
        if escaped is not None and failed is not None:
            return _End("source_error", escaped, "agent_error", True, at=failed.end)
        unanswered = [call.name for call, span in self._calls(last, self._reply(last)) if span is None]
        if unanswered:  # a trace without turn spans, or one cut short: the run ended on these calls
            message = f"the trace ends before {', '.join(unanswered)} ran: {unexplained()}"
            return _End("source_error", message, "unanswered", True, at=last.end)
        return None

    def _start(self, replies: list[Reply]) -> RunWriter:
        prompts = (self._read(s, None, prompt_in, s) for s in self.spans if s.kind == "generation")
        task, system = next((found for found in prompts if found is not None), ("", None))
        starts = [s.start for s in self.spans if s.start is not None]
        info = self.trace.info
        settings = {
            "workflow_name": info.get("workflow_name"),
            "group_id": info.get("group_id"),
            "metadata": info.get("metadata"),
            "agents": list(dict.fromkeys(str(self._read(a, None, a.text, "name")) for a in self.agents))
            or None,
        }
        return RunWriter(
            self.run_id,
            task=task,
            at=min(starts) if starts else 0.0,
            system=system,
            models=tuple(dict.fromkeys(r.model for r in replies if r.model)),
            tools=self.tools,
            settings={k: v for k, v in settings.items() if v is not None},
        )

    def _write_turn(self, run: RunWriter, turn: Turn, reply: Reply, *, hard: bool) -> None:
        """One turn: the reply, then (unless the run ended on it) each call's result."""
        writer = run.turn(at=turn.start)
        pairs = self._calls(turn, reply)
        answer = turn.models[-1] if turn.models else None
        if answer is not None or pairs:
            writer.reply(
                reply.text,
                [call for call, _ in pairs],
                model=reply.model,
                usage=self._usage(turn),
                at=answer.end if answer else None,
                latency_ms=answer.duration_ms if answer else 0.0,
            )
        if hard:
            return
        for call, span in pairs:
            content, producer, said, executed = self._result(turn, call, span)
            writer.result(
                call.id,
                content,
                name=call.name,
                producer=producer,
                source_status=status(NAME, said),
                executed=executed,
                at=span.end if span else None,
                latency_ms=span.duration_ms if span else 0.0,
            )
        marked = None if turn.span is None else "ok" if turn.span.error is None else "error"
        writer.finish(source_status=status(NAME, marked), at=turn.end)

    def events(self) -> list[Event]:
        """The run's events, from ``RunStarted`` to ``RunFinished``."""
        replies = [self._reply(t) for t in self.turns]
        run = self._start(replies)
        end = self._ending()
        for index, (turn, reply) in enumerate(zip(self.turns, replies, strict=True)):
            hard = end is not None and end.on_last and index == len(self.turns) - 1
            self._write_turn(run, turn, reply, hard=hard)
        if end is not None:
            said = status(NAME, end.said)
            return run.end_hard(end.producer, end.message, error=end.error, at=end.at, source_status=said)
        final = replies[-1] if replies and not replies[-1].calls else None
        ends = [s.end for s in self.outer if s.end is not None]
        return run.finish(final.text if final else None, at=max(ends) if ends else None)


def _runs(trace: Trace) -> list[tuple[str, list[Span]]]:
    tasks = [s for s in walk(trace.roots) if s.kind == "task"]
    if len(tasks) <= 1:
        return [(trace.id, tasks or trace.roots)]
    return [(f"{trace.id}:{n}", [task]) for n, task in enumerate(tasks, 1)]


def _recording(found: list[Trace], unread: Unread) -> Recording:
    from loopnb.record import Recording

    if not any(trace.spans for trace in found) and unread.items:
        raise unread.nothing_read("spans and traces")
    if not found:
        raise RecordingError(
            "no spans or traces found (expected Span.export() / Trace.export() dicts)", path=unread.path
        )
    events: list[Event] = []
    for trace in found:
        for run_id, roots in _runs(trace):
            events += _Run(trace, run_id, roots, unread).events()
    meta = {"source": {"format": NAME, "version": None}, "unread": unread.meta()}
    return Recording.from_events(events, meta=meta, path=unread.path)


def read(path: Path, unread: Unread | None = None) -> Recording:
    """The runs in an Agents SDK trace file (JSON Lines, a JSON list, or ``{"data": [...]}``). An
    item that cannot be read goes to ``unread`` (by default, skipped with a warning)."""
    from loopnb.record._frames import collector_paused

    unread = unread or Unread("warn", path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise RecordingError(f"cannot read: {exc}", path=path) from exc
    with collector_paused():  # spans and events hold no cycles: see collector_paused
        try:
            whole = listed(json.loads(data))
        except RecursionError as exc:
            raise RecordingError("JSON nested too deeply to be spans or traces", path=path) from exc
        except ValueError:
            whole = None  # JSON Lines: more than one document
        if whole is not None:
            return _recording(traces(enumerate(whole, 1), lines=False, unread=unread), unread)
        return _recording(traces(parse_lines(data, unread), lines=True, unread=unread), unread)


def from_openai_agents(spans: Iterable[Any], *, errors: Errors = "warn") -> Recording:
    """A recording of Agents SDK spans and traces: ``Span`` / ``Trace`` objects (a processor's,
    in the order it saw them end) or their ``export()`` dicts. ``errors="warn"`` skips a span
    that cannot be read with a ``RecordingWarning`` (``meta["unread"]`` lists it); ``"raise"``
    raises ``RecordingError``."""
    from loopnb.record._frames import collector_paused

    unread = Unread(errors)
    items: list[tuple[int, Any]] = []
    for index, item in enumerate(spans, 1):
        exported = item if isinstance(item, dict) else getattr(item, "export", None)
        if callable(exported):
            exported = exported()
        if exported is not None:  # the SDK's no-op spans and traces export nothing
            items.append((index, exported))
    with collector_paused():
        return _recording(traces(items, lines=False, unread=unread), unread)


FORMAT = ForeignFormat(
    NAME,
    "OpenAI Agents SDK spans and traces (JSON Lines or a JSON list)",
    (".jsonl", ".json"),
    sniff=_sniff.openai_agents,
    reader=read,
    in_memory=from_openai_agents,
    marks=MARKS,
)
"""The format this module reads: ``loopnb.formats()`` finds it here."""


def _unanswered(data: dict[str, Any]) -> bool:
    """Whether a generation span kept the request (``input``) and no reply (``output``): with
    ``trace_include_sensitive_data=False`` it keeps neither, which says nothing."""
    return data.get("input") is not None and data.get("output") is None
