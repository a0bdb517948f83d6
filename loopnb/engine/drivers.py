"""The synchronous drivers of a run: ``Engine.run`` in a script or in Jupyter, and ``RunSteps``.

Each drives the one async core (``_Run``) on an event loop of its own, so that a run works with
or without a running loop in the calling thread; Ctrl-C fires the run's cancel token.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING, Any

from loopnb.engine.cancel import CancelToken
from loopnb.engine.errors import LoopError
from loopnb.engine.events import TurnFinished
from loopnb.engine.result import RunResult

if TYPE_CHECKING:
    from loopnb.engine.run import _Run

__all__ = ["RunSteps"]


def _run_here(coro: Any, cancel: CancelToken) -> RunResult:
    """Drive a run on a private event loop in this thread; Ctrl-C becomes ``Cancelled``."""
    loop = asyncio.new_event_loop()
    try:
        task = loop.create_task(coro)
        while True:
            try:
                result = loop.run_until_complete(task)
                assert isinstance(result, RunResult)
                return result
            except KeyboardInterrupt:
                if task.done():
                    raise
                cancel.cancel("interrupted (Ctrl-C or kernel interrupt)")
                task.cancel()
    finally:
        try:
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()


def _run_on_thread(make: Callable[[], Any], cancel: CancelToken) -> RunResult:
    """Inside a running loop (Jupyter): run on a worker thread, wait interruptibly."""
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["result"] = _run_here(make(), cancel)
        except BaseException as exc:
            box["error"] = exc

    worker = threading.Thread(target=work, name="loopnb-run", daemon=True)
    worker.start()
    while worker.is_alive():
        try:
            worker.join()
        except KeyboardInterrupt:
            cancel.cancel("interrupted (Ctrl-C or kernel interrupt)")
    if "error" in box:
        raise box["error"]
    result = box["result"]
    assert isinstance(result, RunResult)
    return result


class RunSteps(Iterator["TurnFinished | None"]):
    """A run you advance a turn at a time (``step()``), e.g. from Pause/Step/Resume controls.

    Each step returns that turn's ``TurnFinished`` event; ``result`` is set once the run ends,
    ``error`` if it ended hard (``step`` then raises it). Runs on its own thread and loop, so it
    works inside Jupyter.
    """

    def __init__(self, run: _Run) -> None:
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
