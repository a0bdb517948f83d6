"""The built-in scenarios by name: ``SCENARIOS``, ``names()`` and ``get(name)``."""

from __future__ import annotations

import difflib

from loopnb.scenarios._channels import CHANNEL_SCENARIOS
from loopnb.scenarios._safety import SAFETY_SCENARIOS
from loopnb.scenarios._scenario import Scenario

SCENARIOS: dict[str, Scenario] = {s.name: s for s in (*CHANNEL_SCENARIOS, *SAFETY_SCENARIOS)}
"""Every built-in scenario by name, in teaching order."""


def names() -> list[str]:
    """The built-in scenarios' names, in teaching order."""
    return list(SCENARIOS)


def get(name: str) -> Scenario:
    """The scenario called ``name``; an unknown name raises ``KeyError`` listing the known ones."""
    try:
        return SCENARIOS[name]
    except (KeyError, TypeError):  # TypeError: an unhashable name
        close = difflib.get_close_matches(str(name).strip().lower(), SCENARIOS, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise KeyError(
            f"no scenario named {name!r}; the scenarios are: {', '.join(SCENARIOS)}.{hint}"
        ) from None
