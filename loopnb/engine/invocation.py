"""Calling a tool: the call itself, the timeout middleware and the panic catch.

The low-level half of the dispatcher (``dispatch``): each helper turns whatever a tool does
(returns, raises, hangs, hands back an awaitable) into the text the model reads and the
producer of a soft error, or ``None`` on success.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import threading
from collections.abc import Callable
from typing import Any

from loopnb.engine.errors import SoftProducer, ToolError
from loopnb.engine.messages import ToolResult
from loopnb.engine.tools import Tool

__all__ = ["panic_text"]


def panic_text(name: str, exc: BaseException) -> str:
    """``Tool "x" panicked: <message>``; the message is the exception's string payload."""
    args = exc.args
    payload = str.__str__(args[0]) if args and isinstance(args[0], str) else "(unknown payload)"
    return f'Tool "{name}" panicked: {payload}'


def _call_inline(tool: Tool, kwargs: dict[str, Any]) -> tuple[str, SoftProducer | None]:
    """A sync tool with no timeout runs right here: no thread hop on the hot path.

    Raises ``_Pending`` when the tool returned an awaitable, which only the async path can await.
    A ``CancelledError`` here is always the tool's own: no task is cancelled inside a sync call.
    """
    try:
        value = tool.fn(**kwargs)
    except ToolError as exc:
        return _error_text(tool.name, exc)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # the Python analogue of a panic: caught, reported softly
        return panic_text(tool.name, exc), "tool_panic"
    if type(value) is str:  # the common case, without a call
        return value, None
    if inspect.isawaitable(value):
        raise _Pending(value)
    return _content(tool.name, value)


def _error_text(name: str, exc: ToolError) -> tuple[str, SoftProducer]:
    """A ``ToolError``'s own text; one whose ``__str__`` fails is reported as the panic it is."""
    try:
        return str(exc), "tool_error"
    except Exception:
        return panic_text(name, exc), "tool_panic"


class _Pending(Exception):
    """A sync tool returned an awaitable (e.g. a plain function wrapping a coroutine function)."""

    def __init__(self, awaitable: Any) -> None:
        super().__init__()
        self.awaitable = awaitable


class _TimedOut(Exception):
    """Our own deadline fired (distinct from a TimeoutError a tool raises itself)."""


async def _captured(awaitable: Any) -> tuple[bool, Any]:
    """Await in a task of its own without letting ``SystemExit`` or ``KeyboardInterrupt`` escape it.

    asyncio re-raises those two out of the event loop when a task ends with them, past every
    ``except`` of the run; caught here, they are handed back to the run's own task instead.
    """
    try:
        return True, await awaitable
    except asyncio.CancelledError:
        raise
    except BaseException as exc:
        return False, exc


async def _with_timeout(awaitable: Any, seconds: float) -> Any:
    task = asyncio.ensure_future(_captured(awaitable))
    try:
        done, _ = await asyncio.wait({task}, timeout=seconds)
    finally:
        if not task.done():  # the deadline, or the run itself is being cancelled
            task.cancel()
    if not done:
        raise _TimedOut
    ok, value = task.result()
    if not ok:
        raise value
    return value


async def _in_thread(fn: Callable[..., Any], kwargs: dict[str, Any], seconds: float) -> tuple[bool, Any]:
    """Run a sync tool on a daemon thread so that a hung tool holds neither the run nor exit.

    Returns ``(True, value)`` or ``(False, the exception the tool raised)``.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[tuple[bool, Any]] = loop.create_future()

    def settle(outcome: tuple[bool, Any]) -> None:
        if not future.done():
            future.set_result(outcome)

    def work() -> None:
        try:
            outcome: tuple[bool, Any] = (True, fn(**kwargs))
        except BaseException as exc:
            outcome = (False, exc)
        with contextlib.suppress(RuntimeError):  # the loop closed: the run moved on long ago
            loop.call_soon_threadsafe(settle, outcome)

    threading.Thread(target=work, name=f"loopnb-tool-{fn.__name__}", daemon=True).start()
    done, _ = await asyncio.wait({future}, timeout=seconds)
    if not done:
        future.cancel()
        raise _TimedOut
    return future.result()


def _content(name: str, value: Any) -> tuple[str, SoftProducer | None]:
    """What the model reads for a tool's return value. A value that cannot be shown is a panic."""
    kind = type(value)
    if kind is str:
        return value, None
    if kind is bool:
        return ("true" if value else "false"), None
    if isinstance(value, str):  # a subclass: its text, without running its own __str__
        return str.__str__(value), None
    if isinstance(value, ToolResult):
        return value.content, ("tool_error" if value.is_error else None)
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
    except Exception as exc:
        return panic_text(name, exc), "tool_panic"
