"""Which run each span of a trace belongs to, placed as the spans arrive, and how a run ended hard.

A run is an agent span (or, in a trace with none, the trace itself); a span belongs to the
nearest agent span at or above it. Of a run's spans, its turns are read from the model requests
(``chat``) and tool spans with no model request or tool above them in the run: a model called
inside a tool is the tool's business, not a turn of the run.

``Tree`` places each span as it comes, from its parent's place, so that a reader fed one span
at a time (``loopnb.otel.LiveSpans``) does as much per span whatever the trace's length; a span
placed again (as it ended) whose role changed, or a parent that arrives after its children (a
file lists spans as they ended), places again what hangs below it, as far down as a place
changes: a chain listed leaf first is placed in time linear in its length. ``split_runs`` reads
a whole trace with the same ``Tree``.

How a run ended hard (``end_hard``) is read as the conventions' "Recording Errors" put it: its
agent span ``ERROR``, with ``error.type`` or an ``exception`` event naming the class. That class
says which of the channel table's hard producers ended it (a usage limit, a step limit, a
cancellation, loopnb's own ``LoopError`` names), else ``source_error``; where the error came from
(the tool span that raised, the model request that failed, the agent span itself) is the turn's
``source_status``. With no agent span (OpenInference never ends smolagents' when its model fails),
the failed request or tool span says it; where nothing does, the end is said to be unexplained,
never given a guessed cause.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import cast, get_args

from loopnb.engine import LoopError
from loopnb.engine._errors import HardProducer, SourceProducer
from loopnb.foreign import _otlp_genai as g
from loopnb.foreign._otlp_calls import NAME
from loopnb.foreign._otlp_spans import Span
from loopnb.foreign._pydantic_ai_ends import usage_limit
from loopnb.foreign._transcript import RunWriter, status, unexplained


def key(span: Span) -> tuple[float, float]:
    """The order of a run's spans: by start, then end."""
    return (span.start or 0.0, span.end or 0.0)


@dataclass(slots=True)
class Node:
    """Where one span is: its role, its run, and whether a turn is read from it."""

    parent_id: str | None
    role: g.Role
    owner: str | None = None
    """The nearest agent span at or above it (itself, for an agent span)."""
    tool: bool = False
    """A tool span at or above it, below its run's agent span."""
    chat: bool = False
    """A model request at or above it, below its run's agent span."""
    top: bool = False
    """A model request or tool span with neither above it in its run: a turn is read from it."""


@dataclass(slots=True)
class Tree:
    """The spans of one trace, each placed in its run as it arrives."""

    nodes: dict[str, Node] = field(default_factory=dict)
    children: dict[str, list[str]] = field(default_factory=dict)

    def add(self, span: Span) -> list[str]:
        """Place ``span`` (new, or again as it ended); returns the spans placed before whose
        run or ``top`` this changed."""
        role = g.role_of(span)
        node = self.nodes.get(span.span_id)
        if node is not None:
            if node.role == role:
                return []
            node.role = role
            return [span.span_id, *(m for m in self._again(span.span_id) if m != span.span_id)]
        node = self.nodes[span.span_id] = Node(span.parent_id, role)
        if span.parent_id is not None:
            self.children.setdefault(span.parent_id, []).append(span.span_id)
        if span.span_id in self.children:  # its children came first: they hang below it now
            return self._again(span.span_id)
        self._place(span.span_id, node)
        return []

    def _place(self, span_id: str, node: Node) -> None:
        parent = self.nodes.get(node.parent_id) if node.parent_id is not None else None
        tool, chat = (parent.tool, parent.chat) if parent is not None else (False, False)
        if node.role == "agent":
            node.owner, node.tool, node.chat, node.top = span_id, False, False, False
            return
        node.owner = parent.owner if parent is not None else None
        node.top = (node.role == "tool" and not tool) or (node.role == "chat" and not tool and not chat)
        node.tool = tool or node.role == "tool"
        node.chat = chat or node.role == "chat"

    def _again(self, span_id: str) -> list[str]:
        """Place ``span_id`` again, and below it every span whose parent's place changed; the
        ids whose run or ``top`` changed.

        A span's place follows from its role and its parent's place alone, so the walk stops
        where a place stays as it was. As ancestors arrive a span's run is set once and its
        ``tool``, ``chat`` and ``top`` each flip once, so a chain listed leaf first (as its
        spans end) is placed in time linear in its length, not quadratic."""
        moved: list[str] = []
        seen: set[str] = set()
        stack = [span_id]
        while stack:
            current = stack.pop()
            if current in seen:  # a parent chain that loops: each span placed once
                continue
            seen.add(current)
            node = self.nodes.get(current)
            if node is None:
                continue
            run_top, place = (node.owner, node.top), (node.owner, node.tool, node.chat, node.top)
            self._place(current, node)
            if (node.owner, node.top) != run_top:
                moved.append(current)
            if current == span_id or (node.owner, node.tool, node.chat, node.top) != place:
                stack.extend(reversed(self.children.get(current, ())))
        return moved

    def owner(self, span_id: str) -> str | None:
        node = self.nodes.get(span_id)
        return None if node is None else node.owner


