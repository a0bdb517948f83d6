"""``LiveSpans``: an OpenTelemetry span processor that reads any agent's spans as they end.

Spans are read exactly as the ``otlp`` reader reads a trace (``loopnb.foreign._otlp``): each
placed in its run as it starts (``_otlp_runs.Tree``), and each run's turns written by the
reader's own ``RunReader`` as they become final, then emitted to observers (a ``LiveView``, a
``Recorder``) in order.

When a turn is final: what the model read for a call is in the *next* model request's input
messages, so turn *k* is final once request *k + 1* has ended and no span started before that
request (a tool, a model request) is still open; the run's last turn, and how the run ended,
once its agent span has ended with nothing of the run left open. A trace with no agent span
ends with its root span (or when watching stops). A turn is written once, when it is final,
from what the reader keeps (the next request's messages, the tool spans not yet placed): what
a span costs does not grow with the run, and no turn is emitted twice or differently from
``loopnb.from_otel(spans)``.

What the whole trace may still change is kept as it was first emitted: the ``RunStarted``, written
with the models, tools and system prompt of the requests seen by then (a later request that offers
more adds nothing), and, in a trace where model requests outside any agent span come before an agent
run, that agent run's id (the first one emitted keeps the trace's id; no id is used twice). A turn
is written while its agent span is open, so a failed tool call the run went on from reads as handled
(``otlp:ERROR:handled``); only a run span that then ends ``ERROR`` with that tool's own error, or no
class (nothing tells them apart), makes ``from_otel`` say ``otlp:ERROR`` instead. Runs of one trace
(an agent called from another's tool) are emitted as each turn is final, so their events interleave
in the recorder where the reader lists run after run.

An agent span left open when its run failed (OpenInference's smolagents, as the model raises)
is let go once the trace says so: nothing of the run is open, its last model request failed
(``Run.stuck``), and then an agent span starts directly under it (the process's next run), its
trace's root span ends, or watching stops (until then the framework may try again). The run ends
hard on that request, as ``from_otel`` reads the spans that ended. Any other span that never ends
(a crashed agent, a leaked span) would hold its run's turns and its trace forever, so what is kept
is bounded: ``max_open`` spans open at once (past it, the one that started first is given up on:
its run is read on without it, as from a file of the ended spans, and it is not read if it ends
after all) and ``max_traces`` traces in progress (past it, the one seen least recently is written
as far as it can be and let go). Each is said in ``errors`` (which keeps ``ERRORS_KEPT`` lines
and counts the rest) and a ``LoopnbWarning``. A trace in progress also keeps where each of its
spans hung, and the recorder every event.
"""

from __future__ import annotations

import bisect
import contextlib
import math
import threading
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

try:
    from opentelemetry.sdk.trace import SpanProcessor
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "loopnb.otel.LiveSpans reads spans in the OpenTelemetry SDK: pip install 'loopnb[otel]'"
    ) from exc

from loopnb.engine._errors import LoopnbWarning, exception_text
from loopnb.engine._events import Event
from loopnb.foreign import _otlp_genai as g
from loopnb.foreign._otlp import RunReader
from loopnb.foreign._otlp_runs import key, run_id
from loopnb.foreign._otlp_spans import Span, decode_objects, readable
from loopnb.otel._traces import Run, Trace, remember

if TYPE_CHECKING:
    import pandas as pd

    from loopnb.record import Recorder, Recording

Observer = Callable[[Event], None]

ERRORS_KEPT = 1000
"""How many lines ``LiveSpans.errors`` keeps; later ones are counted in its last line."""


