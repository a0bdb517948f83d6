"""The notebook layer: run an engine in a cell and watch it, replay a recording, export a report.

``NotebookRunner(engine).run(task)`` shows the ``LiveView`` (decision flow, recovery gauge, breaker
board, turn timeline) while recording every turn; ``replay(recording)`` shows the same view for a
recorded run; ``to_html(recording, path)`` writes one offline HTML file; ``watch()`` shows any
OpenTelemetry-instrumented agent running in the kernel (through ``loopnb.otel.LiveSpans``). The
view reads events only: ``ViewModel`` is the pure fold behind loopnb's own panes (``PANES``);
``Pane`` is what a pane is, and ``panes=`` on the view, the runner, ``replay``, ``watch`` and
``to_html`` adds your own.
"""

import loopnb._face as _face
from loopnb.notebook._background import BackgroundRun
from loopnb.notebook._live import LiveView
from loopnb.notebook._panes import PANES, Pane
from loopnb.notebook._replay import replay
from loopnb.notebook._report import report_html, to_html
from loopnb.notebook._runner import NotebookRunner
from loopnb.notebook._viewmodel import ViewModel
from loopnb.notebook._watch import watch

__all__ = [
    "PANES",
    "BackgroundRun",
    "LiveView",
    "NotebookRunner",
    "Pane",
    "ViewModel",
    "replay",
    "report_html",
    "to_html",
    "watch",
]

_face.publish(globals())