@dataclass(slots=True)
class Run:
    """One run's spans: its agent span (if any), its model requests and its tool spans, in order."""

    run_id: str
    agent: Span | None
    chats: list[Span]
    tools: list[Span]
    failed: list[Span] = field(default_factory=list)
    """Its other spans that ended ``ERROR`` (a failed step may wrap one of its requests)."""


def split_runs(spans: list[Span]) -> list[Run]:
    """The runs in ``spans``: one per agent span, else one per trace that made model requests.

    A run's id is its trace's for the trace's first agent run (or its agent-less one, when it
    has no agent span), ``<trace>-<agent span>`` for every other agent run, and
    ``<trace>-trace`` for model requests outside any agent span beside agent runs: an id that
    what comes later in the trace does not change, so that a run read live keeps it."""
    traces: dict[str, tuple[Tree, list[Span]]] = {}
    for span in spans:
        tree, members = traces.setdefault(span.trace_id, (Tree(), []))
        tree.add(span)
        members.append(span)
    runs: list[tuple[tuple[float, float], Run]] = []
    for trace_id, (tree, members) in traces.items():
        by_id = {s.span_id: s for s in members}
        nodes = tree.nodes
        groups: dict[str | None, list[Span]] = {}
        for span in members:
            groups.setdefault(nodes[span.span_id].owner, []).append(span)
        if None in groups and not any(nodes[s.span_id].role == "chat" for s in groups[None]):
            del groups[None]
        lead = lead_agent(s for s in members if nodes[s.span_id].role == "agent")
        for owner, group in groups.items():
            agent = None if owner is None else by_id[owner]
            turned = [s for s in group if nodes[s.span_id].top]
            chats = sorted((s for s in turned if nodes[s.span_id].role == "chat"), key=key)
            tools = sorted((s for s in turned if nodes[s.span_id].role == "tool"), key=key)
            if agent is not None and g.entry_chain(agent) and not turned:
                continue  # an entry point around the agents' runs, no run itself
            failed = [s for s in group if s.status == "ERROR" and nodes[s.span_id].role == "other"]
            first = agent or min(group, key=key)
            runs.append((key(first), Run(run_id(trace_id, owner, lead), agent, chats, tools, failed)))
    runs.sort(key=lambda r: r[0])
    return [run for _, run in runs]


def lead_agent(agents: Iterable[Span]) -> str | None:
    """The id of the agent span of ``agents`` that started first (an entry chain only when there
    is no other)."""
    found = min(agents, key=lambda s: (g.entry_chain(s), s.start or 0.0, s.span_id), default=None)
    return None if found is None else found.span_id


def run_id(trace_id: str, owner: str | None, lead: str | None) -> str:
    """The id of the run of agent span ``owner`` (``None``: the trace's agent-less run)."""
    return trace_id if owner == lead else f"{trace_id}-{owner or 'trace'}"


