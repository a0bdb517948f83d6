"""The command line, the top layer: ``loopnb demo``, ``audit``, ``compare``, ``convert``, ``query``.

``main(argv)`` is the ``loopnb`` console script. The commands and the text they print (a run's
turns, an audit, a comparison) live here, above every layer whose work they print.
"""

import loopnb._face as _face
from loopnb.cli._main import main

__all__ = ["main"]

_face.publish(globals())
