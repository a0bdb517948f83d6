"""A ``Comparison`` as a static picture (``comparison_html``) and as a standalone page.

``comparison_html`` is the script-free ``text/html`` a saved notebook, GitHub or nbviewer shows of
the widget; ``comparison_page`` is a whole offline document (``Comparison.to_html``), every text
from a run redacted as every export is. The panes are ``loopnb.notebook._compare_html``'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from loopnb.notebook._compare_html import (
    Redact,
    SideView,
    divergence_html,
    flows_html,
    inspector_for,
    rows_html,
    side_turn,
    side_views,
    timeline_html,
    totals_html,
    what_if_html,
)
from loopnb.notebook._layout import CODE_FONT, DARK, LIGHT, LINE, PAGE, TEXT, UI_FONT
from loopnb.notebook._markup import esc
from loopnb.notebook._svg import SVG_STYLE

if TYPE_CHECKING:
    from loopnb.record._compare import Comparison

PAGE_ROWS = 1000
"""Aligned rows the page lists; a longer comparison's rows are in ``Comparison.turns``."""
_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def row_caption(c: Comparison, row: int | None) -> str:
    """``row 2 of 4 · a turn 2 · b turn 1 · differs: channel``."""
    n = len(c.turns)
    if row is None or not 1 <= row <= n:
        return f'<span style="color:{TEXT}">no aligned rows</span>' if not n else ""
    la, lb = (esc(x, 40) for x in c.labels)
    ta, tb = (side_turn(c, k, row) for k in (0, 1))
    how = c.turns["how"].astype(object).iat[row - 1]
    said = f"differs: <b>{esc(how)}</b>" if isinstance(how, str) else "the same"
    turn_a = f"turn {ta}" if ta is not None else "no turn"
    turn_b = f"turn {tb}" if tb is not None else "no turn"
    return (
        f'<span class="loopnb-row-caption" data-row="{row}" style="color:{TEXT}">row {row} of {n} · '
        f"{la} {turn_a} · {lb} {turn_b} · {said}</span>"
    )


def _panes(
    c: Comparison,
    views: tuple[SideView, SideView],
    rows: Any,
    redact: Redact,
    anchors: tuple[str, str] | None,
) -> str:
    d = c.divergence
    row = d.row if d is not None and d.row is not None else min(len(c.turns), 1)
    timelines = "".join(
        timeline_html(c, v, k, row, None if anchors is None else anchors[k]) for k, v in enumerate(views)
    )
    inspectors = "".join(
        f'<div style="flex:1 1 420px;min-width:0">{inspector_for(c, v, k, row, redact)}</div>'
        for k, v in enumerate(views)
    )
    said = f"the selected row: {row_caption(c, row)}" if row else ""
    return (
        f"{divergence_html(c, redact)}{what_if_html(c, redact)}{totals_html(c)}{timelines}"
        f'<div style="margin:6px 0">{said}</div>'
        f'<div class="loopnb-inspectors" style="display:flex;flex-wrap:wrap;gap:12px 2%">{inspectors}</div>'
        f"<h3>aligned turns</h3>{rows_html(c, rows, redact, anchors=anchors)}{flows_html(c)}"
    )


def comparison_html(c: Comparison) -> str:
    """A static, script-free picture of the view (the rows around the divergence), every text
    redacted by ``esc`` as the widget's panes are (a saved notebook keeps it)."""
    views = side_views(c)
    body = _panes(c, views, c.around(3), str, None)
    return (
        f'<div class="loopnb-compare-summary" style="font-family:{UI_FONT};color:{TEXT};'
        f'border:1px solid {LINE};padding:8px;border-radius:6px"><style>{SVG_STYLE}</style>{body}</div>'
    )


def _theme(values: dict[str, str]) -> str:
    return ";".join(f"--jp-{name}:{value}" for name, value in values.items())


_PAGE_STYLE = (
    f":root{{{_theme(LIGHT)};color-scheme:light dark}}"
    f"@media (prefers-color-scheme:dark){{:root{{{_theme(DARK)}}}}}"
    f"body{{font-family:{UI_FONT};margin:24px auto;padding:0 16px;color:{TEXT};background:{PAGE};"
    "max-width:1240px;font-size:14px;line-height:1.4}"
    f"h1{{font-size:22px;margin:0 0 6px}}h3{{font-size:15px;margin:22px 0 6px}}"
    f"code{{font-family:{CODE_FONT};font-size:12px}}"
    "pre{max-height:18em;overflow:auto}" + SVG_STYLE
)


def comparison_page(c: Comparison, title: str | None = None) -> str:
    """The comparison as one offline HTML document: every aligned row (up to ``PAGE_ROWS``), every
    text from a run redacted by the default redactor, then escaped; no script."""
    from loopnb.record._redact import DEFAULT_REDACTOR

    la, lb = c.labels
    title = title or f"loopnb compare: {la} vs {lb}"
    views = side_views(c, DEFAULT_REDACTOR)
    rows = c.turns.head(PAGE_ROWS)
    note = (
        f"<p>rows past the first {PAGE_ROWS:,} are left out: <code>Comparison.turns</code> has them all</p>"
        if len(c.turns) > PAGE_ROWS
        else ""
    )
    body = _panes(c, views, rows, DEFAULT_REDACTOR, ("loopnb-a", "loopnb-b"))
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        f"<title>{esc(title)}</title><style>{_PAGE_STYLE}</style></head><body>"
        f"<h1>{esc(title)}</h1>{body}{note}</body></html>\n"
    )
