"""Where an export goes: an OTLP/HTTP endpoint's tracer provider, and the ``Exporter`` for a target
(``NotebookRunner(export=...)``, ``loopnb demo --otlp``)."""

from __future__ import annotations

from typing import Any

from loopnb.otel._exporter import Exporter


def http_provider(url: str) -> Any:
    """A ``TracerProvider`` sending spans over OTLP/HTTP to ``url`` (e.g. ``http://127.0.0.1:4318/v1/traces``;
    a base URL gets ``/v1/traces``). Needs ``opentelemetry-exporter-otlp-proto-http`` (``loopnb[otel]``)."""
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("OTLP export needs the OpenTelemetry SDK: pip install 'loopnb[otel]'") from exc
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"an OTLP/HTTP endpoint is an http(s) URL, got {url!r}")
    endpoint = url if url.rstrip("/").endswith("/v1/traces") else url.rstrip("/") + "/v1/traces"
    provider = TracerProvider(resource=Resource.create({"service.name": "loopnb"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    return provider


def exporter_for(target: Any) -> Exporter:
    """An ``Exporter`` for ``target``: an ``Exporter`` itself, a ``TracerProvider``, or an OTLP/HTTP URL."""
    if isinstance(target, Exporter):
        return target
    if isinstance(target, str):
        return Exporter(tracer_provider=http_provider(target))
    if hasattr(target, "get_tracer"):
        return Exporter(tracer_provider=target)
    raise TypeError(
        f"export= takes an otel.Exporter, a TracerProvider or an OTLP/HTTP URL, got {type(target).__name__}"
    )