class LiveSpans(SpanProcessor):
    """Feeds loopnb observers from the spans of any OpenTelemetry-instrumented agent, turn by turn.

    Add it to an SDK ``TracerProvider`` (``provider.add_span_processor(live)``) that the agent
    is traced into (pydantic-ai: ``Agent.instrument_all(InstrumentationSettings(tracer_provider=
    provider))``); ``loopnb.watch()`` does this and shows a ``LiveView``. Every event goes to
    ``recorder`` first, then to each observer, in order, on the thread whose span ended.

    Nothing a span holds and nothing an observer raises reaches the traced agent: a span that
    cannot be read, or a run that cannot be decoded, is noted in ``errors`` (with a
    ``LoopnbWarning``) and that run is left as far as it was shown; an observer that raises is
    detached, as an engine detaches one.

    Args:
        *observers: Called with every event, in order (a ``LiveView``, any callable).
        recorder: Records every event (default: a fresh ``loopnb.Recorder()``).
        max_open: How many spans may be open at once; past it the one that started first is
            given up on (it never ended, or will too late to be read).
        max_traces: How many traces may be in progress at once; past it the one seen least
            recently is let go (written as far as it can be, its later spans not read).
    """

    def __init__(
        self,
        *observers: Observer,
        recorder: Recorder | None = None,
        max_open: int = 10_000,
        max_traces: int = 1_000,
    ) -> None:
        for name, value in (("max_open", max_open), ("max_traces", max_traces)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"LiveSpans: {name} must be an int >= 1, got {value!r}")
        self.max_open, self.max_traces = max_open, max_traces
        if recorder is None:
            from loopnb.record import Recorder

            recorder = Recorder()
        self.recorder = recorder
        self.errors: list[str] = []
        """What could not be read or delivered, one line each."""
        self._observers: list[Observer] = [recorder, *observers]
        self._lock = threading.Lock()
        self._traces: dict[str, Trace] = {}
        """The traces in progress, the one seen least recently first."""
        self._open: dict[tuple[str, str], None] = {}
        """Every open span (trace id, span id), the one that started first first."""
        self._given_up: dict[tuple[str, str], None] = {}
        """The latest ``GONE_KEPT`` spans given up on (not read if they end after all)."""
        self._let_go: dict[str, None] = {}
        """The latest ``GONE_KEPT`` traces let go (their later spans are not read)."""
        self._unkept = 0
        self._ids: set[str] = set()
        self._runs = 0
        self._outbox: list[Event] = []
        self._delivering = False
        self._watching = True

    # -- observers ------------------------------------------------------------------------------

    def subscribe(self, observer: Observer) -> Callable[[], None]:
        """Call ``observer`` with every event from now on; returns a function that detaches it."""
        with self._lock:
            self._observers.append(observer)

        def unsubscribe() -> None:
            with self._lock:
                self._observers = [o for o in self._observers if o is not observer]

        return unsubscribe

    @property
    def watching(self) -> bool:
        """False once ``stop`` (or the provider's ``shutdown``) was called."""
        return self._watching

    def recording(self) -> Recording:
        """Everything emitted so far, as a ``Recording`` (redacted as the recorder's is)."""
        return self.recorder.recording()

    @property
    def turns(self) -> pd.DataFrame:
        """One row per turn emitted so far (the recorder's frame)."""
        return self.recorder.turns

    def stop(self) -> Recording:
        """Stop reading spans and return the ``Recording`` of what was seen.

        The runs of traces with no agent span, whose end no span marks, are emitted whole first,
        and a run whose agent span was left open as its last model request failed ends hard on
        that request; a run still going is left where it was. The SDK cannot take a processor off
        a provider: a stopped one stays on it and does nothing.
        """
        self._halt()
        return self.recording()

    def _halt(self) -> None:
        with self._lock:
            if self._watching:
                self._watching = False
                for trace_id, trace in list(self._traces.items()):
                    self._conclude(trace_id, trace, list(trace.runs.values()))
                    if trace_id in self._traces and not trace.open:
                        self._update(trace_id, trace, None, flush=True)
        self._deliver()

    # -- the SDK's side ------------------------------------------------------------------------

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        """Place the span in its run (what it is, where it hangs) before any of it has ended."""
        if not self._watching:
            return
        try:
            decoded = _decode(span, started=True)
            with self._lock:
                trace = self._trace(decoded.trace_id)
                if trace is None:
                    return
                trace.open[decoded.span_id] = decoded
                trace.place(decoded, ended=False)
                stuck = trace.moved_on(decoded)
                if stuck is not None:  # the next run, where a run whose agent span never ended was
                    self._conclude(decoded.trace_id, trace, [stuck])
                self._open[(decoded.trace_id, decoded.span_id)] = None
                while len(self._open) > self.max_open:
                    self._give_up(*next(iter(self._open)))
        except Exception as exc:
            self._fail(f"a span that started could not be read ({_what(span)}): {exception_text(exc)}")
        self._deliver()

    def on_end(self, span: Any) -> None:
        """Read the span in, and emit the turns it made final."""
        if not self._watching:
            return
        try:
            decoded = _decode(span)
            with self._lock:
                ids = (decoded.trace_id, decoded.span_id)
                trace = None if ids in self._given_up else self._trace(decoded.trace_id)
                if trace is None:
                    return
                self._open.pop(ids, None)
                trace.place(decoded, ended=True)
                if decoded.parent_id is None:
                    trace.root_ended = True
                    self._conclude(decoded.trace_id, trace, list(trace.runs.values()))
                    self._update(decoded.trace_id, trace, None)
                else:
                    moved = trace.moves(decoded)
                    if moved is not None:
                        self._update(decoded.trace_id, trace, [moved])
        except Exception as exc:
            self._forget(span)
            self._fail(f"a span that ended could not be read ({_what(span)}): {exception_text(exc)}")
        self._deliver()

    def _forget(self, span: Any) -> None:
        """A span that cannot be read is left out: it no longer holds its run open."""
        try:
            context = span.context
            trace = self._traces.get(format(context.trace_id, "032x"))
            if trace is not None:
                span_id = format(context.span_id, "016x")
                with self._lock:
                    self._open.pop((format(context.trace_id, "032x"), span_id), None)
                    trace.open.pop(span_id, None)
                    for run in trace.runs.values():
                        run.open.pop(span_id, None)
        except Exception:  # no ids to forget it by: it was never noted either
            pass

    def shutdown(self) -> None:
        """The provider shuts down: stop, as ``stop`` does (the recording is not built)."""
        self._halt()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Nothing is held back: every final turn was delivered as its span ended."""
        return True

    # -- what is kept --------------------------------------------------------------------------

    def _trace(self, trace_id: str) -> Trace | None:
        """The trace ``trace_id``, now the one seen most recently (made if new); ``None`` if it was
        let go. A new trace past ``max_traces`` lets the least recent go. Under the lock."""
        if trace_id in self._let_go:
            return None
        trace = self._traces.pop(trace_id, None)
        self._traces[trace_id] = trace = trace if trace is not None else Trace()
        while len(self._traces) > self.max_traces:
            self._let_trace_go(next(iter(self._traces)))
        return trace

    def _stop_waiting(self, trace_id: str, span_id: str) -> None:
        """Span ``span_id`` is open no longer, and not read if it ends after all. Under the lock."""
        self._open.pop((trace_id, span_id), None)
        remember(self._given_up, (trace_id, span_id))

    def _give_up(self, trace_id: str, span_id: str) -> None:
        """Stop waiting for span ``span_id`` to end, and read its run on without it. Under the lock."""
        self._stop_waiting(trace_id, span_id)
        trace = self._traces.get(trace_id)
        span = trace.open.get(span_id) if trace is not None else None
        if trace is None or span is None:
            return
        run = trace.give_up(span_id)
        self._fail(
            f"span {span_id} {span.name!r} of trace {trace_id} is still open after {self.max_open} later "
            f"spans started (max_open): given up on; its run is read on without it"
        )
        self._update(trace_id, trace, None if trace.root_ended else [run] if run is not None else [])

    def _conclude(self, trace_id: str, trace: Trace, runs: list[Run]) -> None:
        """End the runs of ``runs`` that the trace says are over though their agent span is still
        open (``Run.stuck``): read on without that span, as ``from_otel`` reads the spans that
        ended. Under the lock."""
        stuck = [(run, run.agent.span_id) for run in runs if run.stuck and run.agent is not None]
        for _, span_id in stuck:
            self._stop_waiting(trace_id, span_id)
            trace.give_up(span_id)
        if stuck:
            self._update(trace_id, trace, [run for run, _ in stuck], flush=True)

    def _let_trace_go(self, trace_id: str) -> None:
        """Write what can be written of trace ``trace_id`` and forget it. Under the lock."""
        trace = self._traces[trace_id]
        held = list(trace.open)
        for span_id in held:
            self._open.pop((trace_id, span_id), None)
            trace.give_up(span_id)
        self._update(trace_id, trace, None, flush=True)
        self._traces.pop(trace_id, None)
        remember(self._let_go, trace_id)
        self._fail(
            f"trace {trace_id} was let go, {len(held)} of its spans still open, to keep at most "
            f"{self.max_traces} traces in progress (max_traces): its runs are shown as far as they got "
            "and its later spans are not read"
        )

    # -- decoding --------------------------------------------------------------------------------

    def _update(self, trace_id: str, trace: Trace, runs: list[Run] | None, *, flush: bool = False) -> None:
        """Write and queue the new final events of ``runs`` of ``trace`` (``None``: all of them,
        in the reader's order, when its root span has ended or when flushing). Under the lock."""
        if runs is None:
            runs = sorted(trace.runs.values(), key=lambda r: r.first if r.agent is None else key(r.agent))
        for run in runs:
            around = run.agent is not None and g.entry_chain(run.agent)  # a crew's kickoff, say
            if run.done or run.broken or ((run.owner is None or around) and not run.has_chat):
                continue
            try:
                self._advance(trace_id, trace, run, flush)
            except Exception as exc:
                run.broken = True
                reader = run.reader
                shown = reader.writer.run_id if reader is not None else self._run_id(trace_id, trace, run)
                self._fail(
                    f"run {shown} could not be read on ({exception_text(exc)}); it is shown as far as it got"
                )
        over = all(r.done or r.broken for r in trace.runs.values() if r.reader is not None)
        if over and not trace.open and (trace.root_ended or flush):
            self._traces.pop(trace_id, None)  # nothing of it can change: it is not kept

    def _advance(self, trace_id: str, trace: Trace, run: Run, flush: bool) -> None:
        """Write the turns of ``run`` that no span still to come can change, and queue them."""
        if run.owner is not None:  # an agent span given up on ends its run only as its trace does
            ended = run.agent is not None and (run.agent.end is not None or (flush and run.agent_given_up))
            over = ended and not run.open
        else:
            over = not run.open and not trace.open and (trace.root_ended or flush)
        rest = run.chats
        if not over:  # the requests that started before anything still open
            cut = min(run.open.values(), default=math.inf)
            rest = rest[: bisect.bisect_left(rest, (cut, -math.inf), key=key)]
            if run.reader is None and not rest:
                return
        if run.reader is None:
            fresh = self._fresh_id(self._run_id(trace_id, trace, run), trace_id, run.owner)
            run.reader = RunReader(fresh, run.agent, rest)
            for tool in run.tools:
                run.reader.tool(tool)
            for span in run.failed:
                run.reader.steps.add(span)
            run.tools, run.failed = [], []
            self._runs += 1
        agent = None if run.agent_given_up else run.agent  # as it started: it says nothing of the end
        written = run.reader.turns(rest, agent, end=over)
        del run.chats[:written]
        events = run.reader.writer.events
        self._outbox.extend(events)
        events.clear()
        run.done = over

    @staticmethod
    def _run_id(trace_id: str, trace: Trace, run: Run) -> str:
        return run_id(trace_id, run.owner, trace.lead[-1] if trace.lead is not None else None)

    def _fresh_id(self, run_id: str, trace_id: str, owner: str | None) -> str:
        """``run_id``, unless an earlier run was shown with it: then one named after the span."""
        if run_id in self._ids:
            run_id = f"{trace_id}-{owner or 'trace'}"
            while run_id in self._ids:
                run_id += "'"
        self._ids.add(run_id)
        return run_id

    # -- delivery --------------------------------------------------------------------------------

    def _deliver(self) -> None:
        """Hand the queued events to the observers, in order, one thread at a time."""
        if not self._outbox:  # most spans make no turn final (a thread that queues one delivers it)
            return
        while True:
            with self._lock:
                if self._delivering or not self._outbox:
                    return
                self._delivering = True
                batch, self._outbox = self._outbox, []
                observers = list(self._observers)
            try:
                for event in batch:
                    for observer in list(observers):
                        if not self._call(observer, event):
                            observers.remove(observer)
            finally:
                with self._lock:
                    self._delivering = False

    def _call(self, observer: Observer, event: Event) -> bool:
        try:
            observer(event)
            return True
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            with self._lock:
                self._observers = [o for o in self._observers if o is not observer]
            name = getattr(observer, "__qualname__", type(observer).__qualname__)
            self._fail(f"observer {name} raised {type(exc).__name__}: {exception_text(exc)}; it was detached")
            return False

    def _fail(self, message: str) -> None:
        if len(self.errors) >= ERRORS_KEPT:  # the first ones say what went wrong; the rest are counted
            self._unkept += 1
            more = f"and {self._unkept} more not kept (errors keeps {ERRORS_KEPT} lines)"
            if self._unkept > 1:
                self.errors[-1] = more
                return
            self.errors.append(more)
            message = more + "; no more are warned of"
        else:
            self.errors.append(message)
        with contextlib.suppress(Exception):  # a warning made an error must not reach the agent either
            warnings.warn(f"loopnb.otel.LiveSpans: {message}", LoopnbWarning, stacklevel=3)

    def __repr__(self) -> str:
        state = "watching" if self._watching else "stopped"
        return f"LiveSpans({state}, runs={self._runs}, errors={len(self.errors)})"


def _decode(span: Any, *, started: bool = False) -> Span:
    if not isinstance(span, (dict, list)):  # an SDK span, as the SDK hands every one over
        return readable(span, f"span 0 ({getattr(span, 'name', '?')})", started=started)
    decoded = decode_objects([span]).spans
    if len(decoded) != 1:
        raise ValueError(f"expected one span, found {len(decoded)}")
    return decoded[0]


def _what(span: Any) -> str:
    name = getattr(span, "name", None)
    return f"{type(span).__name__} {name!r}" if isinstance(name, str) else type(span).__name__
