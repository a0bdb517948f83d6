"""``inject``: a target wrapped so that its tools (or its model) fail as the faults say.

Targets are tried in order against a list of adapters, each a test and a wrapper: loopnb's own
(a ``Tool``, a list of tools, a ``Model``, a plain callable) here, other frameworks' in a module
each (``register_target``), found without importing those frameworks. Nothing here changes the
target it is given: every wrapper is a new object that calls the original.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import functools
import inspect
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from loopnb.engine import Model, ModelUnavailable, Tool, ToolError
from loopnb.engine._messages import ModelReply, ToolSpec, Transcript
from loopnb.engine._tools import FaultMark
from loopnb.faults._fault import Fault, parse
from loopnb.faults._plan import Injection, Schedule, outcome

Faults = Mapping[str, "Fault | str"] | Fault | str
Wrap = Callable[[Any, Faults, int, Any], Any]
_ADAPTERS: list[tuple[Callable[[Any], bool], Wrap]] = []


class NoSuchTool(KeyError):
    """A fault keyed by a name that is no tool of the target (says which tools it has)."""

    def __str__(self) -> str:  # KeyError's own quotes the message
        return str(self.args[0]) if self.args else ""


def register_target(test: Callable[[Any], bool], wrap: Wrap) -> None:
    """Teach ``inject`` a kind of target: ``test(target)`` says it is one, ``wrap(target, faults,
    seed, clock)`` returns the wrapped copy. Later registrations are tried first."""
    _ADAPTERS.insert(0, (test, wrap))


def inject(target: Any, faults: Faults, seed: int = 0, *, clock: Any = None) -> Any:
    """``target`` with faults injected, used the same way; ``target`` itself is left unchanged.

    Args:
        target: a loopnb ``Tool``, a list of tools (``Tool`` objects or typed functions), a loopnb
            ``Model``, a plain callable, or another framework's agent or tool list
            (pydantic-ai, the OpenAI Agents SDK, LangChain/LangGraph).
        faults: ``{tool_name: fault}`` for tools and agents (a fault or its label:
            ``"error('disk busy').first(2)"``); one fault for a model or a single tool.
        seed: fixes which calls ``sometimes(p)`` fails, per tool.
        clock: a ``FakeClock`` makes ``slow`` and ``hang`` advance it instead of sleeping, where
            nothing else waits for them (a model, a plain function); a tool in an engine waits on
            the engine's clock, under its timeout.

    Every fault that fires is marked where the run is recorded: a loopnb run's turns frame says
    its label in ``injected``; a wrapped target's ``injections`` lists each firing.
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"inject(seed=...): expected a whole number, got {type(seed).__name__}")
    for test, wrap in _ADAPTERS:
        if test(target):
            return wrap(target, faults, seed, clock)
    raise TypeError(
        f"inject: cannot wrap {type(target).__name__}; expected a loopnb Tool or Model, a list of "
        "tools, a plain function, or a pydantic-ai agent, an OpenAI Agents SDK agent or a list of "
        "LangChain tools"
    )


def as_fault(value: Fault | str, where: str) -> Fault:
    """A fault given as itself or as its label (parsed, never evaluated)."""
    if isinstance(value, Fault):
        return value
    if isinstance(value, str):
        return parse(value)
    raise TypeError(
        f"{where}: expected a fault (loopnb.faults.error(...)) or its label, got {type(value).__name__}"
    )


