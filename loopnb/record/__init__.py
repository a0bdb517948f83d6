"""The recording layer: every turn a DataFrame row tagged ok / soft / hard, and the files they live in.

``Recorder`` observes an engine and builds the ``turns`` and ``events`` frames (columns defined
once, in ``schema``); it streams to JSON Lines and saves JSON Lines or Parquet, redacted by a
``Redactor``. A ``Recording`` is one read back (``loopnb.load``, in the formats layer above, reads
files; ``loopnb.audit`` and the rest of the analysis layer read recordings).
"""

import loopnb._face as _face
from loopnb.record._errors import RecordingError, RecordingWarning
from loopnb.record._recorder import Recorder
from loopnb.record._recording import Recording
from loopnb.record._redact import DEFAULT_PATTERNS, DEFAULT_REDACTOR, Redactor
from loopnb.record._schema import EVENT_SCHEMA, EVENTS, TURN_SCHEMA, TURNS, Column, Table

__all__ = [
    "DEFAULT_PATTERNS",
    "DEFAULT_REDACTOR",
    "EVENTS",
    "EVENT_SCHEMA",
    "TURNS",
    "TURN_SCHEMA",
    "Column",
    "Recorder",
    "Recording",
    "RecordingError",
    "RecordingWarning",
    "Redactor",
    "Table",
]

_face.publish(globals())
