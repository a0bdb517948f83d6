"""OpenTelemetry for loopnb: runs exported as GenAI spans, and any agent's spans watched live.

``Exporter`` is an engine observer emitting one ``invoke_agent`` span per run, a ``chat`` span per
model request and an ``execute_tool`` span per tool call, with ``loopnb.channel`` and
``loopnb.producer`` beside the ``gen_ai.*`` attributes. Errors are recorded as the GenAI
conventions' "Recording Errors" says: a failed tool call is ``ERROR`` on its own span with
``error.type`` its producer and the text the model read in ``loopnb.error_text``; the run that went
on is not ``ERROR``; a hard ending is ``ERROR`` on the run's span. (``SOFT_ERROR`` names the event
older exports wrote, still read.) ``LiveSpans`` goes the other way:
a span processor reading an instrumented agent's spans as the ``otlp`` reader does, as they end,
feeding a recorder and the notebook layer's live view (``loopnb.watch()``). Needs ``loopnb[otel]``;
``LiveSpans`` loads the SDK on first use.
"""

import importlib as _importlib

import loopnb._face as _face
from loopnb.foreign._otlp_profile import ATTEMPT, BREAKER, CEILING, CHANNEL, ERROR_TEXT, PRODUCER, SOFT_ERROR
from loopnb.otel._exporter import Exporter
from loopnb.otel._targets import exporter_for, http_provider

_LAZY = {"LiveSpans": "loopnb.otel._live"}

__all__ = [
    "ATTEMPT",
    "BREAKER",
    "CEILING",
    "CHANNEL",
    "ERROR_TEXT",
    "PRODUCER",
    "SOFT_ERROR",
    "Exporter",
    "LiveSpans",
    "exporter_for",
    "http_provider",
]


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'loopnb.otel' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    _face.publish(globals())
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


_face.publish(globals())
