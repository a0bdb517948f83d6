"""A ``Comparison`` as a static picture (``comparison_html``) and as a standalone page.

``comparison_html`` is the script-free ``text/html`` a saved notebook, GitHub or nbviewer shows of
the widget; ``comparison_page`` is a whole offline document (``Comparison.to_html``), every text
from a run redacted as every export is. The panes are ``loopnb.notebook._compare_html``'s; both
are ``Html`` (``loopnb.notebook._html``) until they leave as a plain string.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from loopnb.notebook._compare_html import (
    divergence_html,
    flows_html,
    inspector_for,
    rows_html,
    side_turn,
    timeline_html,
    totals_html,
    what_if_html,
)
from loopnb.notebook._compare_sides import Redact, SideView, side_views
from loopnb.notebook._html import Html, esc
from loopnb.notebook._layout import LINE, TEXT, UI_FONT
from loopnb.notebook._page import COMPARE_STYLE, page
from loopnb.notebook._svg import SVG_STYLE

if TYPE_CHECKING:
    from loopnb.analysis import Comparison

PAGE_ROWS = 1000
"""Aligned rows the page lists; a longer comparison's rows are in ``Comparison.turns``."""
PAGE_BEFORE = 100
"""Of those, how many come before the first divergence when the rows are more (a window)."""


def row_caption(c: Comparison, row: int | None) -> Html:
    """``row 2 of 4 · a turn 2 · b turn 1 · differs: channel``."""
    n = len(c.turns)
    if row is None or not 1 <= row <= n:
        return Html('<span style="color:{}">no aligned rows</span>').format(TEXT) if not n else Html()
    la, lb = (esc(x, 40) for x in c.labels)
    ta, tb = (side_turn(c, k, row) for k in (0, 1))
    how = c.turns["how"].iat[row - 1]
    said = Html("differs: <b>{}</b>").format(how) if isinstance(how, str) else Html("the same")
    return Html(
        '<span class="loopnb-row-caption" data-row="{row}" style="color:{text}">row {row} of {n} · '
        "{la} {turn_a} · {lb} {turn_b} · {said}</span>"
    ).format(
        row=row,
        text=TEXT,
        n=n,
        la=la,
        turn_a=f"turn {ta}" if ta is not None else "no turn",
        lb=lb,
        turn_b=f"turn {tb}" if tb is not None else "no turn",
        said=said,
    )


def _panes(
    c: Comparison,
    views: tuple[SideView, SideView],
    rows: Any,
    redact: Redact,
    anchors: tuple[str, str] | None,
) -> Html:
    d = c.divergence
    row = d.row if d is not None and d.row is not None else min(len(c.turns), 1)
    timelines = Html().join(
        timeline_html(c, v, k, row, None if anchors is None else anchors[k]) for k, v in enumerate(views)
    )
    inspectors = Html().join(
        Html('<div style="flex:1 1 420px;min-width:0">{}</div>').format(inspector_for(c, v, k, row, redact))
        for k, v in enumerate(views)
    )
    said = Html("the selected row: {}").format(row_caption(c, row)) if row else Html()
    return Html(
        '{}{}{}{}<div style="margin:6px 0">{}</div>'
        '<div class="loopnb-inspectors" style="display:flex;flex-wrap:wrap;gap:12px 2%">{}</div>'
        "<h3>aligned turns</h3>{}{}"
    ).format(
        divergence_html(c, redact),
        what_if_html(c, redact),
        totals_html(c),
        timelines,
        said,
        inspectors,
        rows_html(c, rows, redact, anchors=anchors),
        flows_html(c),
    )


_SUMMARY = Html("font-family:{};color:{};border:1px solid {};padding:8px;border-radius:6px").format(
    UI_FONT, TEXT, LINE
)


def comparison_html(c: Comparison) -> str:
    """A static, script-free picture of the view (the rows around the divergence), every text
    redacted as the widget's panes are (a saved notebook keeps it)."""
    views = side_views(c)
    body = _panes(c, views, c.around(3), str, None)
    picture = Html('<div class="loopnb-compare-summary" style="{}"><style>{}</style>{}</div>').format(
        _SUMMARY, SVG_STYLE, body
    )
    return str(picture)  # a plain string leaves: a caller's ``+`` or ``replace`` means text as it is


def comparison_page(c: Comparison, title: str | None = None) -> str:
    """The comparison as one offline HTML document: every aligned row (up to ``PAGE_ROWS``: of a
    longer comparison the rows around its first divergence, ``page_rows``), every text from a run
    redacted by the default redactor, then escaped; no script. Its size and the time it takes are
    bounded however long the runs."""
    from loopnb.record._redact import DEFAULT_REDACTOR  # the module's, looked up at each call

    la, lb = c.labels
    title = title or f"loopnb compare: {la} vs {lb}"
    views = side_views(c, DEFAULT_REDACTOR)
    start, end = page_rows(c)
    rows = c.turns.iloc[start:end]
    n = len(c.turns)
    note = (
        Html(
            "<p>rows {:,}–{:,} of {:,} are listed (the first divergence and what follows it): "
            "<code>Comparison.turns</code> has them all</p>"
        ).format(start + 1, end, n)
        if end - start < n
        else Html()
    )
    body = Html("{}{}").format(_panes(c, views, rows, DEFAULT_REDACTOR, ("loopnb-a", "loopnb-b")), note)
    return page(title, COMPARE_STYLE, body)


def page_rows(c: Comparison) -> tuple[int, int]:
    """The aligned rows the page lists, as ``turns.iloc[start:end]``: all of them up to
    ``PAGE_ROWS``; past that, ``PAGE_ROWS`` of them from ``PAGE_BEFORE`` rows before the first
    divergence (from the first row when the runs agree or differ only in how they ended)."""
    n = len(c.turns)
    if n <= PAGE_ROWS:
        return 0, n
    d = c.divergence
    at = d.row - 1 if d is not None and d.row is not None else 0
    start = max(0, min(at - PAGE_BEFORE, n - PAGE_ROWS))
    return start, start + PAGE_ROWS
