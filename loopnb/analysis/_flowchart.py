"""The spec's flowchart as data: its nodes, its edges, and the path each kind of turn takes.

The chart is the one in ``spec/soft-and-hard-errors.md``::

    failed -> adapt? -yes-> soft -> model -> next -> watch -repeated-> hard2 -> finalize
                     -no--> hard ---------------------------------------------^
                            soft -retried to the ceiling-> watch  (the model never read it)
                                            next -recovered-> ok

A turn lights one path, chosen by its channel, its producer and whether the turn before it in
its run was soft (``path_of``); ``FlowCount`` adds the paths of a run's turns up into the edge
counts. That is the one counting rule: the live view, the replay, the HTML report and
``loopnb.flow_counts`` all count with it, so a recording counts exactly what the live run showed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

NodeId = Literal["failed", "adapt", "soft", "model", "next", "watch", "ok", "hard2", "hard", "finalize"]


@dataclass(frozen=True, slots=True)
class Node:
    """A box of the chart; ``label`` is the spec's text, ``x``/``y`` its place in the diagram."""

    id: NodeId
    label: str
    x: float
    y: float


@dataclass(frozen=True, slots=True)
class Edge:
    """An arrow of the chart; ``label`` is the spec's text on it (empty for unlabelled arrows)."""

    id: str
    source: NodeId
    target: NodeId
    label: str = ""


NODES: tuple[Node, ...] = (
    Node("failed", "something failed", 0.0, 7.0),
    Node("adapt", "could the model read this<br>and change its plan?", 0.0, 6.0),
    Node("soft", "SOFT channel:<br>a tool result, is_error = true", -1.5, 4.9),
    Node("model", "the model reads the failure<br>and adapts", -1.5, 3.8),
    Node("next", "next turn", -1.5, 2.8),
    Node("watch", "safety systems watch the pattern:<br>loop, convergence, breakers, recovery", 0.3, 1.8),
    Node("ok", "the run continues:<br>soft error did its job", -2.7, 1.5),
    Node("hard2", "HARD channel:<br>the run ends", 0.3, 0.8),
    Node("hard", "HARD channel:<br>LoopError", 2.1, 4.6),
    Node("finalize", "finalize(): completed turns commit,<br>run recorded, error to your code", 1.5, -0.2),
)

EDGES: tuple[Edge, ...] = (
    Edge("failed-adapt", "failed", "adapt"),
    Edge("adapt-soft", "adapt", "soft", "yes"),
    Edge("soft-model", "soft", "model"),
    Edge("model-next", "model", "next"),
    Edge("next-watch", "next", "watch"),
    Edge("soft-watch", "soft", "watch", "recovery retried it to the ceiling"),
    Edge("next-ok", "next", "ok", "model recovered on its own"),
    Edge("watch-hard2", "watch", "hard2", "repeated past a threshold"),
    Edge("adapt-hard", "adapt", "hard", "no: nothing to adapt to"),
    Edge("hard-finalize", "hard", "finalize"),
    Edge("hard2-finalize", "hard2", "finalize"),
)

NODE_INDEX: dict[str, int] = {node.id: i for i, node in enumerate(NODES)}
EDGE_INDEX: dict[str, int] = {edge.id: i for i, edge in enumerate(EDGES)}

WATCH_STOPS: frozenset[str] = frozenset({"loop_detected", "user_input_required", "tool_recovery_exhausted"})
"""Hard producers born in a safety system (the model is not adapting): they end via ``hard2``."""

SELF_WATCHED: frozenset[str] = frozenset({"tool_recovery_exhausted"})
"""Safety stops whose failures are in the stopping turn itself (the call recovery retried up to
the ceiling): the failures were soft tool errors, but the model never read them, so that turn goes
from the soft channel straight to the watchers ("recovery retried it to the ceiling"), not through
"the model reads the failure" and "next turn", before the watchers end the run."""