def by_tool(faults: Faults, names: Sequence[str], what: str) -> dict[str, Fault]:
    """``faults`` as ``{tool: Fault}``, every key a tool of the target (else a clear error)."""
    if isinstance(faults, (Fault, str)):
        if len(names) == 1:
            return {names[0]: as_fault(faults, f"inject({what})")}
        raise TypeError(
            f"inject({what}): say which tool each fault is for, as {{tool_name: fault}}; its tools: "
            f"{', '.join(names) or 'none'}"
        )
    if not isinstance(faults, Mapping) or not faults:
        raise TypeError(f"inject({what}): expected {{tool_name: fault, ...}}, got {faults!r}")
    for name in faults:
        if name not in names:
            close = difflib.get_close_matches(str(name), names, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise NoSuchTool(f"inject({what}): no tool is named {name!r}{hint} Its tools: {', '.join(names)}")
    return {name: as_fault(f, f"inject({what})[{name!r}]") for name, f in faults.items()}


def wait(seconds: float, clock: Any) -> None:
    """Sleep, or move a fake clock on (``advance``) when one is given."""
    if clock is not None and callable(getattr(clock, "advance", None)):
        clock.advance(seconds)
    elif seconds > 0:
        time.sleep(seconds)


async def wait_async(seconds: float, clock: Any) -> None:
    if clock is not None and callable(getattr(clock, "advance", None)):
        clock.advance(seconds)
    elif seconds > 0:
        await asyncio.sleep(seconds)


def fire(schedule: Schedule, arguments: Mapping[str, Any], mark: FaultMark | None) -> Any:
    """The fired fault's outcome for a loopnb call (``None``: run the call as it is)."""
    fault = schedule.decide(arguments)
    if fault is None:
        return None
    if mark is not None:
        mark.label = schedule.label
    return outcome(fault)


def calling(
    fn: Callable[..., Any],
    schedule: Schedule,
    mark: FaultMark | None,
    clock: Any,
    is_async: bool | None = None,
) -> Callable[..., Any]:
    """``fn`` with ``schedule``'s fault, as a function of the same kind (sync or async; ``is_async``
    says which when the caller knows, as a tool does: the engine asks for one each attempt)."""
    if inspect.iscoroutinefunction(fn) if is_async is None else is_async:

        async def injected_async(**kwargs: Any) -> Any:
            then = fire(schedule, kwargs, mark)
            if then is None:
                return await fn(**kwargs)
            if mark is not None:  # in an engine: it waits on the run's clock, under its timeout
                mark.wait = then.wait
            elif then.wait:
                await wait_async(then.wait, clock)
            return await fn(**kwargs) if then.then_run else _carry_out(then)

        injected_async.__name__ = getattr(fn, "__name__", schedule.tool)
        return injected_async

    def injected(**kwargs: Any) -> Any:
        then = fire(schedule, kwargs, mark)
        if then is None:
            return fn(**kwargs)
        if mark is not None:  # in an engine: it waits on the run's clock, under its timeout
            mark.wait = then.wait
        elif then.wait:
            wait(then.wait, clock)
        return fn(**kwargs) if then.then_run else _carry_out(then)

    injected.__name__ = getattr(fn, "__name__", schedule.tool)
    return injected


def _carry_out(then: Any) -> Any:
    """Fail the call, or answer in place of the tool, as the fired fault says."""
    if then.raises is not None:
        raise then.raises
    if then.error_text is not None:
        raise ToolError(then.error_text)
    return then.value


class InjectedTool(Tool):
    """A ``Tool`` whose calls go through a fault's schedule; the engine records each firing."""

    __slots__ = ("_clock", "original", "schedule")

    marks_faults = True

    def __init__(self, original: Tool, schedule: Schedule, clock: Any) -> None:
        for slot in ("_simple", "args_model", "description", "is_async", "name", "spec"):
            object.__setattr__(self, slot, getattr(original, slot))
        self.original, self.schedule, self._clock = original, schedule, clock
        self.fn = calling(original.fn, schedule, None, clock)

    def marked(self, mark: FaultMark) -> Callable[..., Any]:
        return calling(self.original.fn, self.schedule, mark, self._clock, self.is_async)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call it directly, as the tool is called (the fault decides here too)."""
        return self.fn(**_bound(inspect.signature(self.original.fn), args, kwargs))

    @property
    def injections(self) -> list[Injection]:
        """Every call the fault fired on, in order."""
        return self.schedule.log

    def __repr__(self) -> str:
        return f"<Tool {self.name!r} injected with {self.schedule.label}>"


class InjectedModel:
    """A loopnb ``Model`` that fails as its fault says; otherwise the original answers."""

    def __init__(self, original: Model, schedule: Schedule, clock: Any) -> None:
        self.original, self.schedule, self._clock = original, schedule, clock
        self.name = original.name

    @property
    def injections(self) -> list[Injection]:
        return self.schedule.log

    async def complete(self, messages: Transcript, tools: Sequence[ToolSpec]) -> ModelReply:
        fault = self.schedule.decide({})
        if fault is None:
            return await self.original.complete(messages, tools)
        then, label = outcome(fault), self.schedule.label
        await wait_async(then.wait, self._clock)  # a hang or a slow request, on inject's clock if given
        if then.then_run:
            return await self.original.complete(messages, tools)
        exc: BaseException
        if fault.kind == "unavailable":
            args = fault.arguments
            retry_after = args[1] if len(args) > 1 else None
            exc = ModelUnavailable(then.error_text or "", status=args[0], retry_after=retry_after)
        elif then.raises is not None:
            exc = then.raises
        else:
            exc = ModelUnavailable(then.error_text or "")
        with contextlib.suppress(AttributeError, TypeError):  # an exception that takes no attributes
            setattr(exc, "loopnb_injected", label)  # noqa: B010  (the fallback chain reads it)
        raise exc

    def __getattr__(self, name: str) -> Any:  # the original's other attributes (its context window...)
        return getattr(self.original, name)

    def __repr__(self) -> str:
        return f"<Model {self.name!r} injected with {self.schedule.label}>"


def _tool_name(item: Any) -> str:
    return item.name if isinstance(item, Tool) else str(getattr(item, "__name__", ""))


def _wrap_tools(target: Any, faults: Faults, seed: int, clock: Any) -> Any:
    if isinstance(target, Tool):
        return _wrap_tools([target], faults, seed, clock)[0]
    items = list(target)
    names = [_tool_name(t) for t in items]
    plan = by_tool(faults, names, "tools")
    log: list[Injection] = []
    out = []
    for item, name in zip(items, names, strict=True):
        if name in plan:
            tool = item if isinstance(item, Tool) else Tool(item)
            out.append(InjectedTool(tool, Schedule(name, plan[name], seed, log), clock))
        else:
            out.append(item)
    return out


def _wrap_model(target: Any, faults: Faults, seed: int, clock: Any) -> Any:
    fault = as_fault(faults, f"inject({target.name!r})") if isinstance(faults, (Fault, str)) else None
    if fault is None:
        raise TypeError(
            f"inject(model {target.name!r}): a model takes one fault, e.g. faults.unavailable().first(2)"
        )
    if fault.kind in ("wrong", "empty") or fault.where:
        raise ValueError(
            f"inject(model {target.name!r}): {fault.label} is a tool's fault; a model takes error, "
            "crash, hang, slow or unavailable, scheduled with first, always or sometimes"
        )
    return InjectedModel(target, Schedule(target.name, fault, seed, []), clock)


def _wrap_callable(target: Any, faults: Faults, seed: int, clock: Any) -> Any:
    name = str(getattr(target, "__name__", type(target).__name__))
    fault = by_tool(faults, [name], "a function")[name]
    schedule = Schedule(name, fault, seed, [])
    signature = inspect.signature(target)
    inner = calling(_keywords(target, signature), schedule, None, clock)

    if inspect.iscoroutinefunction(target):

        @functools.wraps(target)
        async def wrapper_async(*args: Any, **kwargs: Any) -> Any:
            return await inner(**_bound(signature, args, kwargs))

        wrapper: Any = wrapper_async
    else:

        @functools.wraps(target)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return inner(**_bound(signature, args, kwargs))

    wrapper.__signature__ = signature
    wrapper.injections = schedule.log
    return wrapper


def _keywords(fn: Callable[..., Any], signature: inspect.Signature) -> Callable[..., Any]:
    """``fn`` called with its arguments by name, as ``calling`` calls a tool."""
    if inspect.iscoroutinefunction(fn):

        async def by_name_async(**named: Any) -> Any:
            bound = signature.bind_partial()
            bound.arguments.update(named)
            return await fn(*bound.args, **bound.kwargs)

        return by_name_async

    def by_name(**named: Any) -> Any:
        bound = signature.bind_partial()
        bound.arguments.update(named)
        return fn(*bound.args, **bound.kwargs)

    return by_name


def _bound(signature: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    bound = signature.bind(*args, **kwargs)
    return dict(bound.arguments)


def _is_tools(target: Any) -> bool:
    return isinstance(target, Tool) or (
        isinstance(target, (list, tuple))
        and all(isinstance(t, Tool) or inspect.isfunction(t) for t in target)
    )


register_target(callable, _wrap_callable)
register_target(lambda t: isinstance(t, Model) and not isinstance(t, Tool), _wrap_model)
register_target(_is_tools, _wrap_tools)
