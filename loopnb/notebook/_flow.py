"""The spec's flowchart as data: its nodes, its edges, and the path each kind of turn takes.

The chart is the one in ``spec/soft-and-hard-errors.md``::

    failed -> adapt? -yes-> soft -> model -> next -> watch -repeated-> hard2 -> finalize
                     -no--> hard ---------------------------------------------^
                                            next -recovered-> ok

A turn lights one path, chosen by its channel and producer alone (``path_of``), so a recording
lights exactly what the live run lit.
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

_OK = ("next-ok",)
_SOFT = ("failed-adapt", "adapt-soft", "soft-model", "model-next", "next-watch")
_HARD = ("failed-adapt", "adapt-hard", "hard-finalize")
_WATCH_HARD = ("watch-hard2", "hard2-finalize")


def path_of(channel: str, producer: str | None) -> tuple[str, ...]:
    """The edges a turn lights, in order.

    ``ok`` turns take "model recovered on its own"; ``soft`` turns the soft branch up to the safety
    systems; a hard stop from a safety system (loop detector, convergence, the recovery ceiling)
    goes watch -> hard2 -> finalize; every other hard error (cancelled, context, fallback) is
    "no: nothing to adapt to" -> hard -> finalize.
    """
    if channel == "ok":
        return _OK
    if channel == "soft":
        return _SOFT
    if channel == "hard":
        return _WATCH_HARD if producer in WATCH_STOPS else _HARD
    raise ValueError(f"path_of: unknown channel {channel!r}; expected ok, soft or hard")


def nodes_on(path: tuple[str, ...]) -> tuple[NodeId, ...]:
    """The nodes a path lights (each once, in order of appearance)."""
    seen: dict[NodeId, None] = {}
    for edge_id in path:
        edge = EDGES[EDGE_INDEX[edge_id]]
        seen.setdefault(edge.source)
        seen.setdefault(edge.target)
    return tuple(seen)
