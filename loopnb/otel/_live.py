"""``LiveSpans``: an OpenTelemetry span processor that reads any agent's spans as they end.

Spans are read exactly as the ``otlp`` reader reads a trace (``loopnb.foreign._otlp``: its
``split_runs`` and ``write_run``), over what has ended so far, and the turns that can no
longer change are emitted to observers (a ``LiveView``, a ``Recorder``) in order.

When a turn is final: what the model read for a call is in the *next* model request's input
messages, so turn *k* is final once request *k + 1* has ended and no span started before that
request (a tool, a model request) is still open; the run's last turn, and how the run ended,
once its agent span has ended with nothing of the run left open. A trace with no agent span
ends with its root span (or when watching stops). Until then a run's events are decoded again
as spans end, and only the prefix before its last turn is emitted: the prefix of what the whole
trace gives, so no turn is emitted twice or differently from ``loopnb.from_otel(spans)``.

What the whole trace may still change is kept as it was first emitted: the ``RunStarted``,
written with the models, tools and system prompt of the requests seen by then (a later request
that offers more adds nothing), and, in a trace where model requests outside any agent span come
before an agent run, that agent run's id (the first one emitted keeps the trace's id; no id is
used twice). Runs of one trace (an agent called from another's tool) are emitted as each turn
is final, so their events interleave in the recorder where the reader lists run after run.
"""

from __future__ import annotations

import contextlib
import math
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

try:
    from opentelemetry.sdk.trace import SpanProcessor
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "loopnb.otel.LiveSpans reads spans in the OpenTelemetry SDK: pip install 'loopnb[otel]'"
    ) from exc

from loopnb.engine._errors import LoopnbWarning, exception_text
from loopnb.engine._events import Event
from loopnb.foreign import _otlp
from loopnb.foreign import _otlp_genai as g
from loopnb.foreign._otlp_spans import Span, decode_objects

if TYPE_CHECKING:
    import pandas as pd

    from loopnb.record import Recorder, Recording

Observer = Callable[[Event], None]


@dataclass(slots=True)
class _Shown:
    """What has been emitted of one run (a trace's agent span, or the trace's agent-less run)."""

    run_id: str
    emitted: int = 0
    done: bool = False
    broken: bool = False


