"""Invalid arguments, replayed: the engine's own text, rebuilt from the text the model read.

The recording keeps what the model read for a call whose arguments did not fit (``invalid
arguments for tool 'x':`` then one line per wrong field, then ``expected arguments: {...}``), not
the tool's schema. A replay tool must still be refused by the engine's own argument check, so
that the turn keeps its producer: this module reads the text back into the two things the engine
words it from, a schema whose shape reads the same and a pydantic ``ValidationError`` naming the
same fields, messages and inputs, and keeps them only when the engine's wording of them is the
recorded text exactly (``invalid_arguments_text``). Texts in another framework's words are not
rebuilt: the replay tool answers those with the text itself, as a tool error.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic_core import PydanticCustomError, ValidationError

from loopnb.engine import Tool
from loopnb.engine._texts import EXPECTED, invalid_arguments_header, invalid_arguments_text

_FIELD = re.compile(r", (?=[A-Za-z_][\w-]*: )")
_SIMPLE = frozenset({"string", "integer", "number", "boolean", "object", "array", "null", "any"})


def shape_schema(text: str) -> dict[str, Any] | None:
    """A JSON schema whose shape the engine words as the ``expected arguments`` line of
    ``text``, or ``None`` when ``text`` has none."""
    line = text.rsplit("\n", 1)[-1]
    if not line.startswith(EXPECTED) or not line.endswith("}") or not line[len(EXPECTED) :].startswith("{"):
        return None
    inner = line[len(EXPECTED) + 1 : -1]
    props: dict[str, Any] = {}
    required: list[str] = []
    for part in _FIELD.split(inner) if inner else []:
        key, sep, kind = part.partition(": ")
        if not sep:
            return None
        optional = kind.endswith(" (optional)")
        kind = kind.removesuffix(" (optional)")
        props[key] = _kind_schema(kind)
        if not optional:
            required.append(key)
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    return schema


def _kind_schema(kind: str) -> dict[str, Any]:
    """The schema of one argument the engine words as ``kind`` (``string``, ``array of integer``;
    any other wording kept as the type's name, which the engine repeats as it is)."""
    if kind.startswith("array of "):
        return {"type": "array", "items": _kind_schema(kind[len("array of ") :])}
    if kind in _SIMPLE and kind != "any":
        return {"type": kind}
    return {"type": kind} if kind else {}


class _Shown:
    """A stand-in for an input the recording shows only as text: its repr is that text."""

    def __init__(self, text: str) -> None:
        self._text = text

    def __repr__(self) -> str:
        return self._text


_KINDS: dict[str, type[_Shown]] = {}


def _shown(text: str, kind: str) -> _Shown:
    """An object whose repr is ``text`` and whose type is named ``kind`` (how the engine shows an
    input: its clipped repr and its type's name)."""
    cls = _KINDS.get(kind)
    if cls is None:
        cls = _KINDS[kind] = type(kind, (_Shown,), {"__slots__": ()})
    return cls(text)


def forged_error(tool: Tool, text: str) -> ValidationError | None:
    """A ``ValidationError`` the engine words, for ``tool``, as ``text`` exactly; ``None`` when
    ``text`` is not in the engine's words (another framework's, or a wording this cannot rebuild)."""
    header = invalid_arguments_header(tool.name)
    lines = text.split("\n")
    if len(lines) < 2 or lines[0] != header or not lines[-1].startswith(EXPECTED):
        return None
    items: list[str] = []
    for line in lines[1:-1]:
        if line.startswith("- "):
            items.append(line[2:])
        elif items:
            items[-1] += "\n" + line  # a message that spans lines
        else:
            return None
    details: list[Any] = []
    for item in items:
        field, sep, rest = item.partition(": ")
        msg, got_sep, got = rest.rpartition("; got ")
        if not sep or not got_sep:
            return None
        loc = () if field == "(arguments)" else tuple(field.split("."))
        if got == "nothing":
            details.append({"type": PydanticCustomError("missing", msg), "loc": loc, "input": None})
            continue
        shown, paren, kind = got.rpartition(" (")
        if not paren or not kind.endswith(")"):
            return None
        value = _shown(shown, kind[:-1])
        details.append({"type": PydanticCustomError("replayed", msg), "loc": loc, "input": value})
    error = ValidationError.from_exception_data(f"{tool.name}_arguments", details)
    try:
        same = invalid_arguments_text(tool, error) == text
    except Exception:
        return None
    return error if same else None
