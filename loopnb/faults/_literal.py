"""Values as a fault's label writes them: Python literals that ``ast.literal_eval`` reads back.

A string is written as JSON writes it (``"disk busy"``: double quotes, the same escapes, which
Python reads the same); a number, ``True``, ``False`` and ``None`` as Python does; a list, tuple or
dict of them likewise. Anything else is written by its ``repr``: a label holding one still reads
well, but ``parse`` refuses it (it evaluates nothing).
"""

from __future__ import annotations

import json
from typing import Any

from loopnb.engine._errors import shown


def render(value: Any) -> str:
    """``value`` as a literal (its ``repr`` cut short when it is none, or when it cannot be written)."""
    try:
        return _render(value)
    except (RecursionError, ValueError, TypeError):  # too deep, an int past 4300 digits
        return shown(value)


def _render(value: Any) -> str:
    kind = type(value)
    if kind is str:
        return json.dumps(value, ensure_ascii=False)
    if value is None or kind is bool or kind is int or kind is bytes:
        return repr(value)
    if kind is float:
        return repr(value)  # inf and nan are no literals: parse refuses them
    if kind is list:
        return "[" + ", ".join(map(_render, value)) + "]"
    if kind is tuple:
        inner = ", ".join(map(_render, value))
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if kind is dict:
        return "{" + ", ".join(f"{_render(k)}: {_render(v)}" for k, v in value.items()) + "}"
    return shown(value, 200)
