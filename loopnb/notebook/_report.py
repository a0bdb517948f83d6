"""A static, self-contained, offline HTML report of a recording: every run, a document to read.

One file and no script: the panes are inline SVG drawn by ``_svg`` from the same ``ViewState``
the live view draws, and every turn's row shows, as text, what the model asked for and exactly
what it read. A Content-Security-Policy forbids the page from fetching anything, so it opens the
same on a plane as on a server (``loopnb.notebook._page``); a 100-turn run makes a report of about
100 kB. The page is ``Html``
filled into ``Html`` templates (``loopnb.notebook._html``): every text from a recording is escaped
wherever it goes, and the events are redacted before they are drawn (``exported_events``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from loopnb._palette import IDLE, PALE, PALETTE
from loopnb.engine._events import Event
from loopnb.notebook._html import Html, esc
from loopnb.notebook._layout import icon
from loopnb.notebook._markup import NAME_LIMIT
from loopnb.notebook._page import REPORT_STYLE, page
from loopnb.notebook._panes import Pane, checked_panes, drawn, folded
from loopnb.notebook._replay import EventSource, events_of
from loopnb.notebook._state import BreakerView, ReadView, TurnView, ViewState
from loopnb.notebook._svg import flow_svg, gauge_of_view, gauge_svg
from loopnb.notebook._timeline import timeline_svg
from loopnb.notebook._viewmodel import ViewModel, runs_of

FULL_ROWS = 1000
"""Turns shown in full (request, reply, every text read); a longer run's later turns get one line."""
TEXT_LIMIT = 4000
"""Characters shown of one text the model read; a cut says how much it left out."""

_BREAKER_WORD = {"closed": "closed", "half_open": "half-open", "open": "open"}
_BREAKER_CHANNEL = {"closed": "ok", "half_open": "soft", "open": "hard"}


def exported_events(source: EventSource) -> list[Event]:
    """``source``'s events as they may leave the process: secrets redacted (DESIGN.md, Recording).

    Whatever a recording's header says (a file claims ``"redacted": true`` if it was begun by a
    redacting recorder, even when one with ``redact=None`` appended to it later), every event goes
    through the default redactor; a ``Recorder``'s through its own redactor first. An event the
    redactor leaves alone is the very same object.
    """
    from loopnb.record._lines import dump_event, parse_event, redact_line
    from loopnb.record._redact import DEFAULT_REDACTOR  # the module's, looked up at each call

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


def _word(channel: str, text: str | None = None) -> Html:
    """A channel's word with its mark, in its colours: never colour alone."""
    return Html('<span class="word" style="border-color:{};background:{}">{}{}</span>').format(
        PALETTE.get(channel, IDLE), PALE.get(channel, IDLE), icon(channel), text or channel
    )


def _status(state: ViewState) -> Html:
    run = state.run
    turns = f"{len(state.turns):,} turn{'' if len(state.turns) == 1 else 's'}"
    if run.phase == "ok":
        tail = Html("{} output: <i>{}</i>").format(_word("ok", "finished"), esc(run.output or "", 400))
    elif run.phase == "hard":
        tail = Html("{} <b>{}</b>: {}").format(
            _word("hard", "ended hard"),
            esc(run.error or "LoopError", NAME_LIMIT),
            esc(run.message or "", 400),
        )
    else:
        tail = Html('<span class="muted">did not finish in this recording</span>')
    task = Html('<div class="task">task: {}</div>').format(esc(run.task, 400)) if run.task else Html()
    return Html('<div class="loopnb-status status">{} · {}{}</div>').format(turns, tail, task)


def _cooldown(b: BreakerView) -> str:
    if b.state != "open":
        return "—"
    if b.cooldown_left is None:
        return "unknown"
    if b.cooldown_left <= 0:
        return "over: the next call is a trial"
    return f"{b.cooldown_left:.1f} s of {b.cooldown:g} s"


def _board(state: ViewState) -> Html:
    rows = Html().join(
        Html(
            '<tr class="loopnb-breaker" data-state="{}"><td><code>{}</code></td><td>{}</td>'
            '<td class="loopnb-breaker-state" style="font-weight:700;white-space:nowrap">{} {}</td>'
            "<td>{}</td><td>{}</td></tr>"
        ).format(
            b.state,
            esc(b.name, 60),
            b.scope,
            icon(_BREAKER_CHANNEL[b.state]),
            _BREAKER_WORD[b.state],
            b.failures,
            _cooldown(b),
        )
        for b in state.breakers
    )
    table = (
        Html(
            "<table><thead><tr><th>breaker</th><th>scope</th><th>state</th><th>failures</th>"
            "<th>cooldown left</th></tr></thead><tbody>{}</tbody></table>"
        ).format(rows)
        if rows
        else Html('<div class="muted">no breakers in this run</div>')
    )
    return Html('<div class="loopnb-board"><h3>breaker board</h3>{}</div>').format(table)


