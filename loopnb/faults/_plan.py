"""``FaultPlan``: the one per-call decision of an injection, and the log of what it injected.

Every wrapper ``inject`` makes, and any wrapper of another framework's tools, asks the plan once
per call: ``plan.decide(tool, arguments, run=..., call_id=...)`` returns the ``Fault`` that fires
on this call, or ``None`` for the real call. A fired fault is logged as an ``Injection``.

Schedules count calls per run and per tool (``.first(2)``: the first two calls of each run), only
calls that match the fault's ``.when``. ``.sometimes(p)`` draws from a generator seeded by the
plan's seed and the tool's name, fresh for each run: the same seed fails the same calls of a run.
A wrapper with no runs to tell apart (a plain function) counts all its calls as one run's.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from loopnb.faults._fault import Fault
from loopnb.faults._label import parse

_RUNS_KEPT = 1024
"""Per-run counts kept for the latest runs (a long-lived plan forgets older ones)."""


@dataclass(frozen=True, slots=True)
class Injection:
    """One fault that fired: on which call of which tool, as which label."""

    call_id: str
    """The call's id (``""`` when the caller has none: a plain function)."""
    tool: str
    """The tool (or model) the fault fired on."""
    label: str
    """The fault's label, e.g. ``error("disk busy").first(2)``."""
    run_id: str = ""
    """The run the call belonged to (``""`` when the caller has none)."""


class _Count:
    """One tool's matching calls so far in one run, and its draws for ``sometimes``."""

    __slots__ = ("n", "rng")

    def __init__(self, seed: int, tool: str) -> None:
        self.n = 0
        self.rng = random.Random(f"loopnb.faults:{seed}:{tool}")  # a str seed: the same in every process


def faults_of(faults: Mapping[str, Fault | str], where: str = "inject") -> dict[str, Fault]:
    """``faults`` with each label parsed (``{"read_file": 'error("x").first(2)'}``), checked."""
    if not isinstance(faults, Mapping):
        raise TypeError(
            f"{where}: faults must be a mapping {{tool name: fault}}, got {type(faults).__name__}"
        )
    out: dict[str, Fault] = {}
    for name, fault in faults.items():
        if not isinstance(name, str):
            raise TypeError(f"{where}: a key of faults must be a tool's name, got {name!r:.60}")
        out[name] = fault_of(fault, f"{where}: faults[{name!r}]")
    return out


def fault_of(fault: Fault | str, where: str) -> Fault:
    """A ``Fault``, or a label parsed into one."""
    if isinstance(fault, Fault):
        return fault
    if isinstance(fault, str):
        return parse(fault)
    raise TypeError(f"{where} must be a Fault (faults.error(...), ...) or its label, got {fault!r:.60}")


class FaultPlan:
    """Which calls of which tools fail, and how: the faults by tool name, the seed, and the log.

    Args:
        faults: tool (or model) name -> ``Fault`` or its label.
        seed: seeds ``.sometimes``; the same seed fails the same calls.
    """

    def __init__(self, faults: Mapping[str, Fault | str], *, seed: int = 0) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"inject: seed must be an int, got {seed!r:.60}")
        self.faults: dict[str, Fault] = faults_of(faults)
        self.seed = seed
        self.injections: list[Injection] = []
        """Every fault that fired, in order."""
        self._counts: dict[tuple[str, str], _Count] = {}

    def decide(
        self, tool: str, arguments: Mapping[str, Any] | None = None, *, run: str = "", call_id: str = ""
    ) -> Fault | None:
        """The fault that fires on this call of ``tool`` (logged), or ``None``: make the real call.

        ``arguments`` are the call's (checked against ``.when``); ``run`` tells runs apart for the
        schedules' counts; ``call_id`` is what the log keeps of the call.
        """
        fault = self.faults.get(tool)
        if fault is None:
            return None
        if fault.match and not _matches(fault.match, arguments):
            return None
        if fault.every != "always":
            count = self._count(run, tool)
            count.n += 1
            if fault.every == "first":
                if count.n > fault.times:
                    return None
            elif count.rng.random() >= fault.chance:
                return None
        self.injections.append(Injection(call_id, tool, fault.label, run))
        return fault

    def _count(self, run: str, tool: str) -> _Count:
        key = (run, tool)
        count = self._counts.get(key)
        if count is None:
            if len(self._counts) >= _RUNS_KEPT:
                del self._counts[next(iter(self._counts))]
            count = self._counts[key] = _Count(self.seed, tool)
        return count

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={fault.label}" for name, fault in self.faults.items())
        return f"FaultPlan({shown}; seed={self.seed}, {len(self.injections)} injected)"


_MISSING = object()


def _matches(match: tuple[tuple[str, Any], ...], arguments: Mapping[str, Any] | None) -> bool:
    """Whether the call's arguments hold each of ``match`` (an argument whose ``==`` raises: no)."""
    if arguments is None:
        return False
    get = arguments.get
    try:
        for name, value in match:
            if get(name, _MISSING) != value:
                return False
    except Exception:
        return False
    return True
