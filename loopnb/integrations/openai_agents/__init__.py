"""Save OpenAI Agents SDK traces locally, as JSON Lines that ``loopnb.load`` reads.

``JsonlProcessor(path)`` is a ``TracingProcessor``: pass it to ``agents.set_trace_processors``
(which also stops the export to OpenAI's servers) or ``agents.add_trace_processor``. The SDK is
imported when ``JsonlProcessor`` is first used, not when this package is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from loopnb.integrations.openai_agents._processor import JsonlProcessor

__all__ = ["JsonlProcessor"]


def __getattr__(name: str) -> Any:
    if name == "JsonlProcessor":
        from loopnb.integrations.openai_agents._processor import JsonlProcessor

        return JsonlProcessor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
