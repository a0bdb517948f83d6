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
  (``failure_error_function=None``): hard ``source_error``, status ``crashed``.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopnb.engine import ToolCall, Usage
from loopnb.engine._errors import HardProducer, SoftProducer, SourceProducer
from loopnb.engine._events import Event
from loopnb.foreign import _sniff
from loopnb.foreign._agents_replies import Reply, arguments, prompt_of, read_back, reply_of, usage_of
from loopnb.foreign._agents_spans import MODEL_KINDS, Span, Trace, handoff_tool, parse_lines, traces, walk
from loopnb.foreign._formats import ForeignFormat
from loopnb.foreign._transcript import RunWriter, status
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

_TIMEOUT = re.compile(r"Tool '.*' timed out after [0-9.]+ seconds\.", re.DOTALL)
_BAD_ARGUMENTS = "Invalid JSON input for tool"


@dataclass(slots=True)
class _Turn:
    span: Span | None
    models: list[Span] = field(default_factory=list)
    calls: list[Span] = field(default_factory=list)

    @property
    def start(self) -> float | None:
        return (self.span or self.models[0]).start

    @property
    def end(self) -> float | None:
        return (self.span or self.models[-1]).end

    @property
    def not_found(self) -> str | None:
        """The tool the turn span says was not found, if it says one was."""
        if self.span is None or self.span.error_message != "Tool not found":
            return None
        name = self.span.error_data("tool_name")
        return str(name) if name is not None else ""


@dataclass(slots=True)
class _End:
    producer: HardProducer | SourceProducer
    message: str
    said: str
    on_last: bool
    error: str | None = None
    at: float | None = None


def _turns(spans: list[Span]) -> list[_Turn]:
    """The run's turns: its ``turn`` spans, else one per model span (older SDKs, or a run with
    ``include_task_and_turn_spans`` off)."""
    marked = [s for s in spans if s.kind == "turn"]
    if marked:
        turns = []
        for span in marked:
            inside = list(walk(span.children))
            turns.append(
                _Turn(
                    span,
                    [s for s in inside if s.kind in MODEL_KINDS],
                    [s for s in inside if s.kind in ("function", "handoff")],
                )
            )
        return turns
    models = sorted((s for s in spans if s.kind in MODEL_KINDS), key=lambda s: s.start or 0.0)
    turns = [_Turn(None, [s]) for s in models]
    starts = [t.start or 0.0 for t in turns]
    for span in spans:
        if span.kind in ("function", "handoff") and turns:
            after = bisect.bisect_right(starts, span.start or 0.0)  # the last model span before it
            turns[max(after - 1, 0)].calls.append(span)
    return turns


def _tool_name(span: Span) -> str:
    if span.kind == "handoff":
        return handoff_tool(span.text("to_agent") or "")
    return span.text("name") or ""


