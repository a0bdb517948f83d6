"""A static, self-contained, offline HTML report of a recording: every run, a document to read.

One file and no script: the panes are inline SVG drawn by ``_svg`` from the same ``ViewState``
the live view draws, and every turn's row shows, as text, what the model asked for and exactly
what it read. A Content-Security-Policy forbids the page from fetching anything, so it opens the
same on a plane as on a server; a 100-turn run makes a report of about 100 kB.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from loopnb._palette import ACCENT, IDLE, INK, PALE, PALETTE
from loopnb.engine._events import Event
from loopnb.notebook._layout import CODE_BG, CODE_FONT, DARK, LIGHT, LINE, MUTED, PAGE, TEXT, UI_FONT, icon
from loopnb.notebook._markup import NAME_LIMIT, esc
from loopnb.notebook._replay import EventSource, events_of
from loopnb.notebook._state import BreakerView, ReadView, TurnView, ViewState
from loopnb.notebook._svg import SVG_STYLE, flow_svg, gauge_svg
from loopnb.notebook._timeline import timeline_svg
from loopnb.notebook._viewmodel import ViewModel, runs_of

FULL_ROWS = 1000
"""Turns shown in full (request, reply, every text read); a longer run's later turns get one line."""
TEXT_LIMIT = 4000
"""Characters shown of one text the model read; a cut says how much it left out."""

_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def _theme(values: dict[str, str]) -> str:
    return ";".join(f"--jp-{name}:{value}" for name, value in values.items())


_STYLE = (
    f":root{{{_theme(LIGHT)};color-scheme:light dark}}"
    f"@media (prefers-color-scheme:dark){{:root{{{_theme(DARK)}}}}}"  # a dark browser: JupyterLab's dark
    f"""
body{{font-family:{UI_FONT};margin:24px auto;padding:0 16px;color:{TEXT};background:{PAGE};
max-width:1240px;font-size:14px;line-height:1.4}}
a{{color:inherit}}
h1{{font-size:22px;margin:0 0 6px}} h2{{font-size:17px;margin:36px 0 8px;border-top:2px solid {LINE};
padding-top:14px;overflow-wrap:anywhere}} h3{{font-size:15px;margin:22px 0 6px}}
code{{font-family:{CODE_FONT};font-size:12px}}
.runs{{margin:0;padding-left:20px}} .status{{margin:4px 0 12px}} .task{{color:{MUTED}}}
.word{{display:inline-flex;align-items:center;gap:0;padding:0 7px;border-radius:9px;color:{INK};
font-weight:600;white-space:nowrap;border:1px solid}}
.panes{{display:flex;flex-wrap:wrap;gap:12px 28px;align-items:flex-start;margin:8px 0}}
.loopnb-board{{flex:1 1 420px;min-width:0}}
.loopnb-board h3{{font-size:13px;margin:12px 0 4px}} .loopnb-board table{{border-collapse:collapse}}
.loopnb-board td,.loopnb-board th{{padding:2px 10px 2px 0;text-align:left;vertical-align:top}}
.loopnb-board th{{white-space:nowrap}} .loopnb-board td:first-child{{overflow-wrap:anywhere}}
svg.loopnb-icon{{display:inline-block;vertical-align:-1px}}
table.loopnb-turns{{border-collapse:collapse;width:100%;font-size:13px}}
table.loopnb-turns th{{text-align:left;white-space:nowrap;border-bottom:2px solid {LINE};padding:4px 8px;
position:sticky;top:0;background:{PAGE}}}
table.loopnb-turns td{{border-bottom:1px solid {LINE};padding:5px 8px;vertical-align:top;
overflow-wrap:break-word}}
table.loopnb-turns td.wide{{overflow-wrap:anywhere;min-width:14em}}
table.loopnb-turns td.n{{white-space:nowrap;text-align:right}}
table.loopnb-turns tr:target td:first-child{{box-shadow:inset 4px 0 0 {ACCENT}}}
tr.loopnb-turn{{scroll-margin-top:40px}}
.item{{font-size:12px;color:{MUTED};margin-top:4px}} .item.error{{color:{TEXT};font-weight:600}}
pre{{white-space:pre-wrap;overflow-wrap:anywhere;margin:2px 0 6px;padding:4px 6px;background:{CODE_BG};
color:{TEXT};font-family:{CODE_FONT};border-radius:4px;max-height:18em;overflow:auto;font-size:12px}}
pre.error{{border-left:3px solid {PALETTE["hard"]}}}
.reply{{font-style:italic;margin-top:3px}} .muted{{color:{MUTED}}}
@media print{{pre{{max-height:none}} table.loopnb-turns th{{position:static}}}}
""" + SVG_STYLE
)
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


