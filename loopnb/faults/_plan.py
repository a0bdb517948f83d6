"""Deciding, call by call, whether a fault fires, and what firing does to a tool call.

A ``Schedule`` holds one fault's state for one tool of one wrapped target: how many calls it has
seen and its random generator. ``decide`` is the one per-call decision every target shares
(loopnb's tools and models, plain callables, other frameworks' tools): it answers the fault that
fires for this call, or ``None``, and logs each firing as an ``Injection``. ``outcome`` says what a
fired fault does in words every wrapper can act on.
"""

from __future__ import annotations

import hashlib
import random
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from loopnb.faults._fault import DEFAULT_ERROR, Fault


@dataclass(frozen=True, slots=True)
class Injection:
    """One call a fault fired on: which tool, the call's number among that tool's calls (from 1),
    its id where the framework gives one, and the fault's label."""

    tool: str
    call: int
    label: str
    call_id: str | None = None


class Schedule:
    """One fault's state for one tool: calls seen, calls it fired on, and its seeded generator.

    The generator is seeded from ``inject``'s seed and the tool's name (a stable hash, not
    Python's salted ``hash``), so ``sometimes(p)`` fails the same calls on every run with that seed.
    """

    __slots__ = ("_lock", "calls", "fault", "fired", "label", "log", "rng", "tool")

    def __init__(self, tool: str, fault: Fault, seed: int, log: list[Injection]) -> None:
        self.tool = tool
        self.fault = fault
        self.label = fault.label
        self.calls = 0
        self.fired = 0
        self.log = log
        digest = hashlib.blake2b(f"{seed}:{tool}".encode(), digest_size=8).digest()
        self.rng = random.Random(int.from_bytes(digest, "big"))
        self._lock = threading.Lock()  # tools may run on threads at once (timeouts)

    def decide(self, arguments: Mapping[str, Any], call_id: str | None = None) -> Fault | None:
        """The fault if it fires on this call (logged), else ``None``: the call runs as it is."""
        fault = self.fault
        if fault.where and not fault.applies(arguments):
            return None
        with self._lock:
            self.calls += 1
            if fault.first_k is not None:
                fires = self.calls <= fault.first_k
            elif fault.chance is not None:
                fires = self.rng.random() < fault.chance
            else:
                fires = True
            if fires:
                self.fired += 1
                self.log.append(Injection(self.tool, self.calls, self.label, call_id))
        return fault if fires else None


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a fired fault does to a call, for a wrapper to carry out.

    ``error_text``: a soft error to raise, in the framework's own kind of tool error (``error``,
    ``unavailable``, and ``hang`` once it has waited); ``raises``: an exception to raise (``crash``);
    ``returns``: the value to answer with (``has_value``); ``wait``: seconds to wait first;
    ``then_run``: after waiting, run the real call (``slow``).
    """

    error_text: str | None = None
    raises: BaseException | None = None
    has_value: bool = False
    value: Any = None
    wait: float = 0.0
    then_run: bool = False


def outcome(fault: Fault) -> Outcome:
    """What ``fault`` does to a tool call when it fires."""
    kind, args = fault.kind, fault.arguments
    if kind == "error":
        return Outcome(error_text=args[0] if args else DEFAULT_ERROR)
    if kind == "unavailable":
        status = args[0]
        after = f"; retry after {args[1]:g} s" if len(args) > 1 else ""
        return Outcome(error_text=f"the service is unavailable (HTTP {status}){after}")
    if kind == "crash":
        return Outcome(raises=args[0])
    if kind == "hang":  # outlasts a timeout; with none, it fails once it has waited
        return Outcome(wait=args[0], error_text=f"the tool did not answer for {args[0]:g} s")
    if kind == "slow":
        return Outcome(wait=args[0], then_run=True)
    if kind == "wrong":
        return Outcome(has_value=True, value=args[0])
    return Outcome(has_value=True, value="")  # empty
