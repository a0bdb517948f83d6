"""``loopnb demo --fault TOOL=FAULT``: faults injected into the scenarios' tools from the terminal.

``TOOL=FAULT`` names a tool and a fault in the labels' own language (``read_file=error.first(2)``,
``read_file=error("disk busy").first(2)``), read by ``loopnb.faults.parse``: never evaluated. A
scenario gets the faults for the tools it has; a tool no chosen scenario has is a usage error
naming the tools they have.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from loopnb.engine._texts import suggest_name
from loopnb.engine._tools import usable_name
from loopnb.faults import Fault, FaultSyntaxError, inject, parse
from loopnb.scenarios import Scenario

EXAMPLE = "read_file=error.first(2)"


def fault_spec(text: str) -> tuple[str, Fault]:
    """One ``--fault``: the tool's name and its fault (an ``ArgumentTypeError`` saying what was expected)."""
    name, sep, label = text.partition("=")
    name = name.strip()
    if not sep or not usable_name(name):
        raise argparse.ArgumentTypeError(f"expected TOOL=FAULT, e.g. {EXAMPLE}; got {text!r}")
    try:
        return name, parse(label)
    except FaultSyntaxError as exc:
        raise argparse.ArgumentTypeError(f"{name}={label}: {exc}") from None


def planned(specs: Sequence[tuple[str, Fault]], chosen: Iterable[Scenario]) -> dict[str, Fault]:
    """The faults by tool, each tool named once and had by some chosen scenario (else ``ValueError``)."""
    faults: dict[str, Fault] = {}
    for name, fault in specs:
        if name in faults:
            raise ValueError(f"--fault names {name} twice ({faults[name].label} and {fault.label}); give one")
        faults[name] = fault
    tools = list(dict.fromkeys(t for scenario in chosen for t in scenario.engine().registry.names))
    for name in faults:
        if name not in tools:
            best = suggest_name(name, tools)
            hint = f"; did you mean {best!r}?" if best is not None else ""
            raise ValueError(
                f"--fault names {name!r}, a tool none of these scenarios has; they have "
                f"{', '.join(tools) or 'no tools'}{hint}"
            )
    return faults


def tools_with(faults: dict[str, Fault], seed: int | None) -> Callable[[list[Any]], list[Any]]:
    """What a scenario's tools become: those the faults name, injected (seeded by ``--seed``)."""

    def injected(tools: list[Any]) -> list[Any]:
        names = {getattr(t, "name", getattr(t, "__name__", "")) for t in tools}
        mine = {name: fault for name, fault in faults.items() if name in names}
        return inject(tools, mine, seed=seed or 0) if mine else tools

    return injected