_RECOVERED = ("next-ok",)
_SOFT = ("failed-adapt", "adapt-soft", "soft-model", "model-next", "next-watch")
_HARD = ("failed-adapt", "adapt-hard", "hard-finalize")
_WATCH_HARD = ("watch-hard2", "hard2-finalize")
_CEILING = ("failed-adapt", "adapt-soft", "soft-watch", *_WATCH_HARD)


def path_of(channel: str, producer: str | None, *, after_soft: bool = False) -> tuple[str, ...]:
    """The edges a turn lights, in order.

    An ``ok`` turn right after a soft one (``after_soft``) is "model recovered on its own"; any
    other ok turn lights nothing (nothing failed). A ``soft`` turn takes the soft branch up to the
    safety systems. A hard stop from a safety system (loop detector, convergence) goes
    watch -> hard2 -> finalize, and the recovery ceiling's turn reaches the watchers from the soft
    channel (its failed attempts were soft tool errors that recovery retried, none of them read by
    the model). Every other hard error
    (cancelled, context, fallback) is "no: nothing to adapt to" -> hard -> finalize.
    """
    if channel == "ok":
        return _RECOVERED if after_soft else ()
    if channel == "soft":
        return _SOFT
    if channel == "hard":
        if producer in SELF_WATCHED:
            return _CEILING
        return _WATCH_HARD if producer in WATCH_STOPS else _HARD
    raise ValueError(f"path_of: unknown channel {channel!r}; expected ok, soft or hard")


class FlowCount:
    """The chart's edge counts, one run's turns at a time: the counting rule of the whole view.

    ``turn(channel, producer)`` adds the path of a run's next finished turn and returns it;
    ``run_finished(outcome, producer)`` lights the hard path of a run that ended hard before any
    turn of it finished (and nothing otherwise); ``new_run()`` starts the next run, whose counts
    add to the same totals. ``counts`` follows ``EDGES``. What the counts mean, per run:

    - every soft turn lights failed -> adapt -> soft -> model -> next -> watch once (each goes
      on to a next turn, where the safety systems watch the pattern);
    - "model recovered on its own" counts the soft streaks (consecutive soft turns) that an ok
      turn follows directly; an ok turn after an ok turn lights nothing;
    - a run that ended hard adds one to watch -> hard2 -> finalize when a safety system stopped it
      (``WATCH_STOPS``), else to adapt -> hard -> finalize (and failed -> adapt); the turn that hit
      the recovery ceiling goes failed -> adapt -> soft -> watch ("recovery retried it to the
      ceiling") -> hard2, never through "the model reads" or "next turn", which it did not reach.

    What enters a box leaves it on the path of a turn that goes through it: soft -> (model | watch),
    watch -> hard2 for the stopping turn.
    """

    __slots__ = ("_hard", "_soft", "counts")

    def __init__(self) -> None:
        self.counts = [0] * len(EDGES)
        self._soft = False
        self._hard = False

    def new_run(self) -> None:
        self._soft = self._hard = False

    def turn(self, channel: str, producer: str | None) -> tuple[str, ...]:
        path = path_of(channel, producer, after_soft=self._soft)
        self._add(path)
        self._soft = channel == "soft"
        self._hard = self._hard or channel == "hard"
        return path

    def run_finished(self, outcome: str, producer: str | None) -> tuple[str, ...] | None:
        if outcome != "hard" or self._hard:
            return None
        self._hard = True
        path = path_of("hard", producer)
        self._add(path)
        return path

    def _add(self, path: tuple[str, ...]) -> None:
        counts = self.counts
        for edge_id in path:
            counts[EDGE_INDEX[edge_id]] += 1


def nodes_on(path: tuple[str, ...]) -> tuple[NodeId, ...]:
    """The nodes a path lights (each once, in order of appearance)."""
    seen: dict[NodeId, None] = {}
    for edge_id in path:
        edge = EDGES[EDGE_INDEX[edge_id]]
        seen.setdefault(edge.source)
        seen.setdefault(edge.target)
    return tuple(seen)
