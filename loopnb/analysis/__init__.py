"""The analysis layer: questions asked of recordings, whichever format they were read from.

``audit`` answers the questions a user would otherwise write by hand; ``flow_counts`` counts the
decision flow's arrows, as the live view does; ``recovery_attempts`` and ``breaker_history`` are
the live view's recovery gauge and breaker board as frames; ``compare`` lays two runs side by side
(a ``Comparison``); ``scripted_from`` makes a recording's replies a ``ScriptedModel`` (a regression
test) and ``what_if`` replays a recording under another policy to where it diverges.
"""

import loopnb._face as _face
from loopnb.analysis._audit import Audit, audit
from loopnb.analysis._compare import Comparison, compare
from loopnb.analysis._flows import flow_counts
from loopnb.analysis._history import breaker_history, recovery_attempts
from loopnb.analysis._scripted import scripted_from
from loopnb.analysis._whatif import what_if
from loopnb.analysis._whatif_report import WhatIf

__all__ = [
    "Audit",
    "Comparison",
    "WhatIf",
    "audit",
    "breaker_history",
    "compare",
    "flow_counts",
    "recovery_attempts",
    "scripted_from",
    "what_if",
]

_face.publish(globals())
