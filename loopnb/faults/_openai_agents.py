"""``inject`` for an OpenAI Agents SDK agent: ``agent.clone(tools=...)`` with its tools wrapped.

Each named ``FunctionTool`` is copied with an ``on_invoke_tool`` that a fault decides first; the
original tool's own ``on_invoke_tool`` (its argument parsing, its failure handling) runs when the
fault does not fire. An injected ``error`` (and ``unavailable``, and ``hang`` once it has waited)
is what the SDK makes of a tool's ordinary failure: the model reads the text as the tool's output,
and the function span records a non-fatal error, as the SDK's own failure handling records it.
``crash`` raises its exception, which the SDK lets end the run; ``wrong``/``empty`` answer in the
tool's place. Each firing is logged with the SDK's tool call id (``injections``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Any

from loopnb.faults._plan import Injection, Schedule, outcome
from loopnb.faults._targets import Faults, by_tool, register_target, wait_async


def _is_agent(target: Any) -> bool:
    module = type(target).__module__ or ""
    return (
        module.startswith("agents") and callable(getattr(target, "clone", None)) and hasattr(target, "tools")
    )


def _arguments(raw: str) -> dict[str, Any]:
    """The call's arguments for ``when`` (nothing, when the model sent no JSON object)."""
    try:
        value = json.loads(raw) if raw else {}
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _record_error(name: str, text: str, label: str) -> None:
    """Mark the function span the SDK runs the tool in as its failure handling marks one."""
    from agents.tracing import SpanError, get_current_span

    span = get_current_span()
    if span is not None:
        data = {"tool_name": name, "error": text, "loopnb.injected": label}
        span.set_error(SpanError(message="Error running tool (non-fatal)", data=data))


def _wrap(agent: Any, faults: Faults, seed: int, clock: Any) -> Any:
    names = [t.name for t in agent.tools if hasattr(t, "on_invoke_tool")]
    plan = by_tool(faults, names, "an OpenAI Agents SDK agent")
    log: list[Injection] = []

    def wrapped(tool: Any, schedule: Schedule) -> Any:
        original = tool.on_invoke_tool

        async def invoke(ctx: Any, raw: str) -> Any:
            fault = schedule.decide(_arguments(raw), call_id=getattr(ctx, "tool_call_id", None))
            if fault is None:
                return await original(ctx, raw)
            then = outcome(fault)
            if then.then_run:
                await wait_async(then.wait, clock)
                return await original(ctx, raw)
            if then.wait:
                await asyncio.sleep(then.wait)
            if then.raises is not None:
                raise then.raises
            if then.error_text is not None:
                _record_error(tool.name, then.error_text, fault.label)
                return then.error_text
            return then.value

        return dataclasses.replace(tool, on_invoke_tool=invoke)

    tools = [
        wrapped(t, Schedule(t.name, plan[t.name], seed, log)) if t.name in plan else t for t in agent.tools
    ]
    clone = agent.clone(tools=tools)
    clone.injections = log  # the clone is the caller's: the original agent is left as it was
    return clone


register_target(_is_agent, _wrap)
