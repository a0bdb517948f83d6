"""The timeout middleware's waits: a tool's call under a deadline, without holding the run.

``with_timeout`` awaits an awaitable under a deadline in a task of its own; ``in_thread`` runs a
sync tool on a daemon thread (so a hung tool holds neither the run nor interpreter exit) and hands
its outcome back with ``call_soon_threadsafe``. Either raises ``TimedOut`` when the deadline fires.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import Any


class TimedOut(Exception):
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


async def with_timeout(awaitable: Any, seconds: float) -> Any:
    task = asyncio.ensure_future(_captured(awaitable))
    try:
        done, _ = await asyncio.wait({task}, timeout=seconds)
    finally:
        if not task.done():  # the deadline, or the run itself is being cancelled
            task.cancel()
    if not done:
        raise TimedOut
    ok, value = task.result()
    if not ok:
        raise value
    return value


async def in_thread(fn: Callable[..., Any], kwargs: dict[str, Any], seconds: float) -> tuple[bool, Any]:
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
        raise TimedOut
    return future.result()
