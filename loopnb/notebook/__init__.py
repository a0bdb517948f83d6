"""The notebook layer: run an engine in a cell and watch it, replay a recording, export a report.

``NotebookRunner(engine).run(task)`` shows the ``LiveView`` (decision flow, recovery gauge, breaker
board, turn timeline) while recording every turn; ``replay(recording)`` shows the same view for a
recorded run; ``to_html(recording, path)`` writes one offline HTML file. The view reads events
only: ``ViewModel`` is the pure fold behind every pane.
"""

import loopnb._face as _face
from loopnb.notebook._background import BackgroundRun
from loopnb.notebook._live import LiveView
from loopnb.notebook._replay import replay
from loopnb.notebook._report import report_html, to_html
from loopnb.notebook._runner import NotebookRunner
from loopnb.notebook._viewmodel import ViewModel

__all__ = [
    "BackgroundRun",
    "LiveView",
    "NotebookRunner",
    "ViewModel",
    "replay",
    "report_html",
    "to_html",
]

_face.publish(globals())
