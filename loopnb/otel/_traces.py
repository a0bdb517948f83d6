"""The traces ``LiveSpans`` has seen so far: each span placed in its run as it starts and ends.

A ``Trace`` keeps where each span hangs (``_otlp_runs.Tree``), which spans are still open, and
per run what is still to be read: its open requests and tool spans, its ended requests whose
turns are not written yet, and its ``RunReader`` once the run is shown. Of a span whose turn is
written only where it hung is kept. A span ``LiveSpans`` gives up on (it never ended) is taken out
of what is open (``give_up``), so that it holds nothing back.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from typing import Any

from loopnb.foreign import _otlp_genai as g
from loopnb.foreign._otlp import RunReader
from loopnb.foreign._otlp_runs import Tree, key, request_failed
from loopnb.foreign._otlp_spans import Span

GONE_KEPT = 10_000
"""How many spans given up on, and traces let go, are remembered (not read if they come back)."""


def remember(latest: dict[Any, None], item: Any) -> None:
    """Note ``item`` in ``latest``, which keeps the ``GONE_KEPT`` latest ones."""
    latest[item] = None
    while len(latest) > GONE_KEPT:
        del latest[next(iter(latest))]


@dataclass(slots=True)
class Run:
    """One run of a trace (an agent span's, or the trace's agent-less one) as read so far."""

    owner: str | None
    agent: Span | None = None
    open: dict[str, float] = field(default_factory=dict)
    """The run's model requests and tool spans still open, and when each started."""
    chats: list[Span] = field(default_factory=list)
    """Its ended model requests whose turns are not written yet, in order."""
    tools: list[Span] = field(default_factory=list)
    """Its ended tool spans, in order, until the reader is made (then the reader holds them)."""
    failed: list[Span] = field(default_factory=list)
    """Its other spans that ended ``ERROR`` (a failed step), until the reader is made."""
    reader: RunReader | None = None
    """Made when the run is first shown."""
    has_chat: bool = False
    """Whether any model request hangs in it (an agent-less run without one is no run)."""
    first: tuple[float, float] = (math.inf, math.inf)
    """The earliest of its ended spans: the order in which a trace's runs are read at its end."""
    done: bool = False
    broken: bool = False
    agent_given_up: bool = False
    """Its agent span was given up on (it never ended): the run ends when its trace is flushed."""

    @property
    def stuck(self) -> bool:
        """Whether its agent span is still open though the trace says the run is over: nothing of
        the run is open and its last model request failed (OpenInference never ends smolagents'
        agent span when the model raises). ``from_otel``, reading the spans that ended, has no
        agent span for it and ends it hard on that request."""
        agent = self.agent
        return (
            agent is not None
            and agent.end is None
            and not (self.agent_given_up or self.done or self.broken or self.open)
            and bool(self.chats)
            and request_failed(self.chats[-1])
        )


