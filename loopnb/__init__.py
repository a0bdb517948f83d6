"""loopnb: explore, teach and audit agent loops in Jupyter.

A failure the model could read and adapt to is *soft*: it goes back to the model as a tool result
with ``is_error=True`` and the run continues. A failure no next turn can fix is *hard*: a typed
``LoopError`` ends the run after salvaging the completed turns.

The engine's names are imported here directly (they need only pydantic). The recording and
notebook layers load on first use, so ``import loopnb`` never pulls in pandas, ipywidgets or plotly.
Every class and function here reports ``loopnb`` as its module (``loopnb.ToolError``), whichever
package defines it.
"""

import importlib as _importlib

import loopnb._drawing as _drawing
import loopnb._face as _face
from loopnb._version import __version__ as __version__
from loopnb.engine import *  # noqa: F403  (the engine's public names are loopnb's)
from loopnb.engine import __all__ as _engine_all

_drawing.provide("loopnb.notebook._drawing")  # the layers below draw through the notebook layer

# In the order ruff keeps a literal ``__all__`` (RUF022): constants, then classes, then the rest.
__all__ = sorted(
    [*_engine_all, *_face.LAZY, "__version__"], key=lambda n: (not n.isupper(), not n[0].isupper(), n)
)


def __getattr__(name: str) -> object:
    if name == "faults":  # a public subpackage, reached as loopnb.faults without importing it first
        return _importlib.import_module("loopnb.faults")
    module = _face.LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'loopnb' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)  # its layer gave it its home on import
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_face.LAZY) | {"faults"})
