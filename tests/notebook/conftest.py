"""Helpers for the notebook-layer tests: run a scenario and keep its events."""

from __future__ import annotations

from typing import Any

from loopnb import LoopError

# live_view.ipynb is executed by test_notebook_exec.py (nbclient), not collected by nbval
collect_ignore_glob = ["*.ipynb"]


class Events(list):
    """An observer that keeps every event."""

    def __call__(self, event: Any) -> None:
        self.append(event)

    def of(self, kind: str) -> list[Any]:
        return [e for e in self if e.kind == kind]


def run_events(scenario: tuple[Any, ...]) -> tuple[Events, Any]:
    """Run a scenario ``(engine, task[, cancel token])``; its events and the result or LoopError."""
    engine, task = scenario[0], scenario[1]
    kwargs = {"cancel": scenario[2]} if len(scenario) > 2 and not hasattr(scenario[2], "advance") else {}
    events = Events()
    engine.subscribe(events)
    try:
        outcome: Any = engine.run(task, **kwargs)
    except LoopError as err:
        outcome = err
    return events, outcome