class _Run:
    """One run's spans, written down as loopnb events."""

    def __init__(self, trace: Trace, run_id: str, roots: list[Span]) -> None:
        self.trace = trace
        self.run_id = run_id
        self.spans = list(walk(roots))
        self.agents = [s for s in self.spans if s.kind == "agent"]
        self.outer = [s for s in self.spans if s.kind in ("agent", "task")]
        self.turns = _turns(self.spans)
        self.seen = read_back(self.spans)
        tools: dict[str, None] = {}
        for agent in self.agents:
            tools.update(dict.fromkeys(agent.names("tools")))
            tools.update(dict.fromkeys(map(handoff_tool, agent.names("handoffs"))))
        self.tools = tuple(tools)

    def _reply(self, turn: _Turn) -> Reply:
        return reply_of(turn.models[-1]) if turn.models else Reply()

    def _usage(self, turn: _Turn) -> Usage | None:
        found = [u for u in map(usage_of, turn.models) if u is not None]  # each checked, used or not
        usage = usage_of(turn.span) if turn.span is not None else None
        if usage is not None or not found:
            return usage
        return Usage(sum(u.input_tokens for u in found), sum(u.output_tokens for u in found))

    def _calls(self, turn: _Turn, reply: Reply) -> list[tuple[ToolCall, Span | None]]:
        """The turn's calls, each with its span: the reply's calls in order, matched by name to
        the spans in start order; spans no reply call claims follow (all of them when the model
        span kept no reply)."""
        pool = list(turn.calls)
        pairs: list[tuple[ToolCall, Span | None]] = []
        for call_id, name, raw in reply.calls:
            span = next((s for s in pool if _tool_name(s) == name), None)
            if span is not None:
                pool.remove(span)
            pairs.append((ToolCall(name, arguments(raw), id=call_id or (span.id if span else "")), span))
        for span in pool:
            pairs.append((ToolCall(_tool_name(span), arguments(span.data.get("input")), id=span.id), span))
        missing = turn.not_found
        if missing and not reply.kept and all(call.name != missing for call, _ in pairs):
            pairs.append((ToolCall(missing, {}, id=f"{turn.span.id if turn.span else ''}:{missing}"), None))
        return pairs

    def _result(
        self, turn: _Turn, call: ToolCall, span: Span | None
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
            return read or json.dumps({"assistant": span.text("to_agent")}), None, said, True
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
        if last.not_found is not None:
            agent = last.span.data.get("agent_name") if last.span else None
            message = f"Tool {last.not_found} not found in agent {agent}"
            return _End("source_error", message, "tool_not_found", True, "ModelBehaviorError", last.end)
        model = last.models[-1] if last.models else None
        if model is not None and model.error is not None:
            said = model.error_data("message") or model.error_data("error") or model.error_message
            name = model.error_data("name")
            kind = str(name) if name else None
            return _End("source_error", str(said), "model_error", True, kind, model.end)
        if escaped is not None and failed is not None:
            return _End("source_error", escaped, "agent_error", True, at=failed.end)
        unanswered = [call.name for call, span in self._calls(last, self._reply(last)) if span is None]
        if unanswered:  # a trace without turn spans, or one cut short: the run ended on these calls
            message = f"the trace ends before {', '.join(unanswered)} ran"
            return _End("source_error", message, "unanswered", True, at=last.end)
        return None

    def _start(self, replies: list[Reply]) -> RunWriter:
        task, system = prompt_of(self.spans)
        starts = [s.start for s in self.spans if s.start is not None]
        info = self.trace.info
        settings = {
            "workflow_name": info.get("workflow_name"),
            "group_id": info.get("group_id"),
            "metadata": info.get("metadata"),
            "agents": list(dict.fromkeys(str(a.text("name")) for a in self.agents)) or None,
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

    def _write_turn(self, run: RunWriter, turn: _Turn, reply: Reply, *, hard: bool) -> None:
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


def _recording(found: list[Trace], path: Path | None) -> Recording:
    from loopnb.record import Recording

    if not found:
        raise RecordingError(
            "no spans or traces found (expected Span.export() / Trace.export() dicts)", path=path
        )
    events: list[Event] = []
    for trace in found:
        for run_id, roots in _runs(trace):
            events += _Run(trace, run_id, roots).events()
    return Recording.from_events(events, meta={"source": {"format": NAME, "version": None}}, path=path)


def _listed(value: Any) -> list[Any] | None:
    """The exported items of a parsed JSON document, or ``None`` when it is none of the shapes."""
    if isinstance(value, list):
        return value
    if isinstance(value, dict) and isinstance(value.get("data"), list):
        return list(value["data"])
    if isinstance(value, dict) and "object" in value:
        return [value]
    return None


def read(path: Path) -> Recording:
    """The runs in an Agents SDK trace file (JSON Lines, a JSON list, or ``{"data": [...]}``)."""
    from loopnb.record._frames import collector_paused

    try:
        data = path.read_bytes()
    except OSError as exc:
        raise RecordingError(f"cannot read: {exc}", path=path) from exc
    with collector_paused():  # spans and events hold no cycles: see collector_paused
        try:
            whole = _listed(json.loads(data))
        except RecursionError as exc:
            raise RecordingError("JSON nested too deeply to be spans or traces", path=path) from exc
        except ValueError:
            whole = None  # JSON Lines: more than one document
        if whole is not None:
            return _recording(traces(enumerate(whole, 1), lines=False, path=path), path)
        return _recording(traces(parse_lines(data, path), lines=True, path=path), path)


def from_openai_agents(spans: Iterable[Any]) -> Recording:
    """A recording of Agents SDK spans and traces: ``Span`` / ``Trace`` objects (a processor's,
    in the order it saw them end) or their ``export()`` dicts."""
    from loopnb.record._frames import collector_paused

    items: list[tuple[int, Any]] = []
    for index, item in enumerate(spans, 1):
        exported = item if isinstance(item, dict) else getattr(item, "export", None)
        if callable(exported):
            exported = exported()
        if exported is not None:  # the SDK's no-op spans and traces export nothing
            items.append((index, exported))
    with collector_paused():
        return _recording(traces(items, lines=False), None)


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