def _read(item: ReadView) -> Html:
    if item.source == "engine":
        tag = f"engine feedback · {item.producer or item.name}"
    elif item.is_error:
        tag = f"{item.name} · error ({item.producer or 'tool'})"
    else:
        tag = f"{item.name} · ok"
    err = Html(" error") if item.is_error else Html()
    out = Html('<div class="item{0}">{1}</div><pre class="loopnb-read{0}">{2}</pre>').format(
        err, esc(tag, 160), esc(item.text, TEXT_LIMIT)
    )
    if item.note:
        out += Html(
            '<div class="item">recovery note (beside the result, never merged into it)</div><pre>{}</pre>'
        ).format(esc(item.note, 2000))
    return out


def _row(t: TurnView, anchor: str, full: bool) -> Html:
    head = Html(
        '<tr class="loopnb-turn" id="{anchor}-t{turn}" data-channel="{channel}">'
        '<td class="n"><a href="#{anchor}-t{turn}">{turn}</a></td><td>{word}</td>'
        "<td>{producer}</td><td>{model}</td>"
    ).format(
        anchor=anchor,
        turn=t.turn,
        channel=t.channel,
        word=_word(t.channel),
        producer=Html("<code>{}</code>").format(esc(t.producer, NAME_LIMIT)) if t.producer else Html(),
        model=esc(t.model or "", NAME_LIMIT),
    )
    if not full:
        err = Html(" · {}").format(esc(t.error, NAME_LIMIT)) if t.error else Html()
        return Html('{}<td class="wide" colspan="2"><code>{}</code>{}</td></tr>').format(
            head, esc(", ".join(t.tools), 200), err
        )
    calls = Html("<br>").join(
        Html("<code>{}({})</code>").format(esc(c.name, 80), esc(c.arguments, 400)) for c in t.calls
    )
    reply = Html('<div class="reply">{}</div>').format(esc(t.reply_text, 1500)) if t.reply_text else Html()
    read = Html().join(_read(r) for r in t.read)
    if t.channel == "hard":
        read += Html(
            '<div class="item error">the run ended here: {} (the model never read this)</div>'
            '<pre class="loopnb-error error">{}</pre>'
        ).format(esc(t.error or t.producer or "LoopError", NAME_LIMIT), esc(t.error_text or "", 2000))
    elif not read:
        read = Html('<span class="muted">nothing: a final reply</span>')
    return Html('{}<td class="wide">{}{}</td><td class="wide">{}</td></tr>').format(head, calls, reply, read)


def _turns(turns: Sequence[TurnView], anchor: str) -> Html:
    rows = Html().join(_row(t, anchor, i < FULL_ROWS) for i, t in enumerate(turns))
    note = (
        Html(
            '<p class="muted">turns past the first {:,} show one line each; '
            "<code>load(path).turns</code> has them all</p>"
        ).format(FULL_ROWS)
        if len(turns) > FULL_ROWS
        else Html()
    )
    return Html(
        '<table class="loopnb-turns"><thead><tr><th>turn</th><th>channel</th><th>producer</th>'
        "<th>model</th><th>the model asked for</th><th>then the model read</th></tr></thead>"
        "<tbody>{}</tbody></table>{}"
    ).format(rows, note)


def _section(index: int, run_id: str, state: ViewState) -> Html:
    anchor = f"loopnb-r{index}"  # ids never come from the (untrusted) run id
    return Html(
        '<section class="loopnb-run" id="{anchor}" data-run="{run}">'
        "<h2>run <code>{run_cut}</code></h2>{status}"
        '{flow}<div class="panes">{gauge}{board}</div>'
        "{timeline}<h3>turns</h3>{turns}</section>"
    ).format(
        anchor=anchor,
        run=run_id,
        run_cut=esc(run_id, NAME_LIMIT),
        status=_status(state),
        flow=flow_svg(state),
        gauge=_last_gauge(state),
        board=_board(state),
        timeline=timeline_svg(state.turns, anchor, simulated=state.run.simulated),
        turns=_turns(state.turns, anchor),
    )


