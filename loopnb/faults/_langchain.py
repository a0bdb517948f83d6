"""``inject`` for a list of LangChain tools (what a LangGraph ``ToolNode`` or agent is given).

Each named tool becomes a new ``StructuredTool`` with the same name, description and argument
schema, whose call a fault decides first; the original tool is called (``invoke``) when the fault
does not fire. An injected ``error`` (and ``unavailable``, and ``hang`` once it has waited) is a
``ToolException``, LangChain's ordinary tool error, shown to the model as the tool's error message
(``handle_tool_error``); the tool's own errors are handled as its own ``handle_tool_error`` says.
``crash`` raises its exception; ``wrong``/``empty`` answer in the tool's place. LangChain does not
hand a tool function its call id, so ``injections`` log the tool and the call's number.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from loopnb.faults._plan import Injection, Schedule, outcome
from loopnb.faults._targets import Faults, by_tool, register_target, wait, wait_async


def _is_tool_list(target: Any) -> bool:
    if not isinstance(target, (list, tuple)) or not target:
        return False
    return all((type(t).__module__ or "").startswith(("langchain", "langgraph")) for t in target)


class InjectedToolError(Exception):
    """The error an injected fault raised, told apart from the tool's own (see ``_handler``)."""


def _handler(original: Any) -> Any:
    """``handle_tool_error`` for the wrapper: an injected error is always shown to the model; the
    tool's own error as the original tool would handle it."""

    def handle(exc: Exception) -> str:
        if exc.args and isinstance(exc.args[0], InjectedToolError):
            return str(exc.args[0])
        rule = original.handle_tool_error
        if rule is True:
            return str(exc.args[0]) if exc.args else "Tool execution error"
        if isinstance(rule, str):
            return rule
        if callable(rule):
            return str(rule(exc))
        raise exc

    return handle


class InjectedTools(list[Any]):
    """The tool list with faults in its named tools; ``injections`` logs each firing."""

    injections: list[Injection]


def _wrap(tools: Any, faults: Faults, seed: int, clock: Any) -> Any:
    from langchain_core.tools import StructuredTool, ToolException

    names = [t.name for t in tools]
    plan = by_tool(faults, names, "LangChain tools")
    log: list[Injection] = []

    def wrapped(original: Any, schedule: Schedule) -> Any:
        def decide(kwargs: dict[str, Any]) -> Any:
            fault = schedule.decide(kwargs)
            return None if fault is None else outcome(fault)

        def failed(then: Any) -> Any:
            if then.raises is not None:
                raise then.raises
            if then.error_text is not None:
                raise ToolException(InjectedToolError(then.error_text))
            return then.value

        def run(**kwargs: Any) -> Any:
            then = decide(kwargs)
            if then is not None and then.then_run:
                wait(then.wait, clock)
            elif then is not None:
                time.sleep(then.wait) if then.wait else None
                return failed(then)
            return original.invoke(kwargs)

        async def arun(**kwargs: Any) -> Any:
            then = decide(kwargs)
            if then is not None and then.then_run:
                await wait_async(then.wait, clock)
            elif then is not None:
                if then.wait:
                    await asyncio.sleep(then.wait)
                return failed(then)
            return await original.ainvoke(kwargs)

        return StructuredTool.from_function(
            func=run,
            coroutine=arun,
            name=original.name,
            description=original.description,
            args_schema=original.args_schema,
            handle_tool_error=_handler(original),
        )

    out = InjectedTools(
        wrapped(t, Schedule(t.name, plan[t.name], seed, log)) if t.name in plan else t for t in tools
    )
    out.injections = log
    return out


register_target(_is_tool_list, _wrap)
