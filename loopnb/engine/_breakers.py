"""Circuit breakers: sustained failure turns into a temporary, soft refusal.

A breaker is ``closed`` (calls go through) until ``failure_threshold`` consecutive failures open
it. While ``open`` it refuses; after ``cooldown`` seconds the next request finds it ``half_open``
and lets one trial through: a success closes it, a failure opens it again for another cooldown
(the same ``cooldown`` each time: it does not grow).

A breaker may be shared by runs on several threads: its transitions happen under a lock, so each
is made, and reported to its ``listeners``, exactly once. (The engine's ``BreakerTransitioned``
events compare the state before and after a call, so runs sharing a breaker at the same moment
may each report a transition the other made.)
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from loopnb.engine._clock import Clock, SystemClock
from loopnb.engine._events import BreakerState

TransitionListener = Callable[["CircuitBreaker", BreakerState, BreakerState], None]
"""Called as ``listener(breaker, previous, state)`` on every transition."""


class CircuitBreaker:
    """A breaker with real states and an injected clock.

    Passed to ``Engine(breakers=...)`` or ``FallbackChain(breaker=...)`` it is a template: each
    tool or model gets its own copy (``spawn``) with the same settings. The copies run on the
    engine's clock, unless this breaker was given a ``clock`` of its own, which they keep.
    """

    def __init__(
        self,
        *,
        failure_threshold: int = 3,
        cooldown: float = 30.0,
        clock: Clock | None = None,
        name: str = "",
    ) -> None:
        if isinstance(failure_threshold, bool) or not isinstance(failure_threshold, int):
            raise TypeError(f"CircuitBreaker: failure_threshold must be an int, got {failure_threshold!r}")
        if failure_threshold < 1:
            raise ValueError(f"CircuitBreaker: failure_threshold must be >= 1, got {failure_threshold}")
        if isinstance(cooldown, bool) or not isinstance(cooldown, int | float) or not cooldown >= 0:
            raise ValueError(f"CircuitBreaker: cooldown must be seconds >= 0, got {cooldown!r}")
        self.failure_threshold = failure_threshold
        self.cooldown = float(cooldown)
        self.clock: Clock = clock or SystemClock()
        self.own_clock = clock is not None  # given one: the engine's clock does not replace it
        self.name = name
        self.state: BreakerState = "closed"
        self.failures = 0
        self.opened_at: float | None = None
        self.listeners: list[TransitionListener] = []
        self._lock = threading.RLock()  # re-entrant: a listener may read the breaker it hears from

    def spawn(self, name: str, clock: Clock | None = None) -> CircuitBreaker:
        """A fresh breaker with this one's settings, for one tool or model, on ``clock`` unless
        this one has a clock of its own."""
        breaker = CircuitBreaker(
            failure_threshold=self.failure_threshold,
            cooldown=self.cooldown,
            clock=self.clock if self.own_clock or clock is None else clock,
            name=name,
        )
        breaker.own_clock = self.own_clock
        return breaker

    def cooldown_left(self) -> float:
        """Seconds until an open breaker lets a trial through (0 when not open)."""
        with self._lock:
            opened_at = self.opened_at
            if self.state != "open" or opened_at is None:
                return 0.0
            return max(0.0, opened_at + self.cooldown - self.clock.monotonic())

    def allow(self) -> bool:
        """May a call go through now? An open breaker past its cooldown turns half-open."""
        if self.state == "closed":  # no lock for the common case: a read of one attribute
            return True
        with self._lock:
            if self.state == "open":
                if self.cooldown_left() > 0.0:
                    return False
                self._move("half_open")
            return True

    def record_success(self) -> None:
        with self._lock:
            self.failures = 0
            if self.state != "closed":
                self.opened_at = None
                self._move("closed")

    def record_failure(self) -> None:
        with self._lock:
            self.failures += 1
            state = self.state
            if state == "half_open" or (state == "closed" and self.failures >= self.failure_threshold):
                self.opened_at = self.clock.monotonic()
                self._move("open")

    def trip(self) -> None:
        """Open now, whatever the count: for failures that retrying cannot fix (a refused key)."""
        with self._lock:
            self.failures = max(self.failures, self.failure_threshold)
            self.opened_at = self.clock.monotonic()
            if self.state != "open":
                self._move("open")

    def _move(self, state: BreakerState) -> None:
        previous, self.state = self.state, state
        for listener in self.listeners:
            listener(self, previous, state)

    def __repr__(self) -> str:
        return (
            f"CircuitBreaker({self.name!r}, state={self.state}, failures={self.failures}/"
            f"{self.failure_threshold}, cooldown={self.cooldown:g}s)"
        )
