"""The attribute and event names loopnb adds to the GenAI conventions, written by
``loopnb.otel.Exporter`` and read back by the ``otlp`` reader (which sits below the exporter)."""

from __future__ import annotations

INJECTED = "loopnb.injected"
"""On a tool span: the label of the fault ``loopnb.inject`` put into the call (its wrappers and the
exporter write it)."""
CHANNEL = "loopnb.channel"
"""What reached the model: ``ok``, ``soft`` or ``hard``, on every tool, chat and agent span."""
PRODUCER = "loopnb.producer"
"""Which row of the channel table made a soft or hard outcome (``tool_error``, ``loop_detected``, ...)."""
ATTEMPT = "loopnb.recovery.attempt"
"""A tool call's attempt: 0 for the original call, 1 to 5 for the retries recovery granted."""
CEILING = "loopnb.recovery.ceiling"
"""The recovery ceiling the attempt counted against (``MAX_RECOVERY_ATTEMPTS``, 5)."""
BREAKER = "loopnb.breaker.state"
"""The tool's circuit breaker when the call was dispatched: ``closed``, ``open`` or ``half_open``."""
ERROR_TEXT = "loopnb.error_text"
"""The text the model read for a failure (redacted), kept as an attribute, not an exception event."""
DECISION = "loopnb.recovery.decision"
"""What recovery decided for a failed attempt it sent again (``retry``), on that attempt's tool span."""
SOFT_ERROR = "loopnb.soft_error"
"""The event older exports wrote for a soft error (before the third round); still read."""
ATTEMPT_ERROR = "loopnb.attempt_error"
"""The event older exports wrote on a failed attempt that recovery retried; no longer written."""
