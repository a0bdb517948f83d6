"""Spans written down as a real exporter writes them, the same every time: what the OTLP
goldens' generators share (``make_otlp.py`` and each framework's ``make_<framework>.py``).

Needs opentelemetry-sdk and opentelemetry-exporter-otlp-proto-common (protobuf), nothing of any
agent framework. ``provider(sample)`` gives sequential ids after a prefix of the sample's number;
``normalised`` puts times in 1 ms steps from a fixed start and drops stack traces; ``spec_json``
and ``protobuf_json`` are the two JSON encodings of an ``ExportTraceServiceRequest``. ``traced``
makes a generator's runs under its instrumentations, and ``write_golden`` writes their spans.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator

START_NS = 1_772_355_600_000_000_000  # 2026-03-01 09:00 UTC
RESOURCE = Resource({"service.name": "loopnb-goldens"})


class Sequential(IdGenerator):
    """Ids 1, 2, 3, ... after a prefix of the sample's number, so that the goldens' ids never
    change and no two samples share a trace (their runs can be loaded side by side)."""

    def __init__(self, sample: int) -> None:
        self.spans = 0
        self.traces = sample << 64

    def generate_span_id(self) -> int:
        self.spans += 1
        return self.spans

    def generate_trace_id(self) -> int:
        self.traces += 1
        return self.traces


def provider(sample: int) -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    tp = TracerProvider(resource=RESOURCE, id_generator=Sequential(sample))
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    return tp, exporter


def normalised(spans: Sequence[ReadableSpan]) -> list[ReadableSpan]:
    """``spans`` with times in 1 ms steps from a fixed start (in their order), fixed run and
    conversation ids, and no stack traces."""
    times = sorted(
        {t for s in spans for t in (s.start_time, s.end_time, *(e.timestamp for e in s.events)) if t}
    )
    step = {t: START_NS + i * 1_000_000 for i, t in enumerate(times)}
    ids: dict[str, str] = {}

    def fixed(key: str, value: Any) -> Any:
        if key in ("gen_ai.agent.call.id", "gen_ai.conversation.id") and isinstance(value, str):
            return ids.setdefault(value, f"{key.split('.')[1]}-{len(ids) + 1}")
        return value

    out = []
    for s in spans:
        attrs = {k: fixed(k, v) for k, v in (s.attributes or {}).items()}
        events = [
            Event(
                e.name,
                {k: v for k, v in (e.attributes or {}).items() if k != "exception.stacktrace"},
                step[e.timestamp],
            )
            for e in s.events
        ]
        out.append(
            ReadableSpan(
                s.name,
                context=s.context,
                parent=s.parent,
                resource=s.resource,
                attributes=attrs,
                events=events,
                kind=s.kind,
                status=s.status,
                start_time=step[s.start_time] if s.start_time else None,
                end_time=step[s.end_time] if s.end_time else None,
                instrumentation_scope=s.instrumentation_scope,
            )
        )
    return out


def protobuf_json(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """``MessageToDict`` of the ``ExportTraceServiceRequest`` the OTLP exporters send."""
    return MessageToDict(encode_spans(spans))


def spec_json(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """OTLP/JSON as the specification writes it: ids in hex, enums as integers."""
    request = MessageToDict(encode_spans(spans), use_integers_for_enums=True)

    def hexed(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                k: (base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId") else hexed(v))
                for k, v in node.items()
            }
        if isinstance(node, list):
            return [hexed(v) for v in node]
        return node

    result: dict[str, Any] = hexed(request)
    return result


def by_trace(spans: Sequence[ReadableSpan]) -> list[list[ReadableSpan]]:
    traces: dict[int, list[ReadableSpan]] = {}
    for s in spans:
        assert s.context is not None
        traces.setdefault(s.context.trace_id, []).append(s)
    return list(traces.values())


@dataclass
class Sample:
    """What a generator made: its runs (each as the framework ended it) and the spans they left."""

    runs: list[Any]
    spans: list[ReadableSpan]


def traced(
    sample: int, instrumentors: Sequence[Any], run: Callable[[str], Any], names: Iterable[str]
) -> Sample:
    """Each run ``run(name)`` made while ``instrumentors`` (OpenInference's, or any with
    ``instrument(tracer_provider=...)``) trace into a provider of its own (``provider(sample)``)."""
    tp, exporter = provider(sample)
    for instrumentor in instrumentors:
        instrumentor.instrument(tracer_provider=tp)
    try:
        runs = [run(name) for name in names]
    finally:
        for instrumentor in instrumentors:
            instrumentor.uninstrument()
    return Sample(runs, list(exporter.get_finished_spans()))


def write_golden(path: Path, spans: Sequence[ReadableSpan]) -> None:
    """Write ``spans``, normalised, as OTLP/JSON at ``path``, and say so."""
    text = json.dumps(spec_json(normalised(spans))) + "\n"
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path} ({len(text.encode())} bytes)")
