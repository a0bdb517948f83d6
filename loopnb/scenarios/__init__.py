"""Built-in, deterministic teaching scenarios: each makes one part of the principle visible.

>>> from loopnb import scenarios
>>> outcome = scenarios.get("mistyped_path").run()
>>> outcome.ending, outcome.output
('ok', 'src/main.rs is `fn main() {}`: it prints nothing.')

``outcome.run`` is the ``RunResult`` (or the salvaged run of a hard ending), ``outcome.error``
the ``LoopError`` (``None`` when ok), ``outcome.events`` every event. ``scenario.engine()`` gives
the engine itself, e.g. to attach a recorder or a live view.
"""

from __future__ import annotations

import difflib

from loopnb.scenarios._channels import CHANNEL_SCENARIOS
from loopnb.scenarios._safety import SAFETY_SCENARIOS
from loopnb.scenarios._scenario import Build, Ending, Outcome, Scenario

__all__ = ["SCENARIOS", "Build", "Ending", "Outcome", "Scenario", "get", "names"]

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
