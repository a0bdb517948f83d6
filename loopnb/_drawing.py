"""How a data object is drawn without its layer importing the one that draws.

A ``Recording`` writes an HTML report and a ``Comparison`` shows as a widget or a page, but
drawing is the notebook layer's work, and that layer sits above the data. The data objects ask
``drawer()``; the face (``loopnb/__init__``, above every layer) names the module that draws with
``provide``. A lower layer never imports the notebook layer, not even inside a function.

The drawing module has ``recording_page(recording, path)``, ``comparison_page(comparison, path,
title)``, ``comparison_view(comparison)`` and ``comparison_html(comparison)``.
"""

from __future__ import annotations

import importlib
from typing import Any

_provider: str | None = None


def provide(module: str) -> None:
    """Make ``module`` (a module name) the one that draws; the face names the notebook layer's."""
    global _provider
    _provider = module


def drawer() -> Any:
    """The module that draws loopnb's objects, imported on first use (it loads ipywidgets)."""
    if _provider is None:
        raise RuntimeError(
            "nothing draws loopnb's objects: the face (import loopnb) names the notebook layer"
        )
    return importlib.import_module(_provider)
