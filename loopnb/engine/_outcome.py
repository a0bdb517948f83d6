"""What the model reads of what a tool's call did: the one exception ladder, and values as text.

``failure`` words an exception the call raised (a ``ToolError``'s own text, the deadline's, or a
panic); ``content_of`` a value it returned (a value that cannot be shown is a panic); ``called``
makes an inline call and words whichever it did. Each gives the text and the producer of its
soft error (``None``: success).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from loopnb.engine._cancel import task_cancelling
from loopnb.engine._deadline import TimedOut
from loopnb.engine._errors import SoftProducer, ToolError
from loopnb.engine._messages import ToolResult
from loopnb.engine._texts import panic_text, timeout_text

Outcome = tuple[str, SoftProducer | None]
"""What the model reads of an attempt, and the producer of its soft error (``None``: success)."""


def failure(name: str, exc: BaseException, timeout: float | None, *, run_cancellable: bool) -> Outcome:
    """What the model reads when a tool's call raised ``exc``: the one exception ladder.

    A ``ToolError`` is the tool's own text; our deadline (``TimedOut``) the timeout's; anything
    else the analogue of a panic. Re-raised, as not the tool's failure: ``KeyboardInterrupt``
    (Ctrl-C, the run ends as ``Cancelled``) and, where the attempt awaited (``run_cancellable``),
    a ``CancelledError`` while the run's own task is being cancelled. Inline, a ``CancelledError``
    is always the tool's own: no task is cancelled inside a sync call.
    """
    if isinstance(exc, ToolError):
        return _error_text(name, exc)
    if isinstance(exc, TimedOut):
        assert timeout is not None
        return timeout_text(name, timeout), "timeout"
    if isinstance(exc, KeyboardInterrupt) or (
        run_cancellable and isinstance(exc, asyncio.CancelledError) and task_cancelling()
    ):
        raise exc
    return panic_text(name, exc), "tool_panic"


def called(name: str, fn: Callable[..., Any], kwargs: dict[str, Any]) -> Outcome:
    """What the model reads of ``fn(**kwargs)`` called inline (a stand-in's, or a tool's after it
    waited): its value, its ``ToolError``'s text, or the panic it raised."""
    try:
        value = fn(**kwargs)
    except BaseException as exc:
        return failure(name, exc, None, run_cancellable=False)
    return content_of(name, value)


def _error_text(name: str, exc: ToolError) -> Outcome:
    """A ``ToolError``'s own text; one whose ``__str__`` fails is reported as the panic it is."""
    try:
        text = str(exc)
    except KeyboardInterrupt:
        raise
    except BaseException:
        return panic_text(name, exc), "tool_panic"
    return str.__str__(text), "tool_error"


def content_of(name: str, value: Any) -> Outcome:
    """What the model reads for a tool's return value. A value that cannot be shown is a panic."""
    kind = type(value)
    if kind is str:
        return value, None
    if kind is bool:
        return ("true" if value else "false"), None
    if isinstance(value, str):  # a subclass: its text, without running its own __str__
        return str.__str__(value), None
    if isinstance(value, ToolResult):
        content: object = value.content  # typed, but a tool's dataclass checks nothing at run time
        failed = value.is_error is True
        if not isinstance(content, str):  # shown like any other value
            text, producer = content_of(name, content)
            return text, producer or ("tool_error" if failed else None)
        return str.__str__(content), ("tool_error" if failed else None)
    try:
        if kind is int:
            return str(value), None  # may fail: past 4300 digits, int -> str refuses
        if value is None:
            return "", None
        if isinstance(value, bytes):
            return value.decode("utf-8", errors="replace"), None
        try:
            return json.dumps(value, ensure_ascii=False, default=str), None
        except (TypeError, ValueError, RecursionError):
            return str(value), None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # a __str__ or __repr__ that raises: the value cannot be shown
        return panic_text(name, exc), "tool_panic"
