"""The names a text holds, as the simulated model picks them out: paths and quoted phrases.

``FallibleModel`` derives its plan from those in the task, and finds in an error text the names
it offers instead of one the model sent.
"""

from __future__ import annotations

import re

PATH_TOKEN = re.compile(r"(?<![\w/.])(?:[\w.-]*/[\w./-]*\w|[\w-]+\.[A-Za-z][A-Za-z0-9]{0,5})(?!\w)")
"""A path-like token: one with a slash (``src/main.rs``) or a file name with an extension (``README.md``)."""

_QUOTED = re.compile(r"'([^'\n]{1,80})'|\"([^\"\n]{1,80})\"|`([^`\n]{1,80})`")


def quoted(text: str) -> list[str]:
    """The phrases ``text`` quotes (in single, double or back quotes), in order."""
    return [next(g for g in m.groups() if g) for m in _QUOTED.finditer(text)]