def _word(channel: str, text: str | None = None) -> str:
    """A channel's word with its mark, in its colours: never colour alone."""
    color, pale = PALETTE.get(channel, IDLE), PALE.get(channel, IDLE)
    return (
        f'<span class="word" style="border-color:{color};background:{pale}">'
        f"{icon(channel)}{esc(text or channel)}</span>"
    )


def _status(state: ViewState) -> str:
    run = state.run
    turns = f"{len(state.turns):,} turn{'' if len(state.turns) == 1 else 's'}"
    if run.phase == "ok":
        tail = f"{_word('ok', 'finished')} output: <i>{esc(run.output or '', 400)}</i>"
    elif run.phase == "hard":
        tail = (
            f"{_word('hard', 'ended hard')} <b>{esc(run.error or 'LoopError', NAME_LIMIT)}</b>: "
            f"{esc(run.message or '', 400)}"
        )
    else:
        tail = '<span class="muted">did not finish in this recording</span>'
    task = f'<div class="task">task: {esc(run.task, 400)}</div>' if run.task else ""
    return f'<div class="loopnb-status status">{turns} · {tail}{task}</div>'


def _cooldown(b: BreakerView) -> str:
    if b.state != "open":
        return "—"
    if b.cooldown_left is None:
        return "unknown"
    if b.cooldown_left <= 0:
        return "over: the next call is a trial"
    return f"{b.cooldown_left:.1f} s of {b.cooldown:g} s"


def _board(state: ViewState) -> str:
    rows = "".join(
        f'<tr class="loopnb-breaker" data-state="{esc(b.state)}"><td><code>{esc(b.name, 60)}</code></td>'
        f'<td>{esc(b.scope)}</td><td class="loopnb-breaker-state" style="font-weight:700;white-space:nowrap">'
        f"{icon(_BREAKER_CHANNEL[b.state])} {esc(_BREAKER_WORD[b.state])}</td>"
        f"<td>{b.failures}</td><td>{esc(_cooldown(b))}</td></tr>"
        for b in state.breakers
    )
    table = (
        "<table><thead><tr><th>breaker</th><th>scope</th><th>state</th><th>failures</th>"
        f"<th>cooldown left</th></tr></thead><tbody>{rows}</tbody></table>"
        if rows
        else '<div class="muted">no breakers in this run</div>'
    )
    return f'<div class="loopnb-board"><h3>breaker board</h3>{table}</div>'


def _read(item: ReadView) -> str:
    if item.source == "engine":
        tag = f"engine feedback · {item.producer or item.name}"
    elif item.is_error:
        tag = f"{item.name} · error ({item.producer or 'tool'})"
    else:
        tag = f"{item.name} · ok"
    err = " error" if item.is_error else ""
    out = (
        f'<div class="item{err}">{esc(tag, 160)}</div>'
        f'<pre class="loopnb-read{err}">{esc(item.text, TEXT_LIMIT)}</pre>'
    )
    if item.note:
        out += (
            '<div class="item">recovery note (beside the result, never merged into it)</div>'
            f"<pre>{esc(item.note, 2000)}</pre>"
        )
    return out


def _row(t: TurnView, anchor: str, full: bool) -> str:
    producer = f"<code>{esc(t.producer, NAME_LIMIT)}</code>" if t.producer else ""
    head = (
        f'<tr class="loopnb-turn" id="{anchor}-t{t.turn}" data-channel="{esc(t.channel)}">'
        f'<td class="n"><a href="#{anchor}-t{t.turn}">{t.turn}</a></td><td>{_word(t.channel)}</td>'
        f"<td>{producer}</td><td>{esc(t.model or '', NAME_LIMIT)}</td>"
    )
    if not full:
        tools = esc(", ".join(t.tools), 200)
        err = f" · {esc(t.error, NAME_LIMIT)}" if t.error else ""
        return f'{head}<td class="wide" colspan="2"><code>{tools}</code>{err}</td></tr>'
    calls = "<br>".join(f"<code>{esc(c.name, 80)}({esc(c.arguments, 400)})</code>" for c in t.calls)
    reply = f'<div class="reply">{esc(t.reply_text, 1500)}</div>' if t.reply_text else ""
    read = "".join(_read(r) for r in t.read)
    if t.channel == "hard":
        error = esc(t.error or t.producer or "LoopError", NAME_LIMIT)
        read += (
            f'<div class="item error">the run ended here: {error}'
            " (the model never read this)</div>"
            f'<pre class="loopnb-error error">{esc(t.error_text or "", 2000)}</pre>'
        )
    elif not read:
        read = '<span class="muted">nothing: a final reply</span>'
    return f'{head}<td class="wide">{calls}{reply}</td><td class="wide">{read}</td></tr>'


