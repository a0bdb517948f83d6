"""Test doubles that ship with the library: ``ScriptedModel`` and ``FunctionModel``."""

from __future__ import annotations

import inspect
import math
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import replace
from typing import TypeAlias

from loopnb.engine._errors import ModelUnavailable
from loopnb.engine._messages import ModelReply, ToolCall, ToolSpec, Transcript

Step: TypeAlias = ToolCall | list[ToolCall] | tuple[ToolCall, ...] | str | ModelReply | BaseException
"""One scripted turn: a call, several calls, a final text, a whole reply, or an error to raise."""


def as_reply(step: object, *, model: str, where: str = "reply", ids: str = "c") -> ModelReply:
    """Turn a step into a ``ModelReply``; a clear ``TypeError`` names what was wrong and where.

    Calls without an id get ``{ids}_{n}`` so that each result can name the call it answers (the
    engine would give them one as each reply arrives; a script gives them once, when it is made).
    """
    if isinstance(step, ModelReply):
        reply = step if step.model else replace(step, model=model)
        return with_call_ids(reply, ids)
    if isinstance(step, str):
        return ModelReply(text=step, model=model)
    if isinstance(step, ToolCall):
        return with_call_ids(ModelReply(tool_calls=(step,), model=model), ids)
    if isinstance(step, list | tuple) and step and all(isinstance(c, ToolCall) for c in step):
        return with_call_ids(ModelReply(tool_calls=tuple(step), model=model), ids)
    raise TypeError(
        f"{where}: expected a ToolCall, a non-empty list of ToolCalls, a str (the final reply), "
        f"a ModelReply or an exception to raise; got {type(step).__name__}: {step!r:.80}"
    )


def distinct_ids(calls: tuple[ToolCall, ...]) -> bool:
    """Whether every call has an id and no two share one (results are matched to calls by id)."""
    if len(calls) == 1:
        return bool(calls[0].id)
    ids = {call.id for call in calls}
    return len(ids) == len(calls) and "" not in ids


def with_call_ids(reply: ModelReply, prefix: str) -> ModelReply:
    """``reply`` with a distinct id on every tool call: a call without one gets ``{prefix}_{i}``,
    a call repeating an earlier call's id gets that id with ``_{i}`` appended (``i`` being its
    place in the reply), and every other call keeps its own."""
    if distinct_ids(reply.tool_calls):
        return reply
    seen: set[str] = set()
    calls = []
    for i, call in enumerate(reply.tool_calls):
        new = call.id or f"{prefix}_{i}"
        while new in seen:
            new = f"{new}_{i}"
        seen.add(new)
        # built directly, not with dataclasses.replace: this runs on every turn of a model that
        # gives no ids (the test doubles), and replace() costs several times the whole object
        calls.append(call if new == call.id else ToolCall(call.name, call.arguments, new))
    return ModelReply(text=reply.text, tool_calls=tuple(calls), model=reply.model, usage=reply.usage)


class ScriptedModel:
    """Replies with a fixed script, one step per turn, whatever the model is told.

    Deterministic, for tests and exact demonstrations. Past the last step it raises
    ``ModelUnavailable("script exhausted after N steps")``, which no retry can fix.
    """

    def __init__(self, steps: Iterable[Step], *, name: str = "scripted") -> None:
        self.name = name
        self._steps: list[ModelReply | BaseException] = []
        for i, step in enumerate(steps):
            if isinstance(step, BaseException):
                self._steps.append(step)
            else:
                self._steps.append(as_reply(step, model=name, where=f"ScriptedModel step {i}", ids=f"c{i}"))
        self._next = 0

    @property
    def remaining(self) -> int:
        """Steps not yet played."""
        return len(self._steps) - self._next

    def reset(self) -> None:
        """Start the script over (for running the same engine again)."""
        self._next = 0

    async def complete(self, messages: Transcript, tools: Sequence[ToolSpec]) -> ModelReply:
        if self._next >= len(self._steps):
            # retry_after=inf: asking again cannot help, so a fallback chain does not wait to.
            raise ModelUnavailable(f"script exhausted after {len(self._steps)} steps", retry_after=math.inf)
        step = self._steps[self._next]
        self._next += 1
        if isinstance(step, BaseException):
            raise step
        return step

    def __repr__(self) -> str:
        return f"ScriptedModel({len(self._steps)} steps, next={self._next}, name={self.name!r})"


ReplyFunction: TypeAlias = Callable[[Transcript, Sequence[ToolSpec]], "Step | Awaitable[Step]"]


class FunctionModel:
    """A model whose replies come from your function ``fn(messages, tools)``.

    ``fn`` may be sync or async and returns a step in any ScriptedModel form (a ``ToolCall``, a list
    of them, a final ``str`` or a ``ModelReply``); raising ``ModelUnavailable`` is a model failure.
    """

    def __init__(self, fn: ReplyFunction, *, name: str | None = None) -> None:
        if not callable(fn):
            raise TypeError(f"FunctionModel needs a callable fn(messages, tools); got {fn!r:.80}")
        self._fn = fn
        self.name: str = name or str(getattr(fn, "__name__", "function"))
        self._calls = 0

    async def complete(self, messages: Transcript, tools: Sequence[ToolSpec]) -> ModelReply:
        step = self._fn(messages, tools)
        if inspect.isawaitable(step):
            step = await step
        self._calls += 1
        return as_reply(step, model=self.name, where=f"FunctionModel {self.name!r}", ids=f"c{self._calls}")

    def __repr__(self) -> str:
        return f"FunctionModel({self.name!r})"
