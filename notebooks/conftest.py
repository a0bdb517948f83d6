"""The notebooks' kernels import loopnb from this checkout, whatever else is installed.

nbval starts each notebook's kernel in the notebook's folder, so a relative ``PYTHONPATH=.``
would point at ``notebooks/`` and the kernel would import whichever loopnb the environment has
installed. While a notebook item sets up (when nbval starts its kernel), the repository root goes
first on the kernel's ``PYTHONPATH``; the process's own environment is restored right after, so
other tests' subprocesses (the Binder check's fresh venv, say) are unaffected.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Generator

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]


def kernel_pythonpath(current: str | None) -> str:
    """``current`` with the repository root first and every entry made absolute."""
    paths = [str(REPO)] + [str(pathlib.Path(p).resolve()) for p in (current or "").split(os.pathsep) if p]
    return os.pathsep.join(dict.fromkeys(paths))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = kernel_pythonpath(saved)
    try:
        return (yield)
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved
