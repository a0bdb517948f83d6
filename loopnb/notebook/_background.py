"""``BackgroundRun``: a run on a worker thread, driven a turn at a time by Pause / Step / Resume / Stop.

The controls change the run's state under one lock; what the view shows (the note beside the
status, which buttons are enabled) is derived from that state in one place, ``_describe``. One
thread at a time publishes it, and goes on until nothing changed meanwhile: the last write shows
the latest state, and the worker never waits for another thread's write to the page.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Protocol

from loopnb.engine import CancelToken, RunResult
from loopnb.engine._errors import LoopError, exception_text
from loopnb.notebook._html import Html

if TYPE_CHECKING:
    import ipywidgets as widgets

    from loopnb.engine import RunSteps
    from loopnb.notebook._live import LiveView

_PAUSED = frozenset({"Step", "Resume", "Stop"})
_RUNNING = frozenset({"Pause", "Stop"})
_NONE: frozenset[str] = frozenset()


class Shown(Protocol):
    """A displayed view whose saved picture is refreshed once the run is over."""

    def refresh(self, view: LiveView) -> None: ...


class BackgroundRun:
    """A run proceeding on a worker thread, driven a turn at a time; the view's buttons call it.

    ``pause()`` holds it after the current turn, ``step()`` lets one more turn through (then holds
    it), ``resume()`` lets it go on, ``stop()`` fires the cancel token (the run ends as
    ``Cancelled``). Once the run is over the controls do nothing and every button is disabled.
    While it runs ``result``, ``error`` and ``failure`` are None; at the end ``result`` is the
    ``RunResult`` of a run that finished, ``error`` the ``LoopError`` of one that ended hard, and
    ``failure`` anything else that went wrong below the engine's API (also shown in the view).

    Displayed (a cell's last expression), it is a line the run keeps current while the kernel
    lives; its ``repr`` is always the state as of now. To see how a run ended in a cell, whatever
    the front end: ``bg.wait()`` then ``bg``, e.g. ``BackgroundRun(done: ok, turns=3)``.
    """

    def __init__(self, *, cancel: CancelToken, paused: bool = False) -> None:
        self.cancel = cancel
        self.result: RunResult | None = None
        self.error: LoopError | None = None
        self.failure: BaseException | None = None
        self.turns = 0
        self._paused = paused
        self._budget = 0  # turns let through by Step while paused
        self._in_turn = False
        self._stepping = False  # the turn in flight was let through by Step
        self._over = False
        self._cond = threading.Condition()
        self._publishing = False  # a thread is writing to the view (under the lock)
        self._dirty = False  # the state changed since the publisher last read it
        self._shown: tuple[str | None, frozenset[str], int | None] | None = None
        self._labels: list[widgets.HTML] = []  # where a cell displayed this run: kept current
        self._done = threading.Event()
        self._view: LiveView | None = None
        self._thread: threading.Thread | None = None

    def launch(self, steps: RunSteps, view: LiveView | None, shown: Shown | None = None) -> None:
        """Start the worker thread on ``steps``, drawing into ``view`` (``shown`` refreshes it at the end)."""
        self._view = view
        self._publish()
        self._thread = threading.Thread(
            target=self._work, args=(steps, view, shown), name="loopnb-background", daemon=True
        )
        self._thread.start()

    # -- controls -----------------------------------------------------------------------------

    def pause(self) -> None:
        """Hold the run after the turn in flight (a pending Step is forgotten)."""
        with self._cond:
            if self._over:
                return
            self._paused = True
            self._budget = 0
        self._publish()

    def step(self) -> None:
        """Let one more turn through, then hold the run."""
        with self._cond:
            if self._over:
                return
            self._paused = True
            self._budget += 1
            self._cond.notify_all()
        self._publish()

    def resume(self) -> None:
        """Let the run go on."""
        with self._cond:
            if self._over:
                return
            self._paused = False
            self._budget = 0
            self._cond.notify_all()
        self._publish()

    def stop(self) -> None:
        """End the run as ``Cancelled``; after the run is over, nothing (the token is left alone)."""
        with self._cond:
            if self._over:
                return
            self.cancel.cancel("stopped from the live view")  # under the lock: never after the end
            self._cond.notify_all()
        self._publish()

    @property
    def paused(self) -> bool:
        return self._paused

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the run is over (or ``timeout`` seconds); True when it is over.

        Then ``result``, ``error`` or ``failure`` says how it ended.
        """
        return self._done.wait(timeout)

    # -- what the view shows ------------------------------------------------------------------

    def _describe(self) -> tuple[str | None, frozenset[str], int | None]:
        """The note beside the status, the enabled buttons and, while held between turns, the
        turns done (the pill's ``paused after turn N``), for the current state (under the lock)."""
        if self._over:
            if self.failure is not None:
                return f"the run failed: {_describe_failure(self.failure)}", _NONE, None
            return None, _NONE, None
        if self.cancel.cancelled:
            return "stopping", _NONE, None
        if not self._paused:
            return None, _RUNNING, None
        stepping = self._stepping if self._in_turn else self._budget > 0
        if stepping:
            return f"stepping: turn {self.turns + 1}", _PAUSED, None
        if self._in_turn:
            return f"pausing after turn {self.turns + 1}", _PAUSED, None
        if self.turns == 0:
            return "paused before the first turn: press Step or Resume", _PAUSED, 0
        return f"paused after turn {self.turns}: press Step or Resume", _PAUSED, self.turns

    def _publish(self) -> None:
        """Show the current state's note and buttons (only what changed), or leave it to the
        thread already doing so: it shows this change too before it stops."""
        view = self._view
        if view is None:
            return
        with self._cond:
            self._dirty = True
            if self._publishing:
                return
            self._publishing = True
        try:
            while True:
                with self._cond:
                    if not self._dirty:
                        return
                    self._dirty = False
                    shown = self._describe()
                if shown != self._shown:
                    self._shown = shown
                    note, enabled, paused = shown
                    view.set_note(note, paused=paused)
                    for name, button in view.buttons.items():
                        button.disabled = name not in enabled
                self._relabel()
        finally:
            with self._cond:
                self._publishing = False

    # -- the worker ---------------------------------------------------------------------------

    def _work(self, steps: RunSteps, view: LiveView | None, shown: Shown | None) -> None:
        try:
            self._drive(steps)
            self.result = steps.result
        except BaseException as exc:  # a bug below the engine's API: kept, and shown in the view
            self.failure = exc
        finally:
            with self._cond:
                self._over = True
            try:
                if view is not None:
                    self._finish(view, shown)
            except BaseException as exc:  # e.g. an on_finish callback: wait() must still return
                if self.failure is None:
                    self.failure = exc
            finally:
                self._done.set()
                self._relabel()

    def _drive(self, steps: RunSteps) -> None:
        """Step the run to its end, holding it while paused."""
        while not steps.done:
            with self._cond:
                while self._paused and self._budget == 0 and not self.cancel.cancelled:
                    self._cond.wait()
                self._stepping = self._paused and self._budget > 0
                if self._stepping:
                    self._budget -= 1
                self._in_turn = True
            self._publish()
            finished = False
            try:
                steps.step()
                finished = True
            except StopIteration:
                return
            except LoopError as err:
                self.error = err
                return
            finally:
                with self._cond:
                    self._in_turn = False
                    if finished:
                        self.turns += 1
                    # over from here on: a late Stop must leave the token alone (mypy would keep
                    # ``steps.done`` at the loop's False across ``step()`` in an ``if``)
                    self._over = self._over or steps.done
            self._publish()

    def _finish(self, view: LiveView, shown: Shown | None) -> None:
        """Every button off, the failure (if any) beside the status, the final state drawn."""
        self._publish()
        if not view.finished:
            view.finish()
        if shown is not None:
            shown.refresh(view)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        """A cell's output of the run: a line kept current as the run goes on and ends.

        With a live kernel the line is a widget that the run rewrites as it goes; the text beside
        it (what a front end without widgets, or a saved notebook, shows) is the state when the
        cell displayed it: ``bg.wait()`` then ``bg`` shows how the run ended.
        """
        import ipywidgets as widgets

        label = widgets.HTML(self._label_html())
        self._labels.append(label)
        self._relabel()  # the run may have moved on (or ended) before the line was in the list
        bundle = dict(label._repr_mimebundle_(**kwargs) or {})
        bundle["text/plain"] = repr(self)
        return bundle

    def _label_html(self) -> str:
        return str(Html("<code>{}</code>").format(repr(self)))

    def _relabel(self) -> None:
        """Bring every displayed line of this run up to date.

        Any thread may call it (the worker as the run goes, a cell displaying the run): a thread
        that wrote an outdated line finds the state moved on when it looks again, and writes the
        newer one, so the line written last always shows the latest state.
        """
        text = self._label_html()
        while True:
            for label in list(self._labels):
                if label.value != text:
                    label.value = text
            latest = self._label_html()
            if latest == text:
                return
            text = latest

    def __repr__(self) -> str:
        """``BackgroundRun(<state>, turns=N)``, the state as of now: ``running``, ``paused``, and at
        the end ``done: ok``, ``done: hard (<producer>)`` or ``failed`` (a bug below the engine)."""
        if self.done:
            if self.failure is not None:
                state = "failed"
            elif self.error is not None:
                state = f"done: hard ({self.error.producer})"
            else:
                state = "done: ok"
        else:
            state = "paused" if self._paused else "running"
        return f"BackgroundRun({state}, turns={self.turns})"


def _describe_failure(exc: BaseException, limit: int = 300) -> str:
    """``Type: message`` of an exception, even one whose ``str`` raises; cut at ``limit``."""
    message = exception_text(exc)
    text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"
