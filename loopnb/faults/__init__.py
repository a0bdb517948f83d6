"""Fault injection: make an agent's tools and models fail on purpose, and see what it does.

>>> from loopnb import faults, inject
>>> fault = faults.error("disk busy").first(2)
>>> fault.label
'error("disk busy").first(2)'
>>> faults.parse(fault.label) == fault
True

``inject(target, {tool: fault}, seed=0)`` wraps a loopnb ``Tool``, a list of tools, a model (one
fault) or a plain function, and returns an object used the same way; the original is never
changed. Faults: ``error(text)``, ``crash(exc)``, ``hang(seconds)``, ``wrong(value)``, ``empty()``,
``slow(seconds)``, ``unavailable(status=503, retry_after=None)``; schedules ``.first(k)``,
``.always()`` (the default), ``.sometimes(p)`` and ``.when(**arguments)``. A label is also the
command line's syntax (``--fault read_file=error.first(2)``): ``parse`` reads it, evaluating nothing.

For wrappers of other frameworks' agents (one module each): ``FaultPlan.decide(tool, arguments,
run=..., call_id=...)`` is the one per-call decision (the ``Fault`` that fires, or ``None``), and
keeps the log, ``plan.injections`` (``Injection``: call id, tool, label, run); ``perform`` and
``aperform`` act a fired fault out around the real call; ``register_target(Target)`` adds the kind
of target to ``inject``, asked before loopnb's own.
"""

import loopnb._face as _face
from loopnb.faults import _callables, _inject, _models, _tools
from loopnb.faults._fault import Fault, FaultKind, crash, empty, error, hang, slow, unavailable, wrong
from loopnb.faults._inject import Target, inject, register_target
from loopnb.faults._label import FaultSyntaxError, parse
from loopnb.faults._perform import aperform, perform
from loopnb.faults._plan import FaultPlan, Injection

_inject.own_targets(_tools.Tools(), _models.Models(), _tools.ToolLists(), _callables.Callables())

__all__ = [
    "Fault",
    "FaultKind",
    "FaultPlan",
    "FaultSyntaxError",
    "Injection",
    "Target",
    "aperform",
    "crash",
    "empty",
    "error",
    "hang",
    "inject",
    "parse",
    "perform",
    "register_target",
    "slow",
    "unavailable",
    "wrong",
]

_face.publish(globals())
