"""The notebooks' kernels import loopnb from this checkout, whatever else is installed.

nbval starts each kernel in the notebook's folder, so a relative ``PYTHONPATH=.`` would point at
``notebooks/`` and the kernel would import whichever loopnb the environment has installed.
Putting the repository root first makes the notebooks test the code next to them.
"""

from __future__ import annotations

import os
import pathlib

REPO = pathlib.Path(__file__).resolve().parents[1]

_paths = [str(REPO)] + [
    str(pathlib.Path(p).resolve()) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p
]
os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(_paths))
