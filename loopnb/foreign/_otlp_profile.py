"""The attribute and event names loopnb adds to the GenAI conventions, written by
``loopnb.otel.Exporter`` and read back by the ``otlp`` reader (which sits below the exporter)."""

from __future__ import annotations

INJECTED = "loopnb.injected"
"""On a tool span: the label of the fault ``loopnb.inject`` put into the call (its wrappers and the
exporter write it)."""
CHANNEL = "loopnb.channel"
PRODUCER = "loopnb.producer"
ATTEMPT = "loopnb.recovery.attempt"
CEILING = "loopnb.recovery.ceiling"
BREAKER = "loopnb.breaker.state"
ERROR_TEXT = "loopnb.error_text"
DECISION = "loopnb.recovery.decision"
SOFT_ERROR = "loopnb.soft_error"
ATTEMPT_ERROR = "loopnb.attempt_error"
"""The attribute and event names loopnb adds to the GenAI conventions."""
