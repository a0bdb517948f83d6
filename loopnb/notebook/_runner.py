"""``NotebookRunner``: run an engine in a notebook cell with a recorder and the live view attached.

``run`` / ``arun`` block the cell while the view updates; a hard error is drawn in the view and
re-raised (or returned). ``start`` runs in the background on a worker thread with the cell already
returned, so that the Pause / Step / Resume / Stop buttons reach the run (a kernel delivers no
button click while a cell blocks). It steps ``Engine.iter``: one loop implementation.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopnb.engine import CancelToken, Engine, LoopError, RunResult
from loopnb.notebook._background import BackgroundRun
from loopnb.notebook._live import Controls, LiveView
from loopnb.notebook._pacing import check_fps
from loopnb.notebook._panes import Pane, checked_panes

if TYPE_CHECKING:
    import pandas as pd

    from loopnb.record import Recorder, Recording


def _in_ipython() -> bool:
    try:
        from IPython.core.interactiveshell import InteractiveShell
    except ImportError:  # pragma: no cover - IPython is a dependency
        return False
    return bool(InteractiveShell.initialized())


class _Shown:
    """A view displayed with a display id, so that its static picture can be refreshed at the end."""

    def __init__(self, view: LiveView) -> None:
        self.handle: Any = None
        if _in_ipython():
            from IPython.display import display

            self.handle = display(view, display_id=True)

    def refresh(self, view: LiveView) -> None:
        if self.handle is not None:
            self.handle.update(view)


class NotebookRunner:
    """Runs ``engine`` with a ``Recorder`` and a ``LiveView`` attached, one view per run.

    ``recorder`` defaults to a fresh ``loopnb.Recorder()`` (do not also subscribe it to the engine
    yourself); ``view=False`` records without drawing. ``export`` also sends every run to
    OpenTelemetry (``loopnb.otel``): an OTLP/HTTP URL, a ``TracerProvider`` or an ``otel.Exporter``.
    ``runner.turns`` / ``runner.events`` are the recorder's frames, over every run this runner made.
    One run at a time: starting another while one goes (a background run, an ``arun`` awaited beside
    another, a ``run`` from another thread) raises ``RuntimeError``, as both would share the engine's
    model and the view; the check and the claim are one step under a lock, so of two threads starting
    at once exactly one runs.
    """

    def __init__(
        self,
        engine: Engine,
        *,
        recorder: Recorder | None = None,
        view: bool = True,
        max_fps: float = 10.0,
        export: Any = None,
        panes: Iterable[Pane] = (),
    ) -> None:
        if not isinstance(engine, Engine):
            raise TypeError(f"NotebookRunner needs a loopnb Engine, got {type(engine).__name__}")
        check_fps("NotebookRunner", max_fps)
        if recorder is None:
            from loopnb.record import Recorder

            recorder = Recorder()
        self.engine = engine
        self.recorder = recorder
        self.exporter = None
        if export is not None:
            from loopnb.otel import exporter_for

            self.exporter = exporter_for(export)
        self.show = view
        self.max_fps = max_fps
        self.panes = checked_panes(panes, "NotebookRunner")
        """Your panes, drawn below loopnb's own in each run's view (``loopnb.notebook.Pane``)."""
        self.view: LiveView | None = None
        self.background: BackgroundRun | None = None
        self._busy = False  # a run() / arun() is going, or a start() is setting one up
        self._claim_lock = threading.Lock()

    def _claim(self, what: str, task: object) -> None:
        """Refuse a task that is not a str, or a second run while one goes (before any view is
        made); else claim the runner, in the same step: ``_release`` gives it back."""
        if not isinstance(task, str):
            raise TypeError(f"NotebookRunner.{what}: task must be a str, got {type(task).__name__}")
        with self._claim_lock:
            background = self.background
            if background is not None and not background.done:
                raise RuntimeError(
                    f"NotebookRunner.{what}: a background run is still going ({background!r}); "
                    "stop it (runner.background.stop()) or wait for it (runner.background.wait()) first"
                )
            if self._busy:
                raise RuntimeError(f"NotebookRunner.{what}: another run of this runner is still going")
            self._busy = True

    def _release(self) -> None:
        with self._claim_lock:
            self._busy = False

    # -- blocking runs --------------------------------------------------------------------------

    def _attach(self, controls: Controls | None = None) -> tuple[LiveView | None, list[Callable[[], None]]]:
        view = LiveView(max_fps=self.max_fps, controls=controls, panes=self.panes) if self.show else None
        self.view = view
        detach = [self.engine.subscribe(self.recorder)]
        if self.exporter is not None:
            detach.append(self.engine.subscribe(self.exporter))
        if view is not None:
            detach.append(self.engine.subscribe(view))
        return view, detach

    def run(
        self, task: str, *, raise_hard: bool = True, cancel: CancelToken | None = None
    ) -> RunResult | LoopError:
        """Run ``task`` with the live view shown in this cell; returns the ``RunResult``.

        A hard error is shown in the view, then re-raised (``raise_hard=True``, as plain Python
        would) or returned. A kernel interrupt ends the run as ``Cancelled``, visibly.
        """
        self._claim("run", task)
        view: LiveView | None = None
        shown: _Shown | None = None
        detach: list[Any] = []
        try:
            view, detach = self._attach()
            shown = _Shown(view) if view is not None else None
            return self.engine.run(task, cancel=cancel or CancelToken())
        except LoopError as err:
            if raise_hard:
                raise
            return err
        finally:
            self._done(view, shown, detach)

    async def arun(
        self, task: str, *, raise_hard: bool = True, cancel: CancelToken | None = None
    ) -> RunResult | LoopError:
        """``run`` for ``await`` in a cell."""
        self._claim("arun", task)
        view: LiveView | None = None
        shown: _Shown | None = None
        detach: list[Any] = []
        try:
            view, detach = self._attach()
            shown = _Shown(view) if view is not None else None
            return await self.engine.arun(task, cancel=cancel or CancelToken())
        except LoopError as err:
            if raise_hard:
                raise
            return err
        finally:
            self._done(view, shown, detach)

    def _done(self, view: LiveView | None, shown: _Shown | None, detach: list[Callable[[], None]]) -> None:
        try:
            for unsubscribe in detach:
                unsubscribe()
            if view is not None:
                if not view.finished:  # the run never reported its end (it was never started)
                    view.finish()
                if shown is not None:
                    shown.refresh(view)
        finally:
            self._release()

    # -- background runs ----------------------------------------------------------------------

    def start(self, task: str, *, paused: bool = False, cancel: CancelToken | None = None) -> BackgroundRun:
        """Run ``task`` in the background with Pause / Step / Resume / Stop buttons.

        Returns at once (the cell ends, the buttons work). ``paused=True`` waits for Step or
        Resume before the first turn. ``handle.wait()`` blocks until the run is over.
        """
        self._claim("start", task)
        try:
            run = BackgroundRun(cancel=cancel or CancelToken(), paused=paused)
            view, detach = self._attach(controls=run if self.show else None)
            try:
                steps = self.engine.iter(task, cancel=run.cancel)  # the run takes its observers now
            finally:
                for unsubscribe in detach:
                    unsubscribe()
            shown = _Shown(view) if view is not None else None
            self.background = run
            run.launch(steps, view, shown)
        finally:
            self._release()  # from here on the background run itself holds the runner
        return run

    # -- the recording ------------------------------------------------------------------------

    @property
    def turns(self) -> pd.DataFrame:
        """One row per turn of every run so far (the recorder's frame)."""
        return self.recorder.turns

    @property
    def events(self) -> pd.DataFrame:
        """One row per event of every run so far (the recorder's frame)."""
        return self.recorder.events

    def save(self, path: str | Path) -> Path:
        """Save the recording (``.jsonl`` or ``.parquet``), replacing ``path``.

        Before any run there is nothing to save: ``ValueError``, and ``path`` is left alone (an
        empty recording written over yesterday's would lose it, and cannot be replayed).
        """
        if len(self.recorder) == 0:
            raise ValueError(
                f"NotebookRunner.save: nothing recorded yet, so {str(path)!r} was not written; "
                "run a task first (runner.run(task) or runner.start(task))"
            )
        return self.recorder.save(path)

    def recording(self) -> Recording:
        """Everything recorded so far, as a ``Recording`` (e.g. for ``loopnb.replay``)."""
        return self.recorder.recording()

    def __repr__(self) -> str:
        return f"NotebookRunner({self.engine!r}, view={self.show})"
