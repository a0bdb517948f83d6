"""A static, self-contained, offline HTML report of a recording: the four panes of every run.

One file: plotly.js is inlined (no CDN), the rest is escaped HTML tables. A Content-Security-Policy
forbids the page from fetching anything, so it opens the same on a plane as on a server.
"""

from __future__ import annotations

from pathlib import Path

import plotly.io as pio

from loopnb.engine._events import Event
from loopnb.notebook._markup import (
    NAME_LIMIT,
    board_html,
    esc,
    gauge_text,
    status_html,
    turns_table_html,
)
from loopnb.notebook._render import figure
from loopnb.notebook._replay import EventSource, events_of
from loopnb.notebook._viewmodel import ViewModel, runs_of

_CSP = (
    "default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; "
    "img-src data: blob:; font-src data:"
)
_STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:20px} h2{font-size:16px;margin-top:28px;border-top:1px solid #ddd;padding-top:12px}
table.loopnb-turns td,table.loopnb-turns th{border-bottom:1px solid #eee;padding:3px 6px;vertical-align:top;
overflow-wrap:anywhere}
.loopnb-board table td,.loopnb-board table th{padding:2px 8px}
"""


def exported_events(source: EventSource) -> list[Event]:
    """``source``'s events as they may leave the process: secrets redacted (DESIGN.md, Recording).

    Whatever a recording's header says (a file claims ``"redacted": true`` if it was begun by a
    redacting recorder, even when one with ``redact=None`` appended to it later), every event goes
    through the default redactor; a ``Recorder``'s through its own redactor first. An event the
    redactor leaves alone is the very same object.
    """
    from loopnb.record._lines import dump_event, parse_event, redact_line
    from loopnb.record._redact import DEFAULT_REDACTOR

    exported = getattr(source, "exported_events", None)
    if callable(exported):  # a Recorder: its own redaction settings, then the defaults
        events = list(exported()[0])
        if getattr(source, "redact", None) is DEFAULT_REDACTOR:
            return events
    else:
        events = events_of(source)
    out: list[Event] = []
    for event in events:
        raw = dump_event(event)
        line = redact_line(raw, DEFAULT_REDACTOR)
        out.append(event if line == raw else parse_event(line))
    return out


def report_html(source: EventSource, *, run_id: str | None = None, title: str = "loopnb report") -> str:
    """The report as one HTML string (every run, or only ``run_id``), secrets redacted."""
    runs = runs_of(exported_events(source))
    if run_id is not None:
        if run_id not in runs:
            raise ValueError(f"no run {run_id!r} in the recording; its runs are {list(runs)}")
        runs = {run_id: runs[run_id]}
    sections = []
    first = True
    for index, (rid, events) in enumerate(runs.items()):
        state = ViewModel.fold(events)
        fig = figure(state)
        fig.update_layout(width=1100)
        plot = pio.to_html(
            fig,
            include_plotlyjs=first,
            full_html=False,
            config={"displaylogo": False, "displayModeBar": False},
            # plotly writes the id into a script's string literal as is: never the untrusted run id
            div_id=f"loopnb-run-{index}",
        )
        first = False
        sections.append(
            f'<section class="loopnb-run" data-run="{esc(rid)}">'
            f"<h2>run <code>{esc(rid, NAME_LIMIT)}</code></h2>"
            f"{status_html(state)}{plot}"
            f"<p><b>recovery gauge</b>: {esc(gauge_text(state.gauge))}</p>{board_html(state)}"
            f"<h3>turns</h3>{turns_table_html(state.turns)}</section>"
        )
    if not sections:
        sections.append("<p>this recording holds no runs</p>")
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        f"<title>{esc(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{esc(title)}</h1>{''.join(sections)}</body></html>\n"
    )


def to_html(
    source: EventSource, path: str | Path, *, run_id: str | None = None, title: str = "loopnb report"
) -> Path:
    """Write the report of ``source`` (a ``Recording``, ``Recorder``, path or events) to ``path``.

    Written whole or not at all (a temporary file renamed onto ``path``). A recording at ``path``
    (``load(p).to_html(p)``) is never replaced, and a failure to write (a folder, a full disk) is
    a ``RecordingError`` naming ``path``.
    """
    from loopnb.record._errors import RecordingError
    from loopnb.record._files import holds_recording, replacing

    path = Path(path)
    if holds_recording(path):
        raise RecordingError(
            "is a loopnb recording: a report is never written over one; give the report its own "
            "name (e.g. report.html)",
            path=path,
        )
    page = report_html(source, run_id=run_id, title=title)
    with replacing(path) as tmp:
        tmp.write_text(page, encoding="utf-8")
    return path