def _own_panes(panes: tuple[Pane, ...], events: list[Event], state: ViewState) -> Html:
    """Your panes under a run's section, each folded over the run's events."""
    return Html().join(
        Html('<div class="loopnb-pane-{}">{}</div>').format(pane.name, drawn(pane, pane_state, state, None))
        for pane, pane_state in zip(panes, folded(panes, events), strict=True)
    )


def _last_gauge(state: ViewState) -> Html:
    """The gauge of the run's last turn that called a tool (as the live view shows it with that
    turn selected); "no tool call yet" only for a run that made none."""
    called = [t for t in state.turns if t.gauge.tool is not None]
    return gauge_svg(gauge_of_view(state, called[-1].turn) if called else state.gauge)


def _contents(states: list[tuple[str, ViewState]]) -> Html:
    if len(states) < 2:
        return Html()
    items = Html().join(
        Html('<li><a href="#loopnb-r{}"><code>{}</code></a> · {} {:,} turn{}</li>').format(
            i,
            esc(rid, NAME_LIMIT),
            _word(s.run.phase if s.run.phase in PALETTE else "soft", s.run.phase),
            len(s.turns),
            "" if len(s.turns) == 1 else "s",
        )
        for i, (rid, s) in enumerate(states)
    )
    return Html('<ol class="runs">{}</ol>').format(items)


def _disagreements(runs: dict[str, list[Event]]) -> Html:
    """The section "where the source disagrees" for runs another framework made (an event with a
    ``source_status``): ``audit(rec).disagreements()`` as a table, each turn linked to its row in
    the run's section; nothing for loopnb's own runs."""
    if not any(getattr(e, "source_status", None) for events in runs.values() for e in events):
        return Html()
    from loopnb.record._disagree import REASONS, disagreements
    from loopnb.record._frames import event_table, turn_table

    every = [e for events in runs.values() for e in events]
    rows = disagreements(turn_table(every), event_table(every)).astype(object).to_dict("records")
    section = Html('<section class="loopnb-disagreements"><h2>where the source disagrees</h2>{}</section>')
    if not rows:
        return section.format(Html("<p>nowhere: the source marks every call as the channel table does</p>"))
    anchors = {rid: f"loopnb-r{i}" for i, rid in enumerate(runs)}

    def cell(value: object, limit: int) -> Html:
        return esc(value, limit) if isinstance(value, str) else Html()

    def turn(r: dict[Any, Any]) -> Html:
        anchor = anchors.get(str(r["run_id"]))
        return (
            Html('<a href="#{0}-t{1}">{1}</a>').format(anchor, r["turn"])
            if anchor
            else Html.escape(r["turn"])
        )

    body = Html().join(
        Html(
            '<tr class="loopnb-disagreement" data-reason="{reason}">'
            '<td><code>{run}</code></td><td class="n">{turn}</td>'
            "<td><code>{tool}</code></td><td><code>{source}</code></td>"
            "<td>{word}</td><td><code>{reason}</code></td>"
            '<td class="wide"><pre>{detail}</pre></td></tr>'
        ).format(
            reason=r["reason"],
            run=cell(r["run_id"], NAME_LIMIT),
            turn=turn(r),
            tool=cell(r["tool"], 80),
            source=cell(r["source_status"], 80),
            word=_word(str(r["channel"])),
            detail=cell(r["detail"], 2000),
        )
        for r in rows
    )
    found = {r["reason"] for r in rows}
    reasons = Html().join(
        Html("<li><code>{}</code>: {}</li>").format(k, v) for k, v in REASONS.items() if k in found
    )
    return section.format(
        Html(
            "<p>Calls and turns the framework that made the run (the <i>source</i>) marks "
            "otherwise than the channel table, so that its own record misleads about what the model "
            'read:</p><ul class="runs">{}</ul>'
            '<table class="loopnb-turns"><thead><tr><th>run</th><th>turn</th><th>tool</th><th>source</th>'
            "<th>channel</th><th>reason</th><th>detail</th></tr></thead>"
            "<tbody>{}</tbody></table>"
        ).format(reasons, body)
    )