_HARD_BY_ERROR: dict[str, HardProducer] = {
    "ContextWindowExceededError": "context_exceeded",
    "ContextLengthExceeded": "context_exceeded",
    "CancelledError": "cancelled",
    "KeyboardInterrupt": "cancelled",
    "FallbackExceptionGroup": "fallback_exhausted",
    "MaxTurnsExceeded": "loop_detected",
    "GraphRecursionError": "loop_detected",
    "LlmCallsLimitExceededError": "loop_detected",  # Google ADK's RunConfig.max_llm_calls
    # loopnb's own profile: a hard ending's error.type is the LoopError's class name
    **{cls.__name__: cls.producer for cls in LoopError.__subclasses__()},
}
_HARD: frozenset[str] = frozenset(get_args(HardProducer))
_EXHAUSTED = ("exceeded max retries", "exceeded maximum retries")


def request_failed_last(chat: Span | None) -> bool:
    """Whether ``chat`` (a run's last model request, if any) failed."""
    return chat is not None and request_failed(chat)


def request_failed(chat: Span) -> bool:
    """Whether a model request failed (a span status, or an ``error.type`` on a span left unset)."""
    return chat.status == "ERROR" or chat.attributes.get("error.type") is not None


def _error_text(span: Span) -> tuple[str, str]:
    """An error span's class (its ``error.type``, else its exception's) and the message that ended
    the run (saying plainly that the trace does not say why, when the span says nothing more than
    its status)."""
    exc = g.exception(span)
    kind = g.error_class(span) or "Error"
    if span.description:  # less the stack trace some instrumentations add (OpenInference's LangChain)
        return kind, span.description.split("Traceback (most recent call last):", 1)[0].rstrip() or kind
    if exc is None and g.error_class(span) is None:
        return kind, f"span {span.name!r} is ERROR and says nothing more: {unexplained()}"
    return kind, f"{kind}: {exc[1]}" if exc and exc[1] else kind


def _producer(kind: str, message: str) -> HardProducer | SourceProducer:
    lowered = message.lower()
    if any(words in lowered for words in _EXHAUSTED):
        return "tool_recovery_exhausted"
    if kind == "UsageLimitExceeded":  # pydantic-ai's: which limit says which row
        return usage_limit(message)
    return _HARD_BY_ERROR.get(kind, "source_error")


def end_hard(
    writer: RunWriter, agent: Span | None, last_chat: Span | None, last_tools: list[g.ToolSpan]
) -> None:
    """End the run hard as its agent span (or, without one, its last tool span) says it ended."""
    failed = next((t for t in reversed(last_tools) if t.span.status == "ERROR"), None)
    source = agent if agent is not None else (failed.span if failed is not None else None)
    if source is None and last_chat is not None and request_failed(last_chat):
        source = last_chat  # a model request that failed with nothing after it (no agent span ended)
    if source is None:
        writer.end_hard(
            "source_error",
            f"{unexplained()}: it ends on tool calls no model request read, and no agent span says how"
            " the run ended",
            source_status=status(NAME, "unanswered"),
        )
        return
    kind, message = _error_text(source)
    named = agent is None or g.error_class(agent) is not None
    if not named and last_chat is not None and request_failed(last_chat):
        kind, message = _error_text(last_chat)  # the agent span names no error (Agno's): the request does
    own = g.loopnb_producer(source)
    producer = cast(HardProducer, own) if own in _HARD else _producer(kind, message)
    exc = g.exception(source)
    raised = failed is not None and (agent is None or (exc is not None and failed.exception == exc))
    turn = writer.open_turn
    ran = failed is None and bool(last_tools) and not request_failed_last(last_chat)
    if ran and source is agent and turn is not None:
        # every call of the last turn ran and the run stopped before its next request (a request
        # or step limit): the turn ended as its calls did, and the run on a turn of its own
        said = status(NAME, last_chat.status) if last_chat is not None else None
        turn.finish(source_status=said, at=max((t.span.end or 0.0 for t in last_tools), default=None))
    if raised and producer == "source_error":
        origin = "ERROR:execute_tool"  # the tool's own exception, not the framework giving up
    elif last_chat is not None and last_chat.status == "ERROR":
        origin = "ERROR:chat"
    else:
        origin = "ERROR:invoke_agent"
    writer.end_hard(producer, message, error=kind, at=source.end, source_status=status(NAME, origin))
