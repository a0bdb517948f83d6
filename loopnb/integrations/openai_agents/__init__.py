"""Save OpenAI Agents SDK traces locally, as JSON Lines that ``loopnb.load`` reads.

``JsonlProcessor(path)`` is a ``TracingProcessor``: pass it to ``agents.set_trace_processors``
(which also stops the export to OpenAI's servers) or ``agents.add_trace_processor``. The SDK is
imported when ``JsonlProcessor`` is first used, not when this package is.
"""

import importlib as _importlib
import typing as _typing

import loopnb._face as _face

if _typing.TYPE_CHECKING:
    from loopnb.integrations.openai_agents._processor import JsonlProcessor

__all__ = ["JsonlProcessor"]


def __getattr__(name: str) -> object:
    if name != "JsonlProcessor":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module("loopnb.integrations.openai_agents._processor"), name)
    globals()[name] = value
    _face.publish(globals())
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
