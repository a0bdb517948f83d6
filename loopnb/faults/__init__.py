"""Fault injection: make any agent's tools or model fail on purpose, and see what the loop does.

    from loopnb import faults, inject

    tools = inject([read_file, list_dir], {"read_file": faults.error("disk busy").first(2)})
    model = inject(model, faults.unavailable(503).sometimes(0.3), seed=7)

A fault is what goes wrong: ``error(text)`` (a soft error the model reads), ``crash(exc)`` (the tool
raises: a panic), ``hang(seconds)`` (outlasts a timeout), ``wrong(value)`` and ``empty()``
(implicit: a plausible result, no error flag), ``slow(seconds)``, ``unavailable(status,
retry_after)`` (a model's ``ModelUnavailable``). A schedule says when: ``.first(k)`` (transient),
``.always()`` (permanent, the default), ``.sometimes(p)`` (seeded), ``.when(**arguments)``. Each
fault is written as its label, ``error("disk busy").first(2)``, which ``parse`` reads back without
evaluating anything (the CLI's ``--fault`` takes the same text).

``inject`` wraps a target and leaves the original alone; ``Schedule.decide`` is the one per-call
decision every wrapper shares, and ``register_target`` teaches ``inject`` a new kind of target.
"""

import loopnb._face as _face
from loopnb.faults import _langchain, _openai_agents, _pydantic_ai  # noqa: F401  (teach inject their targets)
from loopnb.faults._fault import (
    KINDS,
    Fault,
    FaultSyntaxError,
    crash,
    empty,
    error,
    hang,
    parse,
    slow,
    unavailable,
    wrong,
)
from loopnb.faults._plan import Injection, Outcome, Schedule, outcome
from loopnb.faults._targets import InjectedModel, InjectedTool, NoSuchTool, inject, register_target

__all__ = [
    "KINDS",
    "Fault",
    "FaultSyntaxError",
    "InjectedModel",
    "InjectedTool",
    "Injection",
    "NoSuchTool",
    "Outcome",
    "Schedule",
    "crash",
    "empty",
    "error",
    "hang",
    "inject",
    "outcome",
    "parse",
    "register_target",
    "slow",
    "unavailable",
    "wrong",
]

_face.publish(globals())
