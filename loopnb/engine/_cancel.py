"""Cancellation: a token your code, a hook, an observer or the Stop button can fire."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable

INTERRUPTED = "interrupted (Ctrl-C or kernel interrupt)"
"""The reason a run's token is fired with when Ctrl-C or a kernel interrupt ends the run."""


def task_cancelling() -> bool:
    """True when the running task is being cancelled (Ctrl-C, or the caller cancelled the run).

    Tells that apart from a ``CancelledError`` a tool or a model raised by itself, which is only
    their failure: the run was not cancelled, and goes on.
    """
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


class CancelToken:
    """Fire with ``cancel()``; the run ends with ``Cancelled``.

    Checkpoints come before each model call and each dispatch (and each recovery retry), and a
    run waiting on something (an async tool with no timeout, a model that does not answer) is
    woken at once: what it waits on is cancelled. Safe to fire from any thread.
    """

    __slots__ = ("_lock", "_wakers", "cancelled", "reason")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._wakers: list[Callable[[], None]] = []
        self.cancelled = False  # read at every checkpoint: a plain attribute, not a property
        self.reason: str | None = None

    def cancel(self, reason: str = "cancelled by the user") -> None:
        """Fire the token (the first reason given is kept) and wake the runs waiting on it."""
        with self._lock:
            if self.cancelled:
                return
            self.reason = reason
            self.cancelled = True
            wakers, self._wakers = self._wakers, []
        for wake in wakers:
            wake()

    def on_cancel(self, wake: Callable[[], None]) -> Callable[[], None]:
        """Call ``wake()`` (from the thread that fires the token) when it fires, or at once if it
        already has; returns the function that forgets ``wake``. ``wake`` must not raise."""
        with self._lock:
            if not self.cancelled:
                self._wakers.append(wake)
                return lambda: self._forget(wake)
        wake()
        return _nothing

    def _forget(self, wake: Callable[[], None]) -> None:
        with self._lock, contextlib.suppress(ValueError):
            self._wakers.remove(wake)

    def __repr__(self) -> str:
        return f"CancelToken(cancelled={self.cancelled}, reason={self.reason!r})"


def _nothing() -> None:
    pass


def wake_task_on_cancel(token: CancelToken) -> Callable[[], None]:
    """Let ``token`` interrupt the running task wherever it waits; returns ``release``, to call
    (in that task) once the waiting is over.

    The token's thread asks the task's loop to cancel the task; the request is dropped when it
    arrives after ``release``, so a run that already ended keeps its ending. ``release`` also takes
    back the cancellation it made, leaving a caller's own task as it found it.
    """
    task = asyncio.current_task()
    if task is None:
        return _nothing
    loop = asyncio.get_running_loop()
    state = {"live": True, "cancelled": False}

    def interrupt() -> None:  # on the loop's thread, between two steps of the task
        if state["live"] and not task.done():
            state["cancelled"] = True
            task.cancel()

    def wake() -> None:  # on the token's thread
        with contextlib.suppress(RuntimeError):  # the loop is closed: nothing waits any more
            loop.call_soon_threadsafe(interrupt)

    forget = token.on_cancel(wake)

    def release() -> None:
        state["live"] = False
        forget()
        if state["cancelled"]:
            task.uncancel()

    return release
