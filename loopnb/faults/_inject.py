"""``inject``: any target wrapped so that its calls fail as planned, found through a registry.

Each kind of target is one ``Target`` object: which objects it ``accepts``, the ``tools`` a fault
may name, the fault ``kinds`` it takes, and how it ``wrap``s a target around a ``FaultPlan``. They
are asked in order, the first that accepts wins: those added by ``register_target`` first (newest
first), then loopnb's own: a loopnb ``Tool``, a model, a list of tools, a plain function. A module
for another framework's agents registers one ``Target`` and nothing else changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from loopnb.engine import Clock
from loopnb.engine._texts import suggest_name
from loopnb.faults._fault import Fault, FaultKind
from loopnb.faults._plan import FaultPlan, fault_of, faults_of


@runtime_checkable
class Target(Protocol):
    """How ``inject`` wraps one kind of target.

    ``name`` says what it wraps, in words (``"a loopnb Tool"``); ``kinds`` the faults it takes;
    ``single`` is True for a target given one fault, not a mapping (a model).
    """

    name: str
    kinds: frozenset[FaultKind]
    single: bool

    def accepts(self, target: object) -> bool:
        """Whether this is the target's kind."""
        ...

    def tools(self, target: Any) -> list[str]:
        """The names a fault may be keyed by (a model's: its one name)."""
        ...

    def wrap(self, target: Any, plan: FaultPlan, *, clock: Clock | None) -> Any:
        """A new object used like ``target`` whose calls ask ``plan``; ``target`` is left as it is."""
        ...


_REGISTERED: list[Target] = []
_OWN: list[Target] = []


def register_target(target: Target) -> None:
    """Add a kind of target to ``inject``: asked before every one added earlier and loopnb's own."""
    missing = [m for m in ("name", "kinds", "single", "accepts", "tools", "wrap") if not hasattr(target, m)]
    if missing:
        raise TypeError(f"register_target: {target!r:.60} is not a Target: it lacks {', '.join(missing)}")
    _REGISTERED.insert(0, target)


def own_targets(*targets: Target) -> None:
    """loopnb's own kinds of target, asked in this order after the registered ones."""
    _OWN[:] = targets


def targets() -> list[Target]:
    """Every kind of target, in the order ``inject`` asks them."""
    return [*_REGISTERED, *_OWN]


def inject(
    target: Any, faults: Mapping[str, Fault | str] | Fault | str, seed: int = 0, *, clock: Clock | None = None
) -> Any:
    """``target`` wrapped so that its calls fail as ``faults`` say; the original is left as it is.

    Args:
        target: a loopnb ``Tool``, a list of tools, a model, or a plain function (and, once their
            modules are registered, other frameworks' agents and tools).
        faults: ``{tool name: fault}`` (a ``Fault`` or its label, ``'error("x").first(2)'``); one
            fault for a model, or for a target with one tool.
        seed: seeds ``.sometimes``: the same seed fails the same calls.
        clock: what a model's or a plain function's waits (``hang``, ``slow``) wait on (a
            ``FakeClock``: no real time); a tool in an engine waits on the engine's own clock.

    Returns:
        An object used like ``target``: a ``Tool`` for a ``Tool``, a list for a list, a model for a
        model, a function with the same signature for a function.

    Raises:
        ValueError: a key names no tool of the target (the error lists those it has), or a fault
            does not apply to the target.
        TypeError: the target is of no kind ``inject`` knows, or ``faults`` is not one it takes.
        FaultSyntaxError: a label that cannot be read.
    """
    kind = next((t for t in targets() if t.accepts(target)), None)
    if kind is None:
        kinds = "; ".join(t.name for t in targets())
        raise TypeError(f"inject: cannot inject faults into {type(target).__name__}; it takes {kinds}")
    names = kind.tools(target)
    plan = FaultPlan(_keyed(kind, names, faults), seed=seed)
    for name, fault in plan.faults.items():
        _check(kind, name, fault)
    return kind.wrap(target, plan, clock=clock)


def _keyed(
    kind: Target, names: list[str], faults: Mapping[str, Fault | str] | Fault | str
) -> dict[str, Fault]:
    """The faults by tool name, every name one of ``names``."""
    if isinstance(faults, Fault | str):
        if not names:
            raise ValueError(f"inject: {kind.name} has no tools to inject into")
        if len(names) > 1:
            raise TypeError(
                f"inject: {kind.name} has tools {', '.join(names)}; name the one each fault is for: "
                f"{{{names[0]!r}: fault}}"
            )
        return {names[0]: fault_of(faults, "inject: the fault")}
    if kind.single:
        raise TypeError(f"inject: {kind.name} takes one fault (faults.unavailable(), ...), not a mapping")
    keyed = faults_of(faults)
    for name in keyed:
        if name not in names:
            listed = ", ".join(names) if names else "none"
            best = suggest_name(name, names)
            hint = f"; did you mean {best!r}?" if best is not None else ""
            raise ValueError(f"inject: {kind.name} has no tool named {name!r}; its tools are {listed}{hint}")
    return keyed


def _check(kind: Target, name: str, fault: Fault) -> None:
    if fault.kind not in kind.kinds:
        takes = ", ".join(sorted(kind.kinds))
        hint = " (unavailable is a model's fault)" if fault.kind == "unavailable" else ""
        raise ValueError(f"inject: {fault.kind}() does not apply to {kind.name}{hint}; it takes {takes}")
    if kind.single and fault.match:
        raise ValueError(
            f"inject: {fault.label} has .when(...), but {kind.name} {name!r} has no arguments to match"
        )
