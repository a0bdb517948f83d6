"""OpenTelemetry traces of agent runs, read as loopnb turns.

One run per agent span (``invoke_agent``, pydantic-ai's ``agent run``, OpenInference's
``AGENT``), or per trace where a trace has none; one turn per model request span (``chat``),
with the tool spans that ran its calls. What the model read for a call is taken from the next
request's input messages, so ``error_text`` is the text the trace says the model was given.

Errors are read as the GenAI conventions' "Recording Errors" records them: an operation that
failed is ``ERROR``, and an error handled so that the enclosing operation goes on is not recorded
on the enclosing span. So a tool span with ``ERROR`` under an agent span that is not ``ERROR`` is
a failure the run handled: soft, kept as ``otlp:ERROR:handled`` (mark ``retry``, no
disagreement), its producer the span's ``error.type`` where that names one (MCP's
``tool_error``, loopnb's producers). So is one the run went on from under an agent span that ended
``ERROR`` with a class of its own (a later ending: ``LoopDetected``, a retry limit). Where nothing
tells a handled tool error from a run-ending one, no agent span, or one that ended ``ERROR`` with
the tool's own error or no class at all, the call is kept as ``otlp:ERROR`` (mark ``error``:
``soft_shown_as_hard``). An error the model read under ``UNSET`` or ``OK`` (an ``exception``
event or ``error.type`` on a span left unset) is soft, kept as ``otlp:UNSET``
(``soft_shown_as_success``); a call the model made with no tool span at all (pydantic-ai's unknown
tool) is ``otlp:missing``. The run is hard when its agent span is ``ERROR``:
``otlp:ERROR:execute_tool`` when the exception came out of a tool span (``crash``), else
``otlp:ERROR:invoke_agent`` or ``otlp:ERROR:chat`` (``ended``). An end the trace does not
explain (no agent span says how the run ended, or one says ``ERROR`` and nothing more) is said
so, never given a guessed cause.

A span, event or value that cannot be read goes to ``Unread.skip`` (a ``RecordingWarning``, or a
``RecordingError`` with ``errors="raise"``): a span is left out, a request's messages, usage or
tools are read as absent, and the turn keeps the rest.

Spans loopnb's own ``loopnb.otel.Exporter`` wrote say more, and are read for it:
``loopnb.channel`` ``soft`` with ``loopnb.producer`` and ``loopnb.error_text`` (before the third
round, a ``loopnb.soft_error`` event) is an error given back to the model (``otlp:soft``, mark
``retry``) with its producer and the text the model read, on a tool span or, for a final answer
the run turned down, on the ``chat`` span; ``loopnb.producer`` on the run's span names the hard
ending; ``loopnb.turn`` places a tool span in its turn (a simulated clock gives them all one
time); a request with ``error.type`` and no answer failed (a fallback chain's); a call dispatched
again (a recovery retry) is one call, read as its last dispatch.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from loopnb.engine import ToolCall, Usage
from loopnb.engine._events import Event
from loopnb.foreign import _otlp_genai as g
from loopnb.foreign import _otlp_messages as m
from loopnb.foreign import _sniff
from loopnb.foreign._formats import Errors, ForeignFormat, Unread
from loopnb.foreign._otlp_calls import (
    NAME,
    Steps,
    loose,
    pair_spans,
    read_reply,
    results_read,
    span_ms,
    write_result,
)
from loopnb.foreign._otlp_runs import Run, end_hard, key, request_failed, split_runs
from loopnb.foreign._otlp_spans import Decoded, Span, decode_objects, read_file
from loopnb.foreign._transcript import RunWriter, status
from loopnb.record import Recording, RecordingError
from loopnb.record._disagree import Mark

MARKS: dict[str, Mark] = {
    "UNSET": "ok",
    "OK": "ok",
    "ERROR": "error",
    "ERROR:handled": "retry",
    "soft": "retry",
    "missing": "missing",
    "output": "ok",
    "ERROR:execute_tool": "crash",
    "ERROR:invoke_agent": "ended",
    "ERROR:chat": "ended",
    "unanswered": "ended",
}
"""Every ``source_status`` this reader writes (after ``"otlp:"``) and what it means: a span's
status code (on a call, and on a turn for its model request's span); ``ERROR:handled`` for a
call whose tool span is ``ERROR`` under an agent span that is not, or that ended with an error of
its own after the run went on (the conventions' mark of a failure the run handled: the source
tells soft from hard); ``soft`` for a call whose
span loopnb's own exporter marked as an error given back to the model; ``missing`` for a call
with no tool span; ``output`` for a call to pydantic-ai's output tool, recorded on the agent
span rather than a tool span; on the turn a run ended on, where the ``ERROR`` came from (the
tool span that raised, the agent span, the model request), or ``unanswered`` for a trace that
ends on tool calls with no agent span saying how the run ended."""

Messages = tuple[list[m.Message] | None, list[m.Message] | None]
"""A model request's input and output messages, as ``m.messages`` reads them."""


def read(path: Path, unread: Unread | None = None) -> Recording:
    """The runs in an OTLP/JSON, protobuf JSON or ``span.to_json()`` file. An item that cannot
    be read goes to ``unread`` (by default, skipped with a warning)."""
    path = Path(path)
    unread = unread or Unread("warn", path)
    return _recording(read_file(path, unread), unread)


def from_otel(spans: Iterable[Any], *, errors: Errors = "warn") -> Recording:
    """The runs in OpenTelemetry SDK spans (``ReadableSpan``s, e.g. ``InMemorySpanExporter``'s
    ``get_finished_spans()``), or in their dicts of any encoding ``read`` knows. ``errors="warn"``
    skips a span or value that cannot be read with a ``RecordingWarning`` (``meta["unread"]``
    lists it); ``"raise"`` raises ``RecordingError``."""
    unread = Unread(errors)
    return _recording(decode_objects(spans, unread), unread)


def _recording(decoded: Decoded, unread: Unread) -> Recording:
    path = unread.path
    if not decoded.spans and unread.items:
        raise unread.nothing_read("spans")
    events: list[Event] = []
    try:
        for run in split_runs(decoded.spans):
            events.extend(write_run(run, unread))
    except RecordingError as exc:  # a span's value of the wrong shape: said with the file's path
        if path is None or exc.path is not None:
            raise
        raise RecordingError(exc.reason, path=path) from exc
    except RecursionError as exc:  # an attribute's JSON written out again past Python's depth
        raise RecordingError("a span holds a value nested too deeply to read", path=path) from exc
    scopes = Counter(s.scope for s in decoded.spans if s.scope)
    source = {
        "format": NAME,
        "version": scopes.most_common(1)[0][0] if scopes else None,
        "encoding": decoded.encodings[0] if len(decoded.encodings) == 1 else decoded.encodings,
    }
    return Recording.from_events(events, meta={"source": source, "unread": unread.meta()}, path=path)


def _user_text(inputs: list[m.Message] | None, role: str) -> str | None:
    for msg in inputs or ():
        if msg.role == role:
            texts = [g.dumps(p.content) for p in msg.parts if p.kind == "text" and p.content]
            if texts:
                return "\n".join(texts)
    return None


def _start(agent: Span | None, chats: Sequence[Span]) -> float:
    first = agent or (chats[0] if chats else None)
    return (first.start if first is not None else None) or 0.0


def write_run(run: Run, unread: Unread | None = None) -> list[Event]:
    """The run's loopnb events, turn by turn (a turn's results from the next request's inputs)."""
    reader = RunReader(run.run_id, run.agent, run.chats, unread)
    for tool in run.tools:
        reader.tool(tool)
    for span in run.failed:
        reader.steps.add(span)
    reader.turns(run.chats, run.agent, end=True)
    return reader.writer.events


class RunReader:
    """One run's events, written as its spans become known: turn *i* once request *i + 1* is
    (what the model read for its calls is in that request's input), the last turn and how the
    run ended once it is over. ``write_run`` hands it a whole run, ``loopnb.otel.LiveSpans``
    the spans as they end: the events are the same. It keeps only what the turns still to
    write need: the next request's messages and the tool spans not yet placed in a turn.

    Args:
        run_id: The run's id.
        agent: The run's agent span as it is now, if it has one.
        chats: The run's model requests known now, in order: the run's start (its task, models,
            tools and system prompt) is read from them.
        unread: What takes a value that cannot be read (by default, it is raised).
    """

    def __init__(
        self, run_id: str, agent: Span | None, chats: Sequence[Span], unread: Unread | None = None
    ) -> None:
        self.unread = unread or Unread()
        self._history = m.History()
        self._held: tuple[Span, Messages] | None = None
        self._tools: list[Span] = []
        """Tool spans not yet placed in a turn, in order."""
        self._numbers: set[int] = set()
        """The ``loopnb.turn`` numbers of the requests written."""
        self._last: tuple[Span | None, str | None] = (None, None)
        """The last request written, and the last text the model answered."""
        self.outputs: set[str] = set()
        """Every output tool a request offered (pydantic-ai's ``final_result``)."""
        self.steps = Steps()
        """The run's failed steps not yet placed in a turn (smolagents')."""
        offered: list[str] = []
        for chat in chats:
            names, output_tools = self._offered(chat)
            self.outputs.update(output_tools)
            offered.extend(n for n in names or () if n not in offered)
        first_in = self._read(chats[0])[0] if chats else None
        task = _user_text(first_in, "user")
        if task is None and agent is not None:
            task = g.dumps(agent.attributes.get("input.value")) or None
        name = g.agent_name(agent) if agent is not None else None
        self.writer = RunWriter(
            run_id,
            task=task or "",
            at=_start(agent, chats),
            system=next((s for s in map(g.system_text, chats) if s), None) or _user_text(first_in, "system"),
            models=list(dict.fromkeys(m for m in map(g.model, chats) if m)),
            tools=offered,
            settings={"agent": name} if name else {},
        )

    def _offered(self, chat: Span) -> tuple[list[str] | None, list[str]]:
        """``g.tools(chat)``; none known when they cannot be read (``unread`` says why)."""
        try:
            return g.tools(chat)
        except RecordingError as exc:
            self.unread.skip(g.label(chat), exc)
            return None, []

    def _usage(self, chat: Span) -> Usage | None:
        """``g.usage(chat)``; none when it cannot be read (``unread`` says why)."""
        try:
            return g.usage(chat)
        except RecordingError as exc:
            self.unread.skip(g.label(chat), exc)
            return None

    def tool(self, span: Span) -> None:
        """A tool span of the run that has ended: placed in its turn when that turn is written."""
        bisect.insort(self._tools, span, key=key)

    def take(self, span_ids: set[str]) -> list[Span]:
        """Take back the tool spans of ``span_ids`` not yet placed (they turned out to be another run's)."""
        taken = [t for t in self._tools if t.span_id in span_ids]
        self._tools = [t for t in self._tools if t.span_id not in span_ids]
        return taken

    def turns(self, rest: Sequence[Span], agent: Span | None, *, end: bool) -> int:
        """Write the turns of ``rest`` (the run's ended requests from the first not yet written
        on, in order): every one but the last, or with ``end`` every one and how the run ended
        (``agent``: its agent span as it ended). Returns how many of ``rest`` were written."""
        n = len(rest)
        count = n if end else max(0, n - 1)
        for chat in rest:
            self.outputs.update(self._offered(chat)[1])
        windows = self._windows(rest, count)
        for i in range(count):
            later = i + 1 < n
            self._turn(rest[i], windows[i], rest[i + 1] if later else None, agent)
        if end:
            last_chat, last_text = self._last
            last_chat = rest[-1] if rest else last_chat
            writer = self.writer
            if writer.open_turn is None and (agent is None or agent.status != "ERROR"):
                output = (g.final_output(agent) if agent is not None else None) or last_text
                at = agent.end if agent is not None else (last_chat.end if last_chat is not None else None)
                writer.finish(output, at=at)
            else:
                tools = windows[-1] if windows else [g.tool_span(t) for t in self._tools]
                end_hard(writer, agent, last_chat, tools)
        return count

    def _read(self, chat: Span) -> Messages:
        """``chat``'s messages: read once (the last one read is held for its turn)."""
        if self._held is None or self._held[0] is not chat:
            self._held = (chat, m.messages(chat, self._history, self.unread))
        return self._held[1]

    def _windows(self, rest: Sequence[Span], count: int) -> list[list[g.ToolSpan]]:
        """The tool spans of each turn written now (of ``rest[:count]``), by ``loopnb.turn``
        (loopnb's export numbers them: times may tie on a simulated clock), else by time."""
        windows: list[list[g.ToolSpan]] = [[] for _ in range(count)]
        if not rest:
            return windows
        numbered = {n: i for i, c in enumerate(rest) if (n := g.loopnb_turn(c)) is not None}
        starts = [c.start or 0.0 for c in rest]
        kept: list[Span] = []
        for tool in self._tools:
            n = g.loopnb_turn(tool)
            if n in numbered:
                i = numbered[n]
            elif n in self._numbers:
                continue  # of a turn written already
            else:
                i = bisect.bisect_right(starts, tool.start or 0.0) - 1
            if i >= count:
                kept.append(tool)
            elif i >= 0:
                windows[i].append(g.tool_span(tool, rest[i]))
        self._tools = kept
        self._numbers.update(n for c in rest[:count] if (n := g.loopnb_turn(c)) is not None)
        return windows

    def _turn(self, chat: Span, tools: list[g.ToolSpan], following: Span | None, agent: Span | None) -> None:
        """Write the turn of request ``chat`` (``following``: the next request, None for the last)."""
        writer = self.writer
        later = following is not None
        inputs, outputs = self._read(chat)
        step = self.steps.of(chat)
        self._last = (chat, self._last[1])
        if later and request_failed(chat) and not outputs and not tools:
            return  # a failed model request the framework made again
        turn = writer.turn(at=chat.start)
        if request_failed(chat) and not outputs and not later:
            return  # the model request that ended the run: ended hard after it
        text, calls = read_reply(outputs, chat)
        self._last = (chat, text)
        pairs = pair_spans(calls, tools)
        calls = [c for c, _ in pairs]
        turn.reply(
            text, calls, model=g.model(chat), usage=self._usage(chat), at=chat.end, latency_ms=span_ms(chat)
        )
        if following is None and _ends_here(agent, pairs):
            return
        wanted = {c.id for c in calls}
        after = None if following is None else self._read(following)[0]
        responses = None if after is None else results_read(after, wanted)
        given = None if inputs is None else loose(after, len(inputs))
        offered = self._offered(chat)[0]
        for call, t in pairs:
            write_result(
                turn, call, t, responses, later, offered, self.outputs, agent, self.unread, given, step
            )
        rejected = g.loopnb_soft(chat)  # loopnb's export: a final answer the run turned down
        if rejected is not None:
            turn.feedback(rejected[1], rejected[0], at=chat.end)
        turn.finish(source_status=status(NAME, chat.status))


def _ends_here(agent: Span | None, pairs: list[tuple[ToolCall, g.ToolSpan | None]]) -> bool:
    """Whether the run ended on its last turn: its agent span failed, or (with no agent span)
    a tool failed with nothing after it, or calls were made that no request read."""
    if agent is not None:
        return agent.status == "ERROR"
    return bool(pairs)


FORMAT = ForeignFormat(
    NAME,
    "OpenTelemetry spans (OTLP/JSON, protobuf JSON, or the SDK's span.to_json output)",
    (".json", ".jsonl"),
    sniff=_sniff.otlp,
    reader=read,
    in_memory=from_otel,
    marks=MARKS,
)
"""The format this module reads: ``loopnb.formats()`` finds it here."""
