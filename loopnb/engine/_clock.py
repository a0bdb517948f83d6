"""Time, injected: the engine never reads the system clock or sleeps except through a ``Clock``."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    """Where the engine gets the time and how it waits (back-off, breaker cooldowns)."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back (cooldowns, latencies)."""
        ...

    def time(self) -> float:
        """Wall-clock seconds since the epoch (timestamps in events)."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` (back-off between recovery retries)."""
        ...


class SystemClock:
    """The real clock."""

    def __init__(self) -> None:
        # The function itself, not a method wrapping it: latencies read it on every dispatch.
        self.monotonic: Callable[[], float] = time.perf_counter

    def time(self, _ns: Callable[[], int] = time.time_ns) -> float:
        """Wall-clock seconds since the epoch, to the microsecond (what every frame holds)."""
        return _ns() // 1000 / 1_000_000  # integer arithmetic: five times cheaper than round()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    def __repr__(self) -> str:
        return "SystemClock()"


class FakeClock:
    """A clock that moves only when told to: ``sleep`` and ``advance`` add to it, nothing waits.

    Tests and teaching scenarios use it to run breaker cooldowns and back-off in no real time.
    Its time is simulated (``simulated`` is True): a run on it says so in its ``RunStarted``
    settings (``clock: simulated``), so that a report tells its times from wall time.
    """

    simulated = True
    """What it measures is simulated time, not time that passed."""

    def __init__(self, start: float = 0.0, *, wall: float = 1_767_225_600.0) -> None:
        self._now = float(start)
        self._wall_offset = float(wall) - float(start)
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self._now

    def time(self) -> float:
        return self._now + self._wall_offset

    def advance(self, seconds: float) -> None:
        """Move the clock forward."""
        if seconds < 0:
            raise ValueError(f"FakeClock.advance: seconds must be >= 0, got {seconds}")
        self._now += seconds

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.advance(max(0.0, seconds))

    def __repr__(self) -> str:
        return f"FakeClock(now={self._now})"