@dataclass(slots=True)
class _Trace:
    """The spans of one trace seen so far: each as it started, replaced by it as it ended."""

    spans: dict[str, Span] = field(default_factory=dict)
    open: set[str] = field(default_factory=set)
    root_ended: bool = False
    parsed: dict[str, _otlp.Messages] = field(default_factory=dict)
    """Each ended model request's messages, read once (a request holds the whole history so far)."""
    shown: dict[str | None, _Shown] = field(default_factory=dict)
    """What was emitted of each run, by its agent span's id (``None``: the agent-less run)."""


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
    """

    def __init__(self, *observers: Observer, recorder: Recorder | None = None) -> None:
        if recorder is None:
            from loopnb.record import Recorder

            recorder = Recorder()
        self.recorder = recorder
        self.errors: list[str] = []
        """What could not be read or delivered, one line each."""
        self._observers: list[Observer] = [recorder, *observers]
        self._lock = threading.Lock()
        self._traces: dict[str, _Trace] = {}
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

        The runs of traces with no agent span, whose end no span marks, are emitted whole first;
        a run still going is left where it was. The SDK cannot take a processor off a provider:
        a stopped one stays on it and does nothing.
        """
        with self._lock:
            if self._watching:
                self._watching = False
                for trace_id, trace in list(self._traces.items()):
                    if not trace.open:
                        self._update(trace_id, trace, None, flush=True)
        self._deliver()
        return self.recording()

    # -- the SDK's side ------------------------------------------------------------------------

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        """Note the span (what it is, where it hangs) before any of it has ended."""
        if not self._watching:
            return
        try:
            decoded = _decode(span)
            with self._lock:
                trace = self._traces.setdefault(decoded.trace_id, _Trace())
                trace.spans[decoded.span_id] = decoded
                trace.open.add(decoded.span_id)
        except Exception as exc:
            self._fail(f"a span that started could not be read ({_what(span)}): {exception_text(exc)}")

    def on_end(self, span: Any) -> None:
        """Read the span in, and emit the turns it made final."""
        if not self._watching:
            return
        try:
            decoded = _decode(span)
            with self._lock:
                trace = self._traces.setdefault(decoded.trace_id, _Trace())
                trace.spans[decoded.span_id] = decoded
                trace.open.discard(decoded.span_id)
                if decoded.parent_id is None:
                    trace.root_ended = True
                if decoded.parent_id is None or _moves(trace, decoded):
                    self._update(decoded.trace_id, trace, decoded)
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
                    trace.open.discard(span_id)
                    trace.spans.pop(span_id, None)
        except Exception:  # no ids to forget it by: it was never noted either
            pass

    def shutdown(self) -> None:
        """The provider shuts down: ``stop``."""
        self.stop()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Nothing is held back: every final turn was delivered as its span ended."""
        return True

    # -- decoding --------------------------------------------------------------------------------

    def _update(self, trace_id: str, trace: _Trace, ended: Span | None, *, flush: bool = False) -> None:
        """Decode the runs of ``trace`` that ``ended`` belongs to (all of them when it is the root
        or when flushing) and queue their new final events. Called under the lock."""
        runs = _otlp.split_runs(list(trace.spans.values()))
        everything = flush or ended is None or ended.parent_id is None
        for run in runs:
            owner = run.agent.span_id if run.agent is not None else None
            shown = trace.shown.get(owner)
            if shown is not None and (shown.done or shown.broken):
                continue
            if not everything and ended is not None and not _holds(run, ended.span_id):
                continue
            try:
                self._emit(trace_id, owner, run, trace, flush)
            except Exception as exc:
                shown = trace.shown.setdefault(owner, _Shown(run.run_id))
                shown.broken = True
                self._fail(
                    f"run {shown.run_id} could not be read on ({exception_text(exc)}); "
                    "it is shown as far as it got"
                )
        over = all(s.done or s.broken for s in trace.shown.values())
        if over and not trace.open and (trace.root_ended or flush):
            del self._traces[trace_id]  # nothing of it can change: its spans are not kept

    def _emit(self, trace_id: str, owner: str | None, run: _otlp.Run, trace: _Trace, flush: bool) -> None:
        events, final = _final_events(run, trace, flush)
        if not events:
            return
        shown = trace.shown.get(owner)
        if shown is None:
            shown = trace.shown[owner] = _Shown(self._fresh_id(run.run_id, trace_id, owner))
            self._runs += 1
        if len(events) < shown.emitted:
            raise ValueError(f"the trace now gives {len(events)} events where {shown.emitted} were shown")
        new = events[shown.emitted :]
        if run.run_id != shown.run_id:
            new = [replace(e, run_id=shown.run_id) for e in new]
        self._outbox.extend(new)
        shown.emitted = len(events)
        shown.done = final

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
        self.errors.append(message)
        with contextlib.suppress(Exception):  # a warning made an error must not reach the agent either
            warnings.warn(f"loopnb.otel.LiveSpans: {message}", LoopnbWarning, stacklevel=3)

    def __repr__(self) -> str:
        state = "watching" if self._watching else "stopped"
        return f"LiveSpans({state}, runs={self._runs}, errors={len(self.errors)})"


def _decode(span: Any) -> Span:
    decoded = decode_objects([span]).spans
    if len(decoded) != 1:
        raise ValueError(f"expected one span, found {len(decoded)}")
    return decoded[0]


def _what(span: Any) -> str:
    name = getattr(span, "name", None)
    return f"{type(span).__name__} {name!r}" if isinstance(name, str) else type(span).__name__


def _moves(trace: _Trace, ended: Span) -> bool:
    """Whether ``ended`` can make a turn final: an agent span or a model request; a tool span
    only when a model request that started after it has ended already (it held that one back)."""
    role = g.role_of(ended)
    if role in ("agent", "chat"):
        return True
    if role != "tool":
        return False
    start = ended.start or 0.0
    return any(
        s.end is not None and (s.start or 0.0) > start and g.role_of(s) == "chat"
        for s in trace.spans.values()
    )


def _holds(run: _otlp.Run, span_id: str) -> bool:
    """Whether ``span_id`` is one of the spans a turn of ``run`` is read from."""
    if run.agent is not None and run.agent.span_id == span_id:
        return True
    return any(s.span_id == span_id for s in run.chats) or any(s.span_id == span_id for s in run.tools)


def _final_events(run: _otlp.Run, trace: _Trace, flush: bool) -> tuple[list[Event], bool]:
    """The events of ``run`` that no span still to come can change, and whether that is all of them."""
    pending = [s.start or 0.0 for s in (*run.chats, *run.tools) if s.end is None]
    if run.agent is not None:
        over = run.agent.end is not None and not pending
    else:
        over = not pending and not trace.open and (trace.root_ended or flush)
    if over:
        return _otlp.write_run(run, _parsed(trace, run.chats)), True
    cut = min(pending, default=math.inf)
    chats = [c for c in run.chats if c.end is not None and (c.start or 0.0) < cut]
    if not chats:
        return [], False
    tools = [t for t in run.tools if t.end is not None and (t.start or 0.0) < cut]
    events = _otlp.write_run(_otlp.Run(run.run_id, run.agent, chats, tools), _parsed(trace, chats))
    last = max(i for i, e in enumerate(events) if e.kind == "turn_started")
    return events[:last], False


def _parsed(trace: _Trace, chats: list[Span]) -> list[_otlp.Messages]:
    """``g.messages`` of each of ``chats`` (all ended), each read once."""
    cache = trace.parsed
    out = []
    for chat in chats:
        found = cache.get(chat.span_id)
        if found is None:
            found = cache[chat.span_id] = g.messages(chat)
        out.append(found)
    return out
