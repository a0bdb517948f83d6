"""Recording and auditing: every turn a DataFrame row tagged ok / soft / hard.

``Recorder`` observes an engine and builds the ``turns`` and ``events`` frames (columns defined
once, in ``schema``); it streams to JSON Lines and saves JSON Lines or Parquet. A ``Recording`` is
one read back (``loopnb.load``, in the formats layer above, reads files); ``audit`` answers the
questions a user would otherwise write by hand; ``flow_counts`` counts the decision flow's arrows,
as the live view does; ``recovery_attempts`` and ``breaker_history`` are the live view's recovery
gauge and breaker board as frames; ``compare`` lays two runs side by side (a ``Comparison``);
``scripted_from`` makes a recording's replies a ``ScriptedModel`` (a regression test) and
``what_if`` replays a recording under another policy to where it diverges.
"""

import loopnb._face as _face
from loopnb.record._audit import Audit, audit
from loopnb.record._compare import Comparison, compare
from loopnb.record._errors import RecordingError, RecordingWarning
from loopnb.record._flows import flow_counts
from loopnb.record._history import breaker_history, recovery_attempts
from loopnb.record._recorder import Recorder
from loopnb.record._recording import Recording
from loopnb.record._redact import DEFAULT_PATTERNS, DEFAULT_REDACTOR, Redactor
from loopnb.record._schema import EVENT_SCHEMA, EVENTS, TURN_SCHEMA, TURNS, Column, Table
from loopnb.record._scripted import scripted_from
from loopnb.record._whatif import what_if
from loopnb.record._whatif_report import WhatIf

__all__ = [
    "DEFAULT_PATTERNS",
    "DEFAULT_REDACTOR",
    "EVENTS",
    "EVENT_SCHEMA",
    "TURNS",
    "TURN_SCHEMA",
    "Audit",
    "Column",
    "Comparison",
    "Recorder",
    "Recording",
    "RecordingError",
    "RecordingWarning",
    "Redactor",
    "Table",
    "WhatIf",
    "audit",
    "breaker_history",
    "compare",
    "flow_counts",
    "recovery_attempts",
    "scripted_from",
    "what_if",
]

_face.publish(globals())
