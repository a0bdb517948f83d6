"""loopnb's runs as OpenTelemetry spans, the soft/hard line drawn between the spans.

The profile (GenAI semantic conventions, plus loopnb's own attributes where they have none):

- one ``invoke_agent`` span per run (``gen_ai.operation.name = "invoke_agent"``, kind
  ``INTERNAL``: the agent runs in this process), its children:
- one ``chat {model}`` span per model request (kind ``CLIENT``; ``gen_ai.request.model``,
  ``gen_ai.response.model``, ``gen_ai.usage.input_tokens`` / ``output_tokens``);
- one ``execute_tool {name}`` span per dispatch attempt of a tool call (kind ``INTERNAL``;
  ``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``loopnb.recovery.attempt``,
  ``loopnb.recovery.ceiling``, ``loopnb.breaker.state``).

Errors are recorded as the conventions' "Recording Errors" says: an operation that failed has
status ``ERROR`` and ``error.type``; an error handled so that the enclosing operation goes on is
not recorded on the enclosing span. So a tool call that failed (every soft producer: the tool's
error, a panic, invalid arguments, a timeout, a hook's veto, an open breaker, the loop detector's
refusal, a registry miss) is an ``execute_tool`` span with status ``ERROR`` and ``error.type`` its
producer, and so is each failed attempt a recovery strategy retried; the run that went on is an
``invoke_agent`` span that is never ``ERROR`` because of a tool. Only a hard ending sets ``ERROR``
on ``invoke_agent``, with ``error.type`` the ``LoopError`` variant's name and the message as the
status description. A failed model request is a ``chat`` span with status ``ERROR`` and
``error.type`` ``ModelUnavailable`` (and ``http.response.status_code`` when it had one); a final
answer the run turned down is not a failed request: its ``chat`` span stays unset.

Every tool and agent span carries ``loopnb.channel`` (ok / soft / hard: what reached the model) and,
when not ok, ``loopnb.producer``; the text the model read is the attribute ``loopnb.error_text`` (an
attempt the model never read keeps its own text there too, with ``loopnb.recovery.decision``: its
channel is ``ok`` when the call was dispatched again, ``hard`` when the ceiling refused the retry
and the run ended on it), never an exception event. ``error.type`` is a producer or a class name
from a small fixed set, never part of a failure's text (a server's refusal may quote the key it
refused). Every text leaves through the recorder's default redactor, as a saved recording's does:
span names, attributes, tools' and models' names too (a model chooses the names it calls; a model's
name may be a proxy's URL). With a ``meter_provider``, each span that ends adds its figures to the
conventions' GenAI metrics (``_metrics``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from loopnb.engine import MAX_RECOVERY_ATTEMPTS, LoopError
from loopnb.engine._events import (
    BreakerState,
    Event,
    HardErrorRaised,
    ModelFailed,
    ModelReplied,
    RecoveryDecided,
    RunFinished,
    RunStarted,
    SoftErrorReturned,
    ToolDispatched,
    TurnFinished,
)
from loopnb.foreign._otlp_profile import (
    ATTEMPT,
    BREAKER,
    CEILING,
    CHANNEL,
    DECISION,
    ERROR_TEXT,
    INJECTED,
    PRODUCER,
)
from loopnb.otel._metrics import Meters

MODEL_ERROR = "ModelUnavailable"
"""``error.type`` of a failed model request: ``ModelFailed`` keeps a failure's free text, not its
class, and the fallback chain counts every failure (a model's own exception too) as this family;
``http.response.status_code`` tells a refused key (401, 403) from the rest."""
LOOP_ERRORS = frozenset(cls.__name__ for cls in LoopError.__subclasses__())
"""``error.type`` of a hard ending: a ``LoopError`` variant's name, else ``LoopError``."""

_NS = 1_000_000_000


def _ns(seconds: float) -> int:
    return round(seconds * _NS)


@dataclass
class _Run:
    span: Any
    context: Any
    breakers: dict[str, BreakerState] = field(default_factory=dict)
    ceiling: int = MAX_RECOVERY_ATTEMPTS
    input_tokens: int = 0
    output_tokens: int = 0
    hard: HardErrorRaised | None = None
    reply: tuple[Any, int] | None = None
    """The turn's ``chat`` span and its end: ended with the turn (a rejected answer is marked on it)."""
    failed: dict[str, tuple[Any, int, ToolDispatched]] = field(default_factory=dict)
    """By call id, the span of a failed attempt not yet known to be read by the model, its end,
    and the dispatch: ended once the model reads it (``SoftErrorReturned``) or it is retried."""
    channels: dict[str, int] = field(default_factory=lambda: {"ok": 0, "soft": 0, "hard": 0})


class Exporter:
    """An engine observer that emits each run as OpenTelemetry spans (the module's profile).

    Args:
        tracer_provider: Where the spans go (an SDK ``TracerProvider`` with your exporter); the
            global provider when ``None``.
        agent: The agent's name on the run spans (``gen_ai.agent.name``).
        redact: Pass every text through loopnb's default redactor before it leaves (default).
        meter_provider: Where the GenAI metrics of the same spans go (each run's, model request's
            and tool call's duration, and the tokens: ``_metrics``); none when ``None``.

    ``engine.subscribe(Exporter(tracer_provider=provider))``, or
    ``NotebookRunner(engine, export=provider)``. Nothing the exporter or the SDK raises reaches
    the run: the engine contains an observer's failure.
    """

    def __init__(
        self,
        tracer_provider: Any = None,
        *,
        agent: str = "loopnb",
        redact: bool = True,
        meter_provider: Any = None,
    ) -> None:
        try:
            from opentelemetry import trace
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("OpenTelemetry export needs the SDK: pip install 'loopnb[otel]'") from exc

        from loopnb._version import __version__

        self._trace = trace
        self.tracer = trace.get_tracer("loopnb", __version__, tracer_provider=tracer_provider)
        self.agent = agent
        from loopnb.record import DEFAULT_REDACTOR, Redactor

        self._redact: Redactor | None = DEFAULT_REDACTOR if redact else None
        self._runs: dict[str, _Run] = {}
        self.provider = tracer_provider
        meters = (
            None
            if meter_provider is None
            else Meters(meter_provider, agent=self._text(agent), version=__version__)
        )
        self._meters = meters

    def _text(self, text: str) -> str:
        return self._redact(text) if self._redact is not None else text

    def _clean(self, attributes: dict[str, Any]) -> dict[str, Any]:
        """``attributes`` as they may leave: every text (alone or in a list) redacted."""
        return {key: self._value(value) for key, value in attributes.items()}

    def _value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self._text(value)
        return [self._value(v) for v in value] if isinstance(value, list | tuple) else value

    def __call__(self, event: Event) -> None:
        match event:
            case RunStarted():
                self._started(event)
            case ModelReplied():
                self._replied(event)
            case ModelFailed():
                self._failed(event)
            case ToolDispatched():
                self._dispatched(event)
            case RecoveryDecided():
                self._decided(event)
            case SoftErrorReturned():
                self._returned(event)
            case TurnFinished():
                self._turn_finished(event)
            case HardErrorRaised():
                self._hard(event)
            case RunFinished():
                self._finished(event)
                flush = getattr(self.provider, "force_flush", None)
                if flush is not None:
                    flush()
            case _:
                pass

    def _decided(self, e: RecoveryDecided) -> None:
        """A recovery decision: the ceiling the strategy was given, and on the attempt it retries,
        the decision (that attempt ends unread when the call is dispatched again, or with the turn's
        channel if the run ends first: the ceiling refused the retry)."""
        run = self._runs.get(e.run_id)
        if run is not None:
            run.ceiling = e.max_attempts
            if e.decision == "retry" and e.call_id in run.failed:
                run.failed[e.call_id][0].set_attribute(DECISION, "retry")

    def _returned(self, e: SoftErrorReturned) -> None:
        """A soft error the model read: a final answer turned down (no call), or a call's result."""
        if e.call_id is None:
            self._rejected(e)
        else:
            self._read(e)

    def _turn_finished(self, e: TurnFinished) -> None:
        """The turn's end: failed attempts the model never read end unread; the chat span ends."""
        run = self._runs.get(e.run_id)
        if run is not None:
            for call_id in list(run.failed):
                self._unread(run, call_id, e.channel, producer=e.producer)
            self._end_reply(run)
            run.breakers = dict(e.breakers)
            run.channels[e.channel] += 1

    def _hard(self, e: HardErrorRaised) -> None:
        """The hard error, kept for the run's span, which ``_finished`` ends."""
        run = self._runs.get(e.run_id)
        if run is not None:
            run.hard = e

    def _started(self, e: RunStarted) -> None:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": self.agent,
            "gen_ai.conversation.id": e.run_id,
            "loopnb.run_id": e.run_id,
            "loopnb.task": e.task,
        }
        if e.models:
            attributes["gen_ai.request.model"] = e.models[0]
        if e.tools:
            attributes["loopnb.tools"] = list(e.tools)
        span = self.tracer.start_span(
            self._text(f"invoke_agent {self.agent}"),
            kind=self._trace.SpanKind.INTERNAL,
            start_time=_ns(e.at),
            attributes=self._clean(attributes),
        )
        self._runs[e.run_id] = _Run(span, self._trace.set_span_in_context(span))

    def _child(self, run: _Run, name: str, start: float, end: float, attributes: dict[str, Any]) -> Any:
        # the conventions' kinds: a model request is a CLIENT span, a tool's execution INTERNAL
        tool = attributes["gen_ai.operation.name"] == "execute_tool"
        span = self.tracer.start_span(
            self._text(name),
            context=run.context,
            kind=self._trace.SpanKind.INTERNAL if tool else self._trace.SpanKind.CLIENT,
            start_time=_ns(start),
            attributes=self._clean(attributes),
        )
        return span, _ns(end)

    def _replied(self, e: ModelReplied) -> None:
        run = self._runs.get(e.run_id)
        if run is None:
            return
        reply = e.reply
        model = reply.model or ""
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": model,
            "gen_ai.response.model": model,
            "loopnb.turn": e.turn,
            CHANNEL: "ok",
        }
        if reply.usage is not None:
            attributes["gen_ai.usage.input_tokens"] = reply.usage.input_tokens
            attributes["gen_ai.usage.output_tokens"] = reply.usage.output_tokens
            run.input_tokens += reply.usage.input_tokens
            run.output_tokens += reply.usage.output_tokens
        if reply.tool_calls:
            attributes["gen_ai.response.finish_reasons"] = ["tool_calls"]
            attributes["loopnb.tool_calls"] = [c.name for c in reply.tool_calls]
        else:
            attributes["gen_ai.response.finish_reasons"] = ["stop"]
        self._end_reply(run)
        run.reply = self._child(run, f"chat {model}", e.at - e.latency_ms / 1000.0, e.at, attributes)

    def _rejected(self, e: SoftErrorReturned) -> None:
        """A soft error no call made (a final answer the run turned down), on the turn's ``chat``
        span: the request did not fail, so its status stays unset; what the model read is said."""
        run = self._runs.get(e.run_id)
        if run is None or run.reply is None:
            return
        span, _ = run.reply
        span.set_attributes(self._clean({CHANNEL: "soft", PRODUCER: e.producer, ERROR_TEXT: e.text}))

    def _failed(self, e: ModelFailed) -> None:
        run = self._runs.get(e.run_id)
        if run is None:
            return
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": e.model,
            "error.type": MODEL_ERROR,
            "loopnb.turn": e.turn,
            "loopnb.error": e.error,
            CHANNEL: "ok",  # the fallback chain answers for it; no error reached the model
        }
        if e.status is not None:
            attributes["http.response.status_code"] = e.status
        span, end = self._child(run, f"chat {e.model}", e.at - e.latency_ms / 1000.0, e.at, attributes)
        span.set_status(self._trace.Status(self._trace.StatusCode.ERROR))  # error.type says which
        self._end(span, end)

    def _dispatched(self, e: ToolDispatched) -> None:
        run = self._runs.get(e.run_id)
        if run is None:
            return
        result = e.result
        if result.call_id in run.failed:  # dispatched again: the model did not read that attempt
            self._unread(run, result.call_id, "ok")
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": result.name,
            "gen_ai.tool.call.id": result.call_id,
            "gen_ai.tool.type": "function",
            "loopnb.turn": e.turn,
            "loopnb.executed": e.executed,
            ATTEMPT: e.attempt,
            CEILING: run.ceiling,
            BREAKER: run.breakers.get(result.name, "closed"),
        }
        if e.injected is not None:  # a fault loopnb.inject put there (labels are ours, not the run's)
            attributes[INJECTED] = e.injected
        if not result.is_error:
            attributes[CHANNEL] = "ok"
        span, end = self._child(
            run, f"execute_tool {result.name}", e.at - e.latency_ms / 1000.0, e.at, attributes
        )
        if result.is_error:  # its channel once it is known whether the model reads it
            run.failed[result.call_id] = (span, end, e)
        else:
            self._end(span, end)

    def _read(self, e: SoftErrorReturned) -> None:
        """The model reads a call's error: on its last attempt's span, exactly the text it read."""
        run = self._runs.get(e.run_id)
        if run is None or e.call_id is None or e.call_id not in run.failed:
            return
        span, end, _ = run.failed.pop(e.call_id)
        span.set_attributes(self._clean({CHANNEL: "soft", PRODUCER: e.producer, ERROR_TEXT: e.text}))
        self._error(span, e.producer)
        self._end(span, end)

    def _error(self, span: Any, error_type: str) -> None:
        """A failed operation as "Recording Errors" says: status ERROR and ``error.type`` (a
        producer or a class name, never free text)."""
        span.set_attribute("error.type", error_type)
        span.set_status(self._trace.Status(self._trace.StatusCode.ERROR))

    def _unread(self, run: _Run, call_id: str, channel: str, *, producer: str | None = None) -> None:
        """A failed attempt the model never read (retried, or the run ended first), ended as such."""
        span, end, e = run.failed.pop(call_id)
        attributes: dict[str, Any] = {CHANNEL: channel, ERROR_TEXT: e.result.content}
        if channel != "ok" and producer is not None:
            attributes[PRODUCER] = producer
        span.set_attributes(self._clean(attributes))
        self._error(span, e.result.producer or "tool_error")  # the attempt failed, read or not
        self._end(span, end)

    def _finished(self, e: RunFinished) -> None:
        run = self._runs.pop(e.run_id, None)
        if run is None:
            return
        for call_id in list(run.failed):
            self._unread(run, call_id, "hard" if e.outcome == "hard" else "ok", producer=e.producer)
        self._end_reply(run)
        span = run.span
        span.set_attribute(CHANNEL, e.outcome)
        span.set_attribute("loopnb.turns", e.turns)
        for channel, n in run.channels.items():
            span.set_attribute(f"loopnb.turns.{channel}", n)
        if run.input_tokens or run.output_tokens:
            span.set_attribute("gen_ai.usage.input_tokens", run.input_tokens)
            span.set_attribute("gen_ai.usage.output_tokens", run.output_tokens)
        if e.outcome == "hard":
            message = self._text(e.message or "")
            if e.producer is not None:
                span.set_attribute(PRODUCER, e.producer)
            kind = e.error if e.error in LOOP_ERRORS else "LoopError"
            span.set_attribute("error.type", kind)
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, message))
        elif e.output is not None:
            span.set_attribute("loopnb.output", self._text(e.output))
        self._end(span, _ns(e.at))

    def _end(self, span: Any, end: int | None = None) -> None:
        """End ``span`` (at ``end`` ns, else now) and add it to the metrics."""
        span.end(end_time=end)
        if self._meters is not None:
            self._meters.ended(span)

    def _end_reply(self, run: _Run) -> None:
        if run.reply is not None:
            span, end = run.reply
            run.reply = None
            self._end(span, end)

    def close(self) -> None:
        """End the spans of runs still open (a run cut off mid-way), unset, and flush the provider."""
        for run in self._runs.values():
            for call_id in list(run.failed):
                self._unread(run, call_id, "ok")
            self._end_reply(run)
            self._end(run.span)
        self._runs.clear()
        flush = getattr(self.provider, "force_flush", None)
        if flush is not None:
            flush()