def _turns(turns: Sequence[TurnView], anchor: str) -> str:
    rows = "".join(_row(t, anchor, i < FULL_ROWS) for i, t in enumerate(turns))
    note = (
        f'<p class="muted">turns past the first {FULL_ROWS:,} show one line each; '
        "<code>load(path).turns</code> has them all</p>"
        if len(turns) > FULL_ROWS
        else ""
    )
    return (
        '<table class="loopnb-turns"><thead><tr><th>turn</th><th>channel</th><th>producer</th>'
        "<th>model</th><th>the model asked for</th><th>then the model read</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>{note}"
    )


def _section(index: int, run_id: str, state: ViewState) -> str:
    anchor = f"loopnb-r{index}"  # ids never come from the (untrusted) run id
    return (
        f'<section class="loopnb-run" id="{anchor}" data-run="{esc(run_id)}">'
        f"<h2>run <code>{esc(run_id, NAME_LIMIT)}</code></h2>{_status(state)}"
        f'{flow_svg(state)}<div class="panes">{gauge_svg(state.gauge)}{_board(state)}</div>'
        f"{timeline_svg(state.turns, anchor)}<h3>turns</h3>{_turns(state.turns, anchor)}</section>"
    )


def _contents(states: list[tuple[str, ViewState]]) -> str:
    if len(states) < 2:
        return ""
    items = "".join(
        f'<li><a href="#loopnb-r{i}"><code>{esc(rid, NAME_LIMIT)}</code></a> · '
        f"{_word(s.run.phase if s.run.phase in PALETTE else 'soft', s.run.phase)} "
        f"{len(s.turns):,} turn{'' if len(s.turns) == 1 else 's'}</li>"
        for i, (rid, s) in enumerate(states)
    )
    return f'<ol class="runs">{items}</ol>'


def _disagreements(runs: dict[str, list[Event]]) -> str:
    """The section "where the source disagrees" for runs another framework made (an event with a
    ``source_status``): ``audit(rec).disagreements()`` as a table, each turn linked to its row in
    the run's section; ``""`` for loopnb's own runs."""
    if not any(getattr(e, "source_status", None) for events in runs.values() for e in events):
        return ""
    from loopnb.record._disagree import REASONS, disagreements
    from loopnb.record._frames import event_table, turn_table

    every = [e for events in runs.values() for e in events]
    rows = disagreements(turn_table(every), event_table(every)).astype(object).to_dict("records")
    head = '<section class="loopnb-disagreements"><h2>where the source disagrees</h2>'
    if not rows:
        return f"{head}<p>nowhere: the source marks every call as the channel table does</p></section>"
    anchors = {rid: f"loopnb-r{i}" for i, rid in enumerate(runs)}

    def cell(value: object, limit: int) -> str:
        return esc(value, limit) if isinstance(value, str) else ""

    def turn(r: dict[Any, Any]) -> str:
        anchor = anchors.get(str(r["run_id"]))
        return f'<a href="#{anchor}-t{r["turn"]}">{r["turn"]}</a>' if anchor else str(r["turn"])

    body = "".join(
        f'<tr class="loopnb-disagreement" data-reason="{esc(r["reason"])}">'
        f'<td><code>{cell(r["run_id"], NAME_LIMIT)}</code></td><td class="n">{turn(r)}</td>'
        f"<td><code>{cell(r['tool'], 80)}</code></td><td><code>{cell(r['source_status'], 80)}</code></td>"
        f"<td>{_word(str(r['channel']))}</td><td><code>{esc(r['reason'])}</code></td>"
        f'<td class="wide"><pre>{cell(r["detail"], 2000)}</pre></td></tr>'
        for r in rows
    )
    found = {r["reason"] for r in rows}
    reasons = "".join(f"<li><code>{esc(k)}</code>: {esc(v)}</li>" for k, v in REASONS.items() if k in found)
    return (
        f"{head}<p>Calls and turns the framework that made the run (the <i>source</i>) marks "
        "otherwise than the channel table, so that its own record misleads about what the model "
        f'read:</p><ul class="runs">{reasons}</ul>'
        '<table class="loopnb-turns"><thead><tr><th>run</th><th>turn</th><th>tool</th><th>source</th>'
        "<th>channel</th><th>reason</th><th>detail</th></tr></thead>"
        f"<tbody>{body}</tbody></table></section>"
    )


