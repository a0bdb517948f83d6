"""One run's state and its event emitter, shared by the loop, the dispatcher and the chain."""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable
from typing import Literal, NoReturn

from loopnb.engine._breakers import CircuitBreaker
from loopnb.engine._cancel import CancelToken
from loopnb.engine._clock import Clock
from loopnb.engine._errors import Cancelled, LoopDetected, LoopnbWarning, UserInputRequired, exception_text
from loopnb.engine._events import (
    BreakerState,
    BreakerTransitioned,
    DetectorAction,
    DetectorFired,
    Event,
    is_detector,
)
from loopnb.engine._messages import Message, ModelReply, ToolResult

Observer = Callable[[Event], None]
"""Any callable taking one event."""

Item = Message | ModelReply | ToolResult


class RunState:
    """Everything one run owns: transcript, results, counters, cancel token, observers."""

    def __init__(
        self,
        *,
        run_id: str,
        clock: Clock,
        cancel: CancelToken,
        observers: list[Observer],
        on_detach: Callable[[Observer], None],
        always_emit: bool = False,
    ) -> None:
        self.run_id = run_id
        self.clock = clock
        self.cancel = cancel
        self.observers = observers
        self.on_detach = on_detach
        self.observing = bool(observers) or always_emit
        self.next_seq: Callable[[], int] = itertools.count().__next__
        """The next event's ``seq``: 0, 1, 2, ... within the run (a C call on the per-event path)."""
        self.turn = 0
        self.messages: list[Item] = []
        self.tool_results: list[ToolResult] = []
        self.committed_messages = 0
        self.committed_results = 0

    def emit(self, event: Event) -> None:
        """Deliver an event; an observer that raises is detached with a warning.

        Whatever it raises (``SystemExit`` and ``CancelledError`` too: no task is cancelled inside
        a plain call), except ``KeyboardInterrupt``, which is Ctrl-C landing there: ``Cancelled``.
        """
        for observer in self.observers:
            try:
                observer(event)
            except KeyboardInterrupt:
                raise
            except BaseException as exc:
                self.observers = [o for o in self.observers if o is not observer]
                self.on_detach(observer)
                warnings.warn(
                    f"loopnb: observer {_name(observer)} raised {type(exc).__name__}: "
                    f"{exception_text(exc)}; it was detached and the run goes on",
                    LoopnbWarning,
                    stacklevel=2,
                )

    def checkpoint(self) -> None:
        """A cancellation checkpoint: the one place ``Cancelled`` is raised."""
        if self.cancel.cancelled:
            raise Cancelled(self.cancel.reason or "cancelled")

    def stop(self, detector: str, text: str, count: int) -> NoReturn:
        """Report a safety system's stop and raise ``LoopDetected``: its one raise site."""
        self.signal(detector, "stop", text, count)
        raise LoopDetected(text)

    def ask_user(self, detector: str, text: str, count: int) -> NoReturn:
        """Report a safety system's call for a human and raise ``UserInputRequired``: its one raise site."""
        self.signal(detector, "ask_user", text, count)
        raise UserInputRequired(text)

    def signal(self, detector: str, action: DetectorAction, text: str, count: int) -> None:
        """Report what a safety system did: a ``DetectorFired`` for each of loopnb's own detectors
        (a system of the user's is recorded by what it did: the text the model read, the hard error)."""
        if self.observing and is_detector(detector):
            self.emit(
                DetectorFired(
                    seq=self.next_seq(),
                    run_id=self.run_id,
                    at=self.clock.time(),
                    turn=self.turn,
                    detector=detector,
                    action=action,
                    text=text,
                    count=count,
                )
            )

    def note_breaker(
        self, breaker: CircuitBreaker, before: BreakerState, scope: Literal["tool", "model"]
    ) -> None:
        """Emit a transition if ``breaker`` moved away from ``before``."""
        if breaker.state != before and self.observing:
            self.emit(
                BreakerTransitioned(
                    seq=self.next_seq(),
                    run_id=self.run_id,
                    at=self.clock.time(),
                    turn=self.turn,
                    target=breaker.name,
                    scope=scope,
                    previous=before,
                    state=breaker.state,
                    failures=breaker.failures,
                    cooldown=breaker.cooldown,
                )
            )


def _name(observer: Observer) -> str:
    """The observer's repr, for the warning; one whose ``__repr__`` fails is named by its type."""
    try:
        return repr(observer)
    except Exception:
        return f"<{type(observer).__name__} object>"