@dataclass(slots=True)
class Trace:
    """One trace as far as it has been seen: where each span is, what is open, each run."""

    tree: Tree = field(default_factory=Tree)
    open: dict[str, Span] = field(default_factory=dict)
    """Its spans started and not ended (as they started)."""
    runs: dict[str | None, Run] = field(default_factory=dict)
    """By agent span id (``None``: the agent-less run)."""
    root_ended: bool = False
    lead: tuple[bool, float, str] | None = None
    """The agent span that started first, an entry chain only while there is no other (its run has
    the trace's id)."""
    chat_start: float = -math.inf
    """When the latest-starting model request that has ended started."""

    def run(self, owner: str | None) -> Run:
        found = self.runs.get(owner)
        if found is None:
            found = self.runs[owner] = Run(owner)
        return found

    def place(self, span: Span, *, ended: bool) -> None:
        """Place ``span`` in its run (a span placed before that now hangs elsewhere moves too)."""
        moved = self.tree.add(span)
        shown = self.runs.get(None)
        if moved and ended and g.entry_chain(span) and shown is not None and shown.reader is not None:
            # OpenInference names its entry point a CHAIN only as it ends: the run shown so far,
            # the trace's, is its run (its turns stay where they were written), and it says the end
            shown.agent = span
            moved = []
        if moved:
            self._move(set(moved))
        if ended:
            self.open.pop(span.span_id, None)
        self._note(span, ended=ended)

    def _move(self, span_ids: set[str]) -> None:
        """Spans not yet written whose run changed (a role that changed as a span ended, a parent
        seen after its children): taken out of their runs and placed again."""
        again: list[tuple[Span, bool]] = []
        for run in self.runs.values():
            for span_id in span_ids & run.open.keys():
                del run.open[span_id]
                if span_id in self.open:
                    again.append((self.open[span_id], False))
            for held in (run.chats, run.tools):
                again.extend((s, True) for s in held if s.span_id in span_ids)
                held[:] = [s for s in held if s.span_id not in span_ids]
            if run.reader is not None:
                again.extend((s, True) for s in run.reader.take(span_ids))
        for span, ended in again:
            self._note(span, ended=ended)

    def _note(self, span: Span, *, ended: bool) -> None:
        """Note ``span`` (as it started, or as it ended) in its run."""
        node = self.tree.nodes[span.span_id]
        run = self.run(node.owner)
        if node.role == "agent":
            run.agent = span
            first = (g.entry_chain(span), span.start or 0.0, span.span_id)
            if self.lead is None or first < self.lead:
                self.lead = first
        elif node.role == "chat":
            run.has_chat = True
            if ended:
                self.chat_start = max(self.chat_start, span.start or 0.0)
        if not ended:
            if node.top:
                run.open[span.span_id] = span.start or 0.0
            return
        run.first = min(run.first, key(span))
        if node.role == "other" and span.status == "ERROR":  # a failed step: it says what a call did
            if run.reader is not None:
                run.reader.steps.add(span)
            else:
                run.failed.append(span)
        if node.top:
            run.open.pop(span.span_id, None)
            if node.role == "chat":
                bisect.insort(run.chats, span, key=key)
            elif run.reader is not None:
                run.reader.tool(span)
            else:
                bisect.insort(run.tools, span, key=key)

    def give_up(self, span_id: str) -> Run | None:
        """Stop waiting for the open span ``span_id`` to end: it holds its run back no longer (a
        root span given up on ends the trace, an agent span its run). The run it was in."""
        span = self.open.pop(span_id, None)
        node = self.tree.nodes.get(span_id)
        if span is None or node is None:
            return None
        for run in self.runs.values():
            run.open.pop(span_id, None)
        if span.parent_id is None:
            self.root_ended = True
        found = self.runs.get(node.owner)
        if found is not None and node.role == "agent":
            found.agent_given_up = True
        return found

    def moved_on(self, started: Span) -> Run | None:
        """The stuck run (``Run.stuck``) an agent span that started hangs in directly, not in one
        of its tool calls or model requests: the process moved on from it (smolagents' next run,
        under the agent span its failed run left open and current)."""
        node = self.tree.nodes.get(started.span_id)
        parent = self.tree.nodes.get(started.parent_id) if started.parent_id is not None else None
        if node is None or node.role != "agent" or parent is None or parent.tool or parent.chat:
            return None
        run = self.runs.get(parent.owner)
        return run if run is not None and run.stuck else None

    def moves(self, ended: Span) -> Run | None:
        """The run a span that ended can make a turn of final: an agent span's, a model request's;
        a tool span's only when a model request that started after it has ended already (it held
        that one back)."""
        node = self.tree.nodes[ended.span_id]
        if node.role == "agent" or (node.top and node.role == "chat"):
            return self.runs[node.owner]
        if node.top and node.role == "tool" and self.chat_start > (ended.start or 0.0):
            return self.runs[node.owner]
        return None
