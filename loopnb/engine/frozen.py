"""Building frozen, slotted dataclasses fast, for the objects made once per turn or per event."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, fields
from typing import Any, TypeVar

__all__ = ["positional"]

_T = TypeVar("_T")


def positional(cls: type[_T]) -> Callable[..., _T]:
    """A positional constructor for a frozen, slotted dataclass: the fast way to build many.

    ``new(a, b, ...)`` takes the fields in declaration order (fields with a default may be left
    off) and returns an instance equal to ``cls(a=..., b=..., ...)``. Passing a dozen keywords to
    a class costs more than the rest of building the object, and a frozen class refuses plain
    attribute stores, so the object is filled in as an instance of a mutable twin with the very
    same slots and then becomes ``cls`` (the twin is never seen outside). A class with a
    ``__post_init__`` or a field with a default factory is refused: ``new`` would skip them.
    """
    declared = fields(cls)  # type: ignore[arg-type]
    slots: tuple[str, ...] = cls.__slots__  # type: ignore[attr-defined]
    plain = not hasattr(cls, "__post_init__") and all(f.default_factory is MISSING for f in declared)
    if tuple(f.name for f in declared) != slots or not plain:
        raise TypeError(f"{cls.__name__}: a positional constructor needs plain slotted fields")
    env: dict[str, Any] = {
        "_new": object.__new__,
        "_twin": type(f"_{cls.__name__}Builder", (), {"__slots__": slots}),
        "_cls": cls,
    }
    params = []
    for f in declared:
        if f.default is MISSING:
            params.append(f.name)
        else:
            env[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
    lines = [f"def new({', '.join(params)}):", "    self = _new(_twin)"]
    lines += [f"    self.{f.name} = {f.name}" for f in declared]
    lines += ["    self.__class__ = _cls", "    return self"]
    exec("\n".join(lines), env)  # generated from the class's own field list, nothing else
    new: Callable[..., _T] = env["new"]
    new.__qualname__ = new.__name__ = f"new_{cls.__name__}"
    return new
