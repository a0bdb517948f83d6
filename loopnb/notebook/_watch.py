"""``loopnb.watch()``: the live view of any OpenTelemetry-instrumented agent running in the kernel."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from loopnb.engine._events import Event
from loopnb.notebook._live import LiveView
from loopnb.notebook._panes import Pane

if TYPE_CHECKING:
    import pandas as pd

    from loopnb.otel._live import LiveSpans
    from loopnb.record import Recorder, Recording


class WatchView(LiveView):
    """A ``LiveView`` fed by a ``LiveSpans`` processor: it follows each traced run turn by turn.

    The view shows one run at a time: a run that starts while another is on screen waits, and is
    shown (caught up at once, then live) when that one ends; the recorder keeps every run.
    ``stop()`` stops watching and returns the ``Recording`` of what was seen.
    """

    def __init__(
        self, spans: LiveSpans, *, max_fps: float = 10.0, title: str, panes: Iterable[Pane] = ()
    ) -> None:
        super().__init__(max_fps=max_fps, title=title, panes=panes)
        self.spans = spans
        """The processor feeding the view (on ``provider``)."""
        self.provider: Any = None
        """The tracer provider it was installed on."""
        self._screen_run: str | None = None
        self._backlog: dict[str, list[Event]] = {}
        self._unsubscribe = spans.subscribe(self._feed)

    def _feed(self, event: Event) -> None:
        """Show ``event`` if it is of the run on screen (or starts one); else keep it for later.
        ``LiveSpans`` delivers from one thread at a time, in order."""
        if self._screen_run is None:
            self._screen_run = event.run_id
        if event.run_id != self._screen_run:
            self._backlog.setdefault(event.run_id, []).append(event)
            return
        self(event)
        if event.kind == "run_finished":
            self._next_run()

    def _next_run(self) -> None:
        """Put the run that has waited longest on screen: what it did so far at once."""
        self._screen_run = None
        while self._backlog:
            run_id = next(iter(self._backlog))
            backlog = self._backlog.pop(run_id)
            self._screen_run = run_id
            for event in backlog:
                self(event)
            if backlog[-1].kind != "run_finished":
                return
            self._screen_run = None

    def stop(self) -> Recording:
        """Stop watching (the processor stays on the provider, inert) and return what was seen."""
        recording = self.spans.stop()
        self._unsubscribe()
        self.set_note("stopped watching")
        if not self.finished:
            self.finish()
        return recording

    def recording(self) -> Recording:
        """What was seen so far, as a ``Recording``."""
        return self.spans.recording()

    @property
    def turns(self) -> pd.DataFrame:
        """One row per turn seen so far, over every run."""
        return self.spans.turns

    def __repr__(self) -> str:
        state = "watching" if self.spans.watching else "stopped"
        return f"WatchView({state}, runs={len(self.spans.recorder.run_ids)}, errors={len(self.spans.errors)})"


def watch(
    tracer_provider: Any = None,
    *,
    recorder: Recorder | None = None,
    max_fps: float = 10.0,
    display: bool = True,
    panes: Iterable[Pane] = (),
) -> WatchView:
    """Watch any OpenTelemetry-instrumented agent in the kernel: the live view, turn by turn.

    ``view = loopnb.watch()`` in one cell, ``agent.run_sync(...)`` in the next: the four panes
    follow each run as its spans end, read as the ``otlp`` reader reads a trace. ``view.stop()``
    stops watching and returns the ``Recording``; ``view.turns`` is the frame so far.

    Args:
        tracer_provider: The SDK ``TracerProvider`` the agent is traced into. ``None``: the
            global one when it is an SDK provider; when no global provider is set yet, a new
            SDK ``TracerProvider`` is made and **set as the global one** (OpenTelemetry lets a
            process set it once), so that instrumentation using the global provider
            (pydantic-ai's ``Agent.instrument_all()``) is watched.
        recorder: Records every event (default: a fresh ``loopnb.Recorder()``).
        max_fps: The most redraws a second.
        display: Show the view in the current cell (in IPython; assign the result, so that the
            cell does not show it twice).
        panes: Your own panes, drawn below loopnb's (``loopnb.notebook.Pane``).

    Raises:
        TypeError: ``tracer_provider`` is not an SDK ``TracerProvider``, or (``None``) the
            global provider is set to one that is not.
    """
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider

    provider = tracer_provider
    if provider is None:
        current = trace.get_tracer_provider()
        if isinstance(current, TracerProvider):
            provider = current
        elif isinstance(current, trace.ProxyTracerProvider):
            provider = TracerProvider()
            trace.set_tracer_provider(provider)
        else:
            raise TypeError(
                f"loopnb.watch: the global tracer provider is a {type(current).__name__}, not an SDK "
                "TracerProvider, so no span processor can be added to it; pass the SDK provider your "
                "agent is traced into: loopnb.watch(provider)"
            )
    elif not isinstance(provider, TracerProvider):
        raise TypeError(
            "loopnb.watch: tracer_provider must be an OpenTelemetry SDK TracerProvider "
            f"(opentelemetry.sdk.trace.TracerProvider), got {type(provider).__name__}"
        )
    from loopnb.otel._live import LiveSpans  # the OpenTelemetry SDK, an extra: loaded when watching

    spans = LiveSpans(recorder=recorder)
    view = WatchView(spans, max_fps=max_fps, title="loopnb · watching OpenTelemetry spans", panes=panes)
    view.provider = provider
    provider.add_span_processor(spans)
    if display:
        _show(view)
    return view


def _show(view: WatchView) -> None:
    """Display ``view`` in the running IPython cell, its saved picture refreshed as each run ends."""
    try:
        from IPython.core.interactiveshell import InteractiveShell
        from IPython.display import display
    except ImportError:  # pragma: no cover - IPython is a dependency of the notebook layer
        return
    if not InteractiveShell.initialized():
        return
    handle = display(view, display_id=True)
    if handle is not None:
        view.on_finish(handle.update)
