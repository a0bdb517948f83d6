"""The formats layer: every format loopnb reads, one ``Format`` object each, and ``load`` over them.

``loopnb.load(path)`` tells a file's format from its content among ``formats()``: loopnb's own
JSON Lines and Parquet, pydantic-ai message histories, Inspect AI logs, OpenAI Agents SDK traces,
OpenTelemetry spans, LangGraph checkpoints, and any format ``register_format`` added;
``load_many`` reads folders of them. ``from_pydantic_ai``, ``from_inspect``, ``from_otel`` and
``from_openai_agents`` read the same runs from objects in memory. Every turn is tagged
ok/soft/hard with the channel table's producers; ``source_status`` keeps what the source itself
said, and ``audit(rec).disagreements()`` shows where the two differ (``REASONS``).
"""

import loopnb._face as _face
from loopnb.fileformats._load import load, load_many
from loopnb.fileformats._registry import (
    formats,
    from_inspect,
    from_openai_agents,
    from_otel,
    from_pydantic_ai,
    register_format,
)
from loopnb.foreign._formats import Format
from loopnb.record._disagree import REASONS

__all__ = [
    "REASONS",
    "Format",
    "formats",
    "from_inspect",
    "from_openai_agents",
    "from_otel",
    "from_pydantic_ai",
    "load",
    "load_many",
    "register_format",
]

_face.publish(globals())
