"""``inject`` for a pydantic-ai agent: its tools fail the way pydantic-ai's own tools do.

The wrapped agent is a ``WrapperAgent``: every run (``run``, ``run_sync``, ``iter``, streaming)
goes through ``iter``, which runs the original agent under ``override(tools=[],
toolsets=...)`` with each of its toolsets wrapped, so a fault decides before the real tool is
called. Public API only: the original agent is never changed, and outside a run of the wrapper
it behaves as before. An injected ``error`` (and ``unavailable``, and ``hang`` once it has
waited) is ``ModelRetry``: pydantic-ai's ordinary tool error, counted against the agent's own
``retries`` like any other. ``crash`` raises its exception, ``wrong``/``empty`` answer in the
tool's place. Each firing is logged with pydantic-ai's tool call id (``injections``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from loopnb.faults._plan import Injection, Schedule, outcome
from loopnb.faults._targets import Faults, by_tool, register_target, wait_async


def _is_agent(target: Any) -> bool:
    module = type(target).__module__ or ""
    return module.startswith("pydantic_ai") and hasattr(target, "toolsets") and hasattr(target, "iter")


def _tool_names(agent: Any) -> list[str]:
    """The names of the agent's function tools (toolsets that list theirs up front)."""
    names: list[str] = []
    for toolset in agent.toolsets:
        names.extend(getattr(toolset, "tools", {}))
    return names


def _mark_span(label: str) -> None:
    """Put the fault's label on the span pydantic-ai runs the tool in (``loopnb.injected``), where
    the run is traced: ``watch()`` and ``from_otel`` read it back as the call's ``injected``."""
    try:
        from opentelemetry import trace
    except ImportError:  # no tracing installed: the wrapper's injections still log it
        return
    span = trace.get_current_span()
    if span.is_recording():
        span.set_attribute(INJECTED, label)


def _wrap(agent: Any, faults: Faults, seed: int, clock: Any) -> Any:
    from pydantic_ai import ModelRetry
    from pydantic_ai.agent import WrapperAgent
    from pydantic_ai.toolsets import WrapperToolset

    log: list[Injection] = []
    plan = by_tool(faults, _tool_names(agent), "a pydantic-ai agent")
    schedules = {name: Schedule(name, fault, seed, log) for name, fault in plan.items()}

    @dataclass
    class FaultyToolset(WrapperToolset[Any]):
        """One of the agent's toolsets, its calls decided by the faults first."""

        faults: dict[str, Schedule] = field(default_factory=dict)

        async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: Any, tool: Any) -> Any:
            schedule = self.faults.get(name)
            fault = None if schedule is None else schedule.decide(tool_args, call_id=ctx.tool_call_id)
            if fault is None:
                return await super().call_tool(name, tool_args, ctx, tool)
            _mark_span(fault.label)
            then = outcome(fault)
            if then.then_run:
                await wait_async(then.wait, clock)
                return await super().call_tool(name, tool_args, ctx, tool)
            if then.wait:
                await asyncio.sleep(then.wait)
            if then.raises is not None:
                raise then.raises
            if then.error_text is not None:
                raise ModelRetry(then.error_text)
            return then.value

    class InjectedAgent(WrapperAgent[Any, Any]):
        """The agent with faults in its tools; run it as the original (``injections`` logs them)."""

        injections = log

        @asynccontextmanager
        async def iter(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            toolsets = [FaultyToolset(t, faults=schedules) for t in self.wrapped.toolsets]
            with self.wrapped.override(tools=[], toolsets=toolsets):
                async with self.wrapped.iter(*args, **kwargs) as run:
                    yield run

    return InjectedAgent(agent)


INJECTED = "loopnb.injected"
"""The tool span attribute the OTLP reader reads a call's injected fault from (its profile's name)."""

register_target(_is_agent, _wrap)
