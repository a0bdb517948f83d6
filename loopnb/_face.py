"""Where a public name says it lives: ``loopnb.ToolError``, never ``loopnb.engine._errors.ToolError``.

httpx's face: every class and function a public package exports reports a public module as its
``__module__``, so reprs, tracebacks, pickles and an API reference give the path a user imports.
The rule: a name ``loopnb`` itself exports reports ``loopnb``, wherever else it is exported too
(every name of ``loopnb.engine``, and the layers' names in ``LAZY``); any other name reports the
public package that exports it (``loopnb.record.Column``, ``loopnb.engine.models.from_env``).

Each package calls ``publish(globals())`` once its names are bound, and again when a name it loads
lazily arrives, so a name has its home from the moment its layer is imported, however it was reached.
"""

from __future__ import annotations

import inspect
import types
import typing

TOP = "loopnb"

LAZY = {
    "Format": "loopnb.fileformats",
    "formats": "loopnb.fileformats",
    "register_format": "loopnb.fileformats",
    "load": "loopnb.fileformats",
    "load_many": "loopnb.fileformats",
    "from_inspect": "loopnb.fileformats",
    "from_openai_agents": "loopnb.fileformats",
    "from_otel": "loopnb.fileformats",
    "from_pydantic_ai": "loopnb.fileformats",
    "Audit": "loopnb.analysis",
    "Recorder": "loopnb.record",
    "Recording": "loopnb.record",
    "RecordingError": "loopnb.record",
    "RecordingWarning": "loopnb.record",
    "Redactor": "loopnb.record",
    "TURN_SCHEMA": "loopnb.record",
    "EVENT_SCHEMA": "loopnb.record",
    "audit": "loopnb.analysis",
    "compare": "loopnb.analysis",
    "Comparison": "loopnb.analysis",
    "flow_counts": "loopnb.analysis",
    "breaker_history": "loopnb.analysis",
    "recovery_attempts": "loopnb.analysis",
    "scripted_from": "loopnb.analysis",
    "what_if": "loopnb.analysis",
    "WhatIf": "loopnb.analysis",
    "LiveView": "loopnb.notebook",
    "NotebookRunner": "loopnb.notebook",
    "ViewModel": "loopnb.notebook",
    "replay": "loopnb.notebook",
    "Sweep": "loopnb._sweep",
    "SweepConfig": "loopnb._sweep",
    "query": "loopnb._sweep",
    "sweep": "loopnb._sweep",
    "watch": "loopnb.notebook",
    "inject": "loopnb.faults",
}
"""``loopnb``'s names that load their layer on first use, each with the package that holds it."""


def home(package: str, name: str) -> str:
    """The module that ``name``, as exported by ``package``, reports as its ``__module__``."""
    if package == "loopnb.engine" or LAZY.get(name) == package:
        return TOP
    return package


def publish(namespace: dict[str, object]) -> None:
    """Give every class and function the package of ``namespace`` exports its public home.

    The names are the package's ``__all__`` and its names in ``LAZY``; one not loaded yet is left
    for the call that follows its loading. Calling it again changes nothing.
    """
    package = str(namespace["__name__"])
    exported = typing.cast("list[str]", namespace.get("__all__", []))
    for name in [*exported, *(n for n, layer in LAZY.items() if layer == package)]:
        value = namespace.get(name)
        if isinstance(value, type):
            _resolve_annotations(value)
            value.__module__ = home(package, name)
        elif isinstance(value, types.FunctionType):
            value.__module__ = home(package, name)


def _resolve_annotations(cls: type) -> None:
    """Turn a class's string annotations (``from __future__ import annotations``) into the types
    they name, while ``cls.__module__`` is still the module that defines them.

    ``typing.get_type_hints`` and pydantic evaluate a class's annotations in
    ``sys.modules[cls.__module__]``: in ``loopnb`` a private alias such as ``SoftProducer``, or
    ``Literal`` itself, is not defined, and ``TypeAdapter(loopnb.ToolResult)`` would fail as "not
    fully defined". A dataclass's fields keep their own copy of the annotation, which pydantic reads.
    """
    own = inspect.get_annotations(cls)
    if not any(isinstance(annotation, str) for annotation in own.values()):
        return
    hints = typing.get_type_hints(cls, include_extras=True)
    cls.__annotations__ = {name: hints.get(name, a) for name, a in own.items()}
    fields: dict[str, typing.Any] = getattr(cls, "__dataclass_fields__", {})
    for name, field in fields.items():
        if isinstance(field.type, str) and name in hints:
            field.type = hints[name]
