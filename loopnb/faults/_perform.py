"""What a fired fault does in place of a call, for a wrapper that makes the call itself.

``perform(fault, call, clock=...)`` and ``aperform`` (its async twin) act a fault out around
``call`` (the real call, with its arguments bound): raise the error or the crash, wait out a hang
or a slow call, return the wrong or empty value. A plain function's wrapper uses them, and a
wrapper of another framework's tools may (raising that framework's own soft error for ``error``).
Inside a loopnb engine, a tool's faults are acted out by the dispatcher instead, on the run's clock
and under its timeout (``loopnb.faults._tools``).

Waits are on ``clock`` when one is given (a ``FakeClock`` waits in no real time), else real.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from loopnb.engine import Clock, ModelUnavailable, ToolError
from loopnb.faults._fault import Fault


def failure(fault: Fault) -> Exception | None:
    """The exception a fired fault raises once its wait is over (``None``: it returns instead)."""
    match fault.kind:
        case "error":
            return ToolError(fault.text)
        case "crash":
            return fault.exception()
        case "hang":
            return TimeoutError(fault.text)
        case "unavailable":
            return ModelUnavailable(fault.text, status=fault.status, retry_after=fault.retry_after)
        case _:
            return None


def wait(clock: Clock | None, seconds: float) -> None:
    """Wait ``seconds`` on ``clock`` from sync code (a clock whose wait suspends: real seconds)."""
    if seconds <= 0:
        return
    if clock is not None:
        pending = clock.sleep(seconds)
        try:
            pending.send(None)
        except StopIteration:  # done without suspending: a FakeClock
            return
        pending.close()
    time.sleep(seconds)


async def await_wait(clock: Clock | None, seconds: float) -> None:
    """Wait ``seconds`` on ``clock`` (real seconds without one)."""
    if seconds > 0:
        await (clock.sleep(seconds) if clock is not None else asyncio.sleep(seconds))


def perform(fault: Fault, call: Callable[[], Any], *, clock: Clock | None = None) -> Any:
    """Act ``fault`` out in place of ``call()``: raise, wait, or return its value."""
    wait(clock, fault.seconds)
    exc = failure(fault)
    if exc is not None:
        raise exc
    return call() if fault.kind == "slow" else fault.value


async def aperform(fault: Fault, call: Callable[[], Awaitable[Any]], *, clock: Clock | None = None) -> Any:
    """``perform`` for an async call."""
    await await_wait(clock, fault.seconds)
    exc = failure(fault)
    if exc is not None:
        raise exc
    return await call() if fault.kind == "slow" else fault.value
