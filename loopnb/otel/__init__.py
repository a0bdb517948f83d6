"""OpenTelemetry for loopnb: runs exported as GenAI spans with the soft/hard distinction kept.

``Exporter`` is an engine observer emitting one ``invoke_agent`` span per run, a ``chat`` span per
model request and an ``execute_tool`` span per tool call, with ``loopnb.channel`` and
``loopnb.producer`` beside the ``gen_ai.*`` attributes; a soft error leaves its span unset with the
text the model read in an event, only a hard ending sets ERROR. Needs ``loopnb[otel]``.
"""

from loopnb.otel._exporter import (
    ATTEMPT,
    BREAKER,
    CEILING,
    CHANNEL,
    ERROR_TEXT,
    PRODUCER,
    SOFT_ERROR,
    Exporter,
    exporter_for,
    http_provider,
)

__all__ = [
    "ATTEMPT",
    "BREAKER",
    "CEILING",
    "CHANNEL",
    "ERROR_TEXT",
    "PRODUCER",
    "SOFT_ERROR",
    "Exporter",
    "exporter_for",
    "http_provider",
]
