"""Griffe extension: the names public packages load lazily, where a static reading of them finds them.

griffe reads the source without running it. It sees the engine's names in ``loopnb`` (a ``from
loopnb.engine import *``), but not the names a package's ``__getattr__`` loads on first use:
``loopnb``'s from the layers above (``loopnb.Recorder``, ``loopnb.load``: ``loopnb._face.LAZY``)
and those a package keeps in a ``_LAZY`` table of its own (``loopnb.otel.LiveSpans``). This adds
each as an alias of the name where it is defined, so the reference documents it under the path a
user imports, the one its ``__module__`` reports.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

import griffe

TOP = "loopnb"


def _modules(module: griffe.Module) -> Iterator[griffe.Module]:
    """``module`` and its public submodules, depth first."""
    yield module
    for name, sub in module.modules.items():
        if not name.startswith("_") and not sub.is_alias:
            yield from _modules(sub)


def _lazy(path: str) -> dict[str, str]:
    """The names ``path``'s ``__getattr__`` loads, each with the module that defines it."""
    if path == TOP:
        from loopnb._face import LAZY  # the one list of them: loopnb.__getattr__ reads it too

        return {name: f"{layer}.{name}" for name, layer in LAZY.items()}
    table: dict[str, str] = getattr(importlib.import_module(path), "_LAZY", {})
    return {name: f"{module}.{name}" for name, module in table.items()}


class LazyNames(griffe.Extension):
    """Adds each public package's lazily loaded names to the module griffe loaded, as aliases."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        if pkg.path != TOP:
            return
        for module in _modules(pkg):
            for name, target in _lazy(module.path).items():
                if name not in module.members:
                    module.set_member(name, griffe.Alias(name, target, parent=module))
