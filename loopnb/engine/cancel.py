"""Cancellation: a token your code, a hook, an observer or the Stop button can fire."""

from __future__ import annotations

import threading

__all__ = ["CancelToken"]


class CancelToken:
    """Fire with ``cancel()``; the run ends with ``Cancelled`` at its next checkpoint.

    Checkpoints come before each model call and each dispatch (and each recovery retry). Safe
    to fire from any thread.
    """

    __slots__ = ("_event", "reason")

    def __init__(self) -> None:
        self._event = threading.Event()
        self.reason: str | None = None

    def cancel(self, reason: str = "cancelled by the user") -> None:
        if not self._event.is_set():
            self.reason = reason
            self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def __repr__(self) -> str:
        return f"CancelToken(cancelled={self.cancelled}, reason={self.reason!r})"
