"""Cancellation: a token your code, a hook, an observer or the Stop button can fire."""

from __future__ import annotations

import asyncio
import threading

__all__ = ["CancelToken", "task_cancelling"]


def task_cancelling() -> bool:
    """True when the running task is being cancelled (Ctrl-C, or the caller cancelled the run).

    Tells that apart from a ``CancelledError`` a tool or a model raised by itself, which is only
    their failure: the run was not cancelled, and goes on.
    """
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


class CancelToken:
    """Fire with ``cancel()``; the run ends with ``Cancelled`` at its next checkpoint.

    Checkpoints come before each model call and each dispatch (and each recovery retry). Safe
    to fire from any thread.
    """

    __slots__ = ("_lock", "cancelled", "reason")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.cancelled = False  # read at every checkpoint: a plain attribute, not a property
        self.reason: str | None = None

    def cancel(self, reason: str = "cancelled by the user") -> None:
        """Fire the token (the first reason given is kept)."""
        with self._lock:
            if not self.cancelled:
                self.reason = reason
                self.cancelled = True

    def __repr__(self) -> str:
        return f"CancelToken(cancelled={self.cancelled}, reason={self.reason!r})"