def _usage(events: list[Event]) -> Html:
    """The runs' tokens, wall time and cost: ``Audit.usage()``'s rows, then, once each, the price
    table they came from and why a cost is missing."""
    from loopnb.analysis import Audit
    from loopnb.analysis._cells import cell_text, duration
    from loopnb.analysis._usage import dollars, simulated_runs
    from loopnb.record._frames import turn_table

    usage = Audit(turn_table(events), simulated=simulated_runs(events)).usage("run")
    if not (usage["input_tokens"].notna().any() or usage["output_tokens"].notna().any()):
        return Html('<p class="muted loopnb-usage">usage and cost: no model reported tokens</p>')
    rows = []
    for r in usage.astype(object).to_dict("records"):
        cost, simulated = r["cost_usd"], r["clock"] == "simulated"
        counts = Html().join(
            Html('<td class="n">{}</td>').format(cell_text(c, r[c]))
            for c in ("turns", "input_tokens", "output_tokens")
        )
        rows.append(
            Html(
                '<tr><td class="wide"><code>{}</code></td><td class="wide">{}</td>{}'
                '<td class="n">{}</td><td class="n">{}</td></tr>'
            ).format(
                esc(r["run_id"], NAME_LIMIT),
                esc(cell_text("models", r["models"]), 400),
                counts,
                "simulated clock" if simulated else duration(r["latency_ms"]),
                dollars(cost) if isinstance(cost, float) else "-",
            )
        )
    heads = Html().join(
        Html("<th>{}</th>").format(h)
        for h in ("run", "models", "turns", "tokens in", "tokens out", "wall time", "cost")
    )
    sources = sorted({str(v) for v in usage["price_source"].dropna()})
    missing = sorted({part for v in usage["unpriced"].dropna() for part in str(v).split("; ")})
    notes = [f"cost in US dollars, as of each turn's start, from {'; '.join(sources)}"] if sources else []
    notes += [f"no cost where: {'; '.join(missing)}"] if missing else []
    foot = Html().join(Html('<p class="muted">{}</p>').format(esc(n, 2000)) for n in notes)
    return Html(
        '<section class="loopnb-usage"><h2>usage and cost</h2><table class="loopnb-turns">'
        "<thead><tr>{}</tr></thead><tbody>{}</tbody></table>{}</section>"
    ).format(heads, Html().join(rows), foot)


def report_html(
    source: EventSource,
    *,
    run_id: str | None = None,
    title: str = "loopnb report",
    panes: Iterable[Pane] = (),
) -> str:
    """The report as one HTML string (every run, or only ``run_id``), secrets redacted; ``panes``
    (your own, ``loopnb.notebook.Pane``) are drawn under each run, each from that run's events."""
    own = checked_panes(panes, "report")
    runs = runs_of(exported_events(source))
    if run_id is not None:
        if run_id not in runs:
            raise ValueError(f"no run {run_id!r} in the recording; its runs are {list(runs)}")
        runs = {run_id: runs[run_id]}
    states = [(rid, ViewModel.fold(events)) for rid, events in runs.items()]
    sections = [
        _section(i, rid, state) + _own_panes(own, runs[rid], state) for i, (rid, state) in enumerate(states)
    ]
    if not sections:
        sections.append(Html("<p>this recording holds no runs</p>"))
    sections.insert(0, _disagreements(runs))
    body = Html("{}{}{}").format(
        _contents(states), _usage([e for evs in runs.values() for e in evs]), Html().join(sections)
    )
    return page(title, REPORT_STYLE, body)


def to_html(
    source: EventSource,
    path: str | Path,
    *,
    run_id: str | None = None,
    title: str = "loopnb report",
    panes: Iterable[Pane] = (),
) -> Path:
    """Write the report of ``source`` (a ``Recording``, ``Recorder``, path or events) to ``path``.

    Written whole or not at all (a temporary file renamed onto ``path``). A recording at ``path``
    (``load(p).to_html(p)``) is never replaced, and a failure to write (a folder, a full disk) is
    a ``RecordingError`` naming ``path``.
    """
    return write_page(
        path,
        lambda: report_html(source, run_id=run_id, title=title, panes=panes),
        "a report is never written over one; give the report its own name (e.g. report.html)",
    )


def write_page(path: str | Path, page: Callable[[], str], refusal: str) -> Path:
    """Write the HTML ``page()`` makes to ``path``, whole or not at all. A recording of any format
    at ``path`` is never replaced: a ``RecordingError`` naming it, then ``refusal``, before the
    page is made."""
    from loopnb.fileformats._load import holds_recording
    from loopnb.record import RecordingError
    from loopnb.record._files import replacing

    path = Path(path)
    if holds_recording(path):
        raise RecordingError(f"is a loopnb recording: {refusal}", path=path)
    text = page()
    with replacing(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return path
