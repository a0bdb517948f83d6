"""The synchronous drivers of a run: ``run_sync`` (``Engine.run``) and ``RunSteps`` (``Engine.iter``).

Each drives the one async core (``RunLoop``) on an event loop of its own, so that a run works with
or without a running loop in the calling thread; Ctrl-C fires the run's cancel token.
"""

from __future__ import annotations

import _thread
import asyncio
import contextlib
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Coroutine, Iterator
from typing import TYPE_CHECKING, Any

from loopnb.engine._cancel import INTERRUPTED, CancelToken
from loopnb.engine._errors import LoopError
from loopnb.engine._events import TurnFinished
from loopnb.engine._result import RunResult

if TYPE_CHECKING:
    from loopnb.engine._loop import RunLoop


def run_sync(run: Coroutine[Any, Any, RunResult], cancel: CancelToken) -> RunResult:
    """Drive a run to its end from synchronous code: a script, a Jupyter cell, any thread.

    The run gets an event loop of its own: in this thread, or, when this thread's loop is already
    running (a Jupyter cell), on a worker thread while this one waits. Ctrl-C or a kernel
    interrupt fires ``cancel``: the run ends as ``Cancelled``. The run starts outside any
    ``except`` block, so nothing it raises carries an exception of the driver as its context.
    """
    if not _loop_running():
        return _on_own_loop(run, cancel)
    outcome: list[RunResult | BaseException] = []
    done = threading.Event()

    def work() -> None:
        try:
            outcome.append(_on_own_loop(run, cancel))
        except BaseException as exc:
            outcome.append(exc)
        finally:
            done.set()

    began = False
    while not done.is_set():
        try:
            if not began:
                # a C call that returns at once, inside the try: a fast run can reach an interrupt
                # before Thread.start() would have returned, and nothing starts the worker twice
                began = True
                _thread.start_new_thread(work, ())
            # an Event with a timeout, not Thread.join(): an interrupted join can report the thread
            # finished while it still runs (CPython 3.11), and SIGINT landing on another thread
            # does not wake this one, which raises KeyboardInterrupt only once back in Python
            done.wait(_POLL)
        except KeyboardInterrupt:
            cancel.cancel(INTERRUPTED)
    ended = outcome[0]
    if isinstance(ended, BaseException):
        raise ended
    return ended


_POLL = 0.05
"""Seconds between two looks for an interrupt while a worker thread runs the run."""


def _loop_running() -> bool:
    """True inside a running event loop (a Jupyter cell, a coroutine)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _on_own_loop(run: Coroutine[Any, Any, RunResult], cancel: CancelToken) -> RunResult:
    """Drive ``run`` on a private event loop in this thread; Ctrl-C fires ``cancel``."""
    loop = asyncio.new_event_loop()
    try:
        task = loop.create_task(run)
        while True:
            try:
                return loop.run_until_complete(task)
            except KeyboardInterrupt:  # it landed in the loop, between two steps of the run
                if task.done():
                    raise
                cancel.cancel(INTERRUPTED)  # wakes the run wherever it waits: it ends as Cancelled
    finally:
        try:
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()


class RunSteps(Iterator["TurnFinished | None"]):
    """A run you advance a turn at a time (``step()``), e.g. from Pause/Step/Resume controls.

    Each step returns that turn's ``TurnFinished`` event; ``result`` is set once the run ends,
    ``error`` if it ended hard (``step`` then raises it). Runs on its own thread and loop, so it
    works inside Jupyter.
    """

    def __init__(self, run: RunLoop) -> None:
        self._run = run
        self._agen: AsyncGenerator[TurnFinished | None, None] = run.steps()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="loopnb-steps", daemon=True)
        self._thread.start()
        self.done = False

    @property
    def result(self) -> RunResult | None:
        return self._run.result

    @property
    def error(self) -> LoopError | None:
        return self._run.error

    @property
    def cancel(self) -> CancelToken:
        return self._run.state.cancel

    def step(self) -> TurnFinished | None:
        """Run one turn. Raises ``StopIteration`` when the run is over, ``LoopError`` if it ends hard."""
        if self.done:
            raise StopIteration
        future = asyncio.run_coroutine_threadsafe(_anext(self._agen), self._loop)
        try:
            outcome = future.result()
        except BaseException:
            self._close()
            raise
        if outcome is _END or self._run.result is not None:
            self._close()
            if outcome is _END:
                raise StopIteration
        return outcome  # type: ignore[no-any-return]

    def __next__(self) -> TurnFinished | None:
        return self.step()

    def run_to_end(self) -> RunResult:
        """Finish the run; returns the result or raises the ``LoopError``."""
        for _ in self:
            pass
        if self._run.error is not None:
            raise self._run.error
        assert self._run.result is not None
        return self._run.result

    def close(self) -> None:
        """Stop early: the run ends as ``Cancelled`` (finalised and reported like any other)."""
        if not self.done:
            future = asyncio.run_coroutine_threadsafe(self._agen.aclose(), self._loop)
            try:
                future.result()
            finally:
                self._close()

    def _close(self) -> None:
        self.done = True
        if self._loop.is_closed():
            return
        done = asyncio.run_coroutine_threadsafe(self._loop.shutdown_asyncgens(), self._loop)
        with contextlib.suppress(Exception):
            done.result(timeout=5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        if not self._thread.is_alive():
            self._loop.close()


_END: Any = object()


async def _anext(agen: AsyncIterator[Any]) -> Any:
    try:
        return await agen.__anext__()
    except StopAsyncIteration:
        return _END