def _usage(events: list[Event]) -> str:
    """The runs' tokens, wall time and cost: ``Audit.usage()``'s rows, then, once each, the price
    table they came from and why a cost is missing."""
    from loopnb.record._audit import Audit
    from loopnb.record._audit_text import cell_text, duration
    from loopnb.record._frames import turn_table
    from loopnb.record._usage import dollars, simulated_runs

    usage = Audit(turn_table(events), simulated=simulated_runs(events)).usage("run")
    if not (usage["input_tokens"].notna().any() or usage["output_tokens"].notna().any()):
        return '<p class="muted loopnb-usage">usage and cost: no model reported tokens</p>'
    rows = []
    for r in usage.astype(object).to_dict("records"):
        cost, simulated = r["cost_usd"], r["clock"] == "simulated"
        counts = "".join(
            f'<td class="n">{esc(cell_text(c, r[c]))}</td>'
            for c in ("turns", "input_tokens", "output_tokens")
        )
        rows.append(
            f'<tr><td class="wide"><code>{esc(r["run_id"], NAME_LIMIT)}</code></td>'
            f'<td class="wide">{esc(cell_text("models", r["models"]), 400)}</td>{counts}'
            f'<td class="n">{"simulated clock" if simulated else esc(duration(r["latency_ms"]))}</td>'
            f'<td class="n">{dollars(cost) if isinstance(cost, float) else "-"}</td></tr>'
        )
    heads = "".join(
        f"<th>{h}</th>" for h in ("run", "models", "turns", "tokens in", "tokens out", "wall time", "cost")
    )
    sources = sorted({str(v) for v in usage["price_source"].dropna()})
    missing = sorted({part for v in usage["unpriced"].dropna() for part in str(v).split("; ")})
    notes = [f"cost in US dollars, as of each turn's start, from {'; '.join(sources)}"] if sources else []
    notes += [f"no cost where: {'; '.join(missing)}"] if missing else []
    foot = "".join(f'<p class="muted">{esc(n, 2000)}</p>' for n in notes)
    return (
        '<section class="loopnb-usage"><h2>usage and cost</h2><table class="loopnb-turns">'
        f"<thead><tr>{heads}</tr></thead><tbody>{''.join(rows)}</tbody></table>{foot}</section>"
    )


def report_html(source: EventSource, *, run_id: str | None = None, title: str = "loopnb report") -> str:
    """The report as one HTML string (every run, or only ``run_id``), secrets redacted."""
    runs = runs_of(exported_events(source))
    if run_id is not None:
        if run_id not in runs:
            raise ValueError(f"no run {run_id!r} in the recording; its runs are {list(runs)}")
        runs = {run_id: runs[run_id]}
    states = [(rid, ViewModel.fold(events)) for rid, events in runs.items()]
    sections = [_section(i, rid, state) for i, (rid, state) in enumerate(states)]
    if not sections:
        sections.append("<p>this recording holds no runs</p>")
    sections.insert(0, _disagreements(runs))
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        f"<title>{esc(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{esc(title)}</h1>{_contents(states)}{_usage([e for evs in runs.values() for e in evs])}"
        f"{''.join(sections)}</body></html>\n"
    )


def to_html(
    source: EventSource, path: str | Path, *, run_id: str | None = None, title: str = "loopnb report"
) -> Path:
    """Write the report of ``source`` (a ``Recording``, ``Recorder``, path or events) to ``path``.

    Written whole or not at all (a temporary file renamed onto ``path``). A recording at ``path``
    (``load(p).to_html(p)``) is never replaced, and a failure to write (a folder, a full disk) is
    a ``RecordingError`` naming ``path``.
    """
    return write_page(
        path,
        lambda: report_html(source, run_id=run_id, title=title),
        "a report is never written over one; give the report its own name (e.g. report.html)",
    )


def write_page(path: str | Path, page: Callable[[], str], refusal: str) -> Path:
    """Write the HTML ``page()`` makes to ``path``, whole or not at all. A recording of any format
    at ``path`` is never replaced: a ``RecordingError`` naming it, then ``refusal``, before the
    page is made."""
    from loopnb.foreign._load import holds_recording
    from loopnb.record._errors import RecordingError
    from loopnb.record._files import replacing

    path = Path(path)
    if holds_recording(path):
        raise RecordingError(f"is a loopnb recording: {refusal}", path=path)
    text = page()
    with replacing(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return path
