"""loopnb: explore, teach and audit agent loops in Jupyter.

A failure the model could read and adapt to is *soft*: it goes back to the model as a tool result
with ``is_error=True`` and the run continues. A failure no next turn can fix is *hard*: a typed
``LoopError`` ends the run after salvaging the completed turns.

The engine's names are imported here directly (they need only pydantic). The recording and
notebook layers load on first use, so ``import loopnb`` never pulls in pandas, ipywidgets or plotly.
"""

import importlib as _importlib

from loopnb.engine import *  # noqa: F403  (the engine's public names are loopnb's)
from loopnb.engine import __all__ as _engine_all

__version__ = "0.1.0"

_LAZY = {
    "from_inspect": "loopnb.foreign",
    "from_openai_agents": "loopnb.foreign",
    "from_otel": "loopnb.foreign",
    "from_pydantic_ai": "loopnb.foreign",
    "Audit": "loopnb.record",
    "Recorder": "loopnb.record",
    "Recording": "loopnb.record",
    "RecordingError": "loopnb.record",
    "RecordingWarning": "loopnb.record",
    "Redactor": "loopnb.record",
    "TURN_SCHEMA": "loopnb.record",
    "EVENT_SCHEMA": "loopnb.record",
    "audit": "loopnb.record",
    "compare": "loopnb.record",
    "Comparison": "loopnb.record",
    "flow_counts": "loopnb.record",
    "breaker_history": "loopnb.record",
    "load": "loopnb.record",
    "load_many": "loopnb.record",
    "recovery_attempts": "loopnb.record",
    "scripted_from": "loopnb.record",
    "what_if": "loopnb.record",
    "WhatIf": "loopnb.record",
    "LiveView": "loopnb.notebook",
    "NotebookRunner": "loopnb.notebook",
    "ViewModel": "loopnb.notebook",
    "replay": "loopnb.notebook",
    "Sweep": "loopnb._sweep",
    "SweepConfig": "loopnb._sweep",
    "query": "loopnb._sweep",
    "sweep": "loopnb._sweep",
    "watch": "loopnb.otel",
}

# In the order ruff keeps a literal ``__all__`` (RUF022): constants, then classes, then the rest.
__all__ = sorted(
    [*_engine_all, *_LAZY, "__version__"], key=lambda n: (not n.isupper(), not n[0].isupper(), n)
)


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'loopnb' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
