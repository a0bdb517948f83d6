"""loopnb: explore, teach and audit agent loops in Jupyter.

A failure the model could read and adapt to is *soft*: it goes back to the model as a tool result
with ``is_error=True`` and the run continues. A failure no next turn can fix is *hard*: a typed
``LoopError`` ends the run after salvaging the completed turns.
"""

from loopnb.engine import *  # noqa: F403  (the engine's public names are loopnb's)
from loopnb.engine import __all__ as _engine_all

__version__ = "0.1.0"

__all__ = sorted([*_engine_all, "__version__"])
