"""Runs other frameworks made, read as loopnb turns: the channel table applied to their records.

``loopnb.load(path)`` detects pydantic-ai message histories, Inspect AI logs, OpenAI Agents SDK
traces, OpenTelemetry spans and LangGraph checkpoints from a file's content; ``from_pydantic_ai``,
``from_inspect``, ``from_otel`` and ``from_openai_agents`` read the same runs from objects in
memory. Every turn is tagged ok/soft/hard with the channel table's producers; ``source_status``
keeps what the source itself said, and ``audit(rec).disagreements()`` shows where the two differ
(``REASONS``).
"""

import loopnb._face as _face
from loopnb.foreign._disagree import REASONS
from loopnb.foreign._formats import (
    FORMATS,
    Format,
    from_inspect,
    from_openai_agents,
    from_otel,
    from_pydantic_ai,
)

__all__ = [
    "FORMATS",
    "REASONS",
    "Format",
    "from_inspect",
    "from_openai_agents",
    "from_otel",
    "from_pydantic_ai",
]

_face.publish(globals())
