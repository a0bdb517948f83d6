"""Injecting into loopnb's own tools: a ``Tool``, or a list of tools an ``Engine`` takes.

An injected tool is a copy of the tool whose ``stand_in`` asks the plan, at each call, what runs in
its place (``loopnb.engine._tools.StandIn``): the dispatcher acts the fault out as it would the
tool itself. An ``error`` is the tool's soft error with its text, a ``crash`` a panic, a ``hang``
waits on the run's clock until the engine's timeout fires (with none, it fails after its seconds
as a ``TimeoutError`` would), ``wrong``/``empty`` a plausible result, ``slow`` the real call, late.
Each result it made is marked ``injected`` with the fault's label, in the events and the frames.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

from loopnb.engine import Clock, Tool
from loopnb.engine._tools import StandIn, StandInFor
from loopnb.faults._callables import TOOL_KINDS, name_of
from loopnb.faults._fault import Fault
from loopnb.faults._perform import failure
from loopnb.faults._plan import FaultPlan, Injection


def stand_in_of(fault: Fault) -> StandIn:
    """What runs in a tool's place when ``fault`` fires."""
    if fault.kind == "slow":
        return StandIn(fault.label, None, fault.seconds)

    def act(**arguments: Any) -> Any:
        exc = failure(fault)
        if exc is not None:
            raise exc
        return fault.value

    return StandIn(fault.label, act, fault.seconds)


class Faulted:
    """A tool's ``stand_in``: asks the plan about each call; ``injections`` is the plan's log.

    A tool injected twice asks the later plan first, then the earlier one.
    """

    __slots__ = ("_decide", "_earlier", "_stand_in", "injections", "plan", "tool")

    def __init__(self, plan: FaultPlan, tool: str, earlier: StandInFor | None) -> None:
        self.plan = plan
        self.tool = tool
        self.injections: list[Injection] = plan.injections
        fault = plan.faults[tool]
        self._stand_in = stand_in_of(fault)
        self._decide = plan.decide
        self._earlier = earlier

    def __call__(self, arguments: dict[str, Any], call_id: str, run_id: str) -> StandIn | None:
        if self._decide(self.tool, arguments, run=run_id, call_id=call_id) is not None:
            return self._stand_in
        earlier = self._earlier
        return earlier(arguments, call_id, run_id) if earlier is not None else None

    def __repr__(self) -> str:
        return f"<faults on {self.tool!r}: {self.plan.faults[self.tool].label}>"


def injected_tool(tool: Tool, plan: FaultPlan) -> Tool:
    """A copy of ``tool`` whose calls ask ``plan`` (``tool`` itself when the plan has no fault for it)."""
    if tool.name not in plan.faults:
        return tool
    faulted = copy.copy(tool)
    faulted.stand_in = Faulted(plan, tool.name, tool.stand_in)
    return faulted


class Tools:
    """``inject``'s target: one loopnb ``Tool``."""

    name = "a loopnb Tool"
    kinds = TOOL_KINDS
    single = False

    def accepts(self, target: object) -> bool:
        return isinstance(target, Tool)

    def tools(self, target: Tool) -> list[str]:
        return [target.name]

    def wrap(self, target: Tool, plan: FaultPlan, *, clock: Clock | None) -> Tool:
        return injected_tool(target, plan)


class ToolList(list[Tool | Callable[..., Any]]):
    """The tools ``inject`` returns for a list: a list, with ``injections``, the plan's log."""

    injections: list[Injection]


class ToolLists:
    """``inject``'s target: a list (or tuple) of tools, as an ``Engine`` takes them (functions too)."""

    name = "a list of tools"
    kinds = TOOL_KINDS
    single = False

    def accepts(self, target: object) -> bool:
        return isinstance(target, list | tuple) and all(
            isinstance(t, Tool) or (callable(t) and not isinstance(t, type)) for t in target
        )

    def tools(self, target: Sequence[Tool | Callable[..., Any]]) -> list[str]:
        return [_name(t) for t in target]

    def wrap(
        self, target: Sequence[Tool | Callable[..., Any]], plan: FaultPlan, *, clock: Clock | None
    ) -> Any:
        wrapped = ToolList(_item(t, plan) for t in target)
        wrapped.injections = plan.injections
        return tuple(wrapped) if isinstance(target, tuple) else wrapped


def _name(item: Tool | Callable[..., Any]) -> str:
    return item.name if isinstance(item, Tool) else name_of(item)


def _item(item: Tool | Callable[..., Any], plan: FaultPlan) -> Tool | Callable[..., Any]:
    """A tool of the list, injected when the plan has a fault for it (a function is made a ``Tool``
    first, as the engine would make it)."""
    if _name(item) not in plan.faults:
        return item
    return injected_tool(item if isinstance(item, Tool) else Tool(item), plan)
