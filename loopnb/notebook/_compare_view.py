"""A ``Comparison`` in a notebook (``CompareView``), as a static picture, and as a standalone page.

The widget shows the headline (where the runs first diverge), the totals side by side, both
timelines one above the other with the divergence marked, one slider over the aligned rows, the
two inspectors side by side for the selected row, and the two decision flows' counts with their
differences. Its ``_repr_mimebundle_`` carries a script-free ``text/html`` picture of the same
panes (``comparison_html``) for GitHub and nbviewer; ``comparison_page`` is a whole offline
document, every text redacted as every export is. The panes are ``loopnb.notebook._compare_html``'s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

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
)
from loopnb.notebook._layout import CODE_FONT, DARK, LIGHT, LINE, PAGE, TEXT, UI_FONT
from loopnb.notebook._markup import esc
from loopnb.notebook._pacing import Page
from loopnb.notebook._svg import SVG_STYLE

if TYPE_CHECKING:
    from loopnb.record._compare import Comparison

PAGE_ROWS = 1000
"""Aligned rows the page lists; a longer comparison's rows are in ``Comparison.turns``."""
_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
_VIEW_STYLE = ".loopnb-compare .widget-html-content{min-width:0}"


class CompareView:
    """The widget of a ``Comparison``: ``widget`` is the box to display; ``select(row)`` shows
    an aligned row (1-based) in both inspectors and rings its turns on both timelines."""

    def __init__(self, comparison: Comparison) -> None:
        self.comparison = c = comparison
        self.views: tuple[SideView, SideView] = side_views(c)
        n = len(c.turns)
        d = c.divergence
        self.row = d.row if d is not None and d.row is not None else min(n, 1)
        self.header = widgets.HTML(divergence_html(c))
        self.totals = widgets.HTML(totals_html(c))
        self.timelines = (widgets.HTML(), widgets.HTML())
        self.pages = (Page(on_select=self._picker(0)), Page(on_select=self._picker(1)))
        self.slider = widgets.IntSlider(
            value=self.row, min=min(n, 1), max=n, description="row", disabled=n == 0,
            continuous_update=True, layout=widgets.Layout(width="60%"),
        )  # fmt: skip
        self.caption = widgets.HTML()
        half = widgets.Layout(width="49%")
        self.inspectors = (widgets.HTML(layout=half), widgets.HTML(layout=half))
        self.flows = widgets.HTML(flows_html(c))
        style = widgets.HTML(f"<style>{SVG_STYLE}{_VIEW_STYLE}</style>")
        self.widget = widgets.VBox(
            [
                style,
                self.header,
                self.totals,
                *(_clickable(t, p) for t, p in zip(self.timelines, self.pages, strict=True)),
                widgets.HBox([self.slider, self.caption]),
                widgets.HBox(
                    [self.inspectors[0], widgets.Box(layout=widgets.Layout(width="2%")), self.inspectors[1]]
                ),
                self.flows,
            ],
            layout=widgets.Layout(width="100%"),
        )
        self.widget.add_class("loopnb-compare")
        self.slider.observe(self._on_slider, names="value")
        self.draw(self.row)

    def select(self, row: int) -> None:
        """Show aligned ``row`` (clamped to the rows there are)."""
        self.slider.value = max(self.slider.min, min(row, self.slider.max))
        self.draw(int(self.slider.value))

    def select_turn(self, k: int, turn: int) -> None:
        """Show the aligned row of side ``k``'s ``turn`` (what a click on its timeline mark does)."""
        found = self.comparison.turns[f"turn_{'ab'[k]}"].eq(turn).fillna(False).to_numpy().nonzero()[0]
        if len(found):
            self.select(int(found[0]) + 1)

    def _picker(self, k: int) -> Callable[[int], None]:
        def pick(turn: int) -> None:
            self.select_turn(k, turn)

        return pick

    def _on_slider(self, change: dict[str, Any]) -> None:
        self.draw(int(change["new"]))

    def draw(self, row: int) -> None:
        """Redraw what depends on the selected row: the rings, the caption, the inspectors."""
        c = self.comparison
        self.row = row
        for k, view in enumerate(self.views):
            _set(self.timelines[k], timeline_html(c, view, k, row))
            _set(self.inspectors[k], inspector_for(c, view, k, row))
        _set(self.caption, row_caption(c, row))

    def mimebundle(self, **kwargs: Any) -> dict[str, Any]:
        """The widget's bundle, with the static picture as its ``text/html``."""
        bundle = dict(self.widget._repr_mimebundle_(**kwargs) or {})
        bundle["text/html"] = comparison_html(self.comparison)
        return bundle

    def close(self) -> None:
        """Close every widget of the view."""
        for child in (self.header, self.totals, *self.timelines, *self.pages, self.slider, self.caption):
            child.close()
        for child in (*self.inspectors, self.flows):
            child.close()
        self.widget.close()


def _clickable(timeline: widgets.HTML, page: Page) -> widgets.Box:
    """A timeline in its own ``loopnb-view`` box with its ``Page``: a click on one of its marks
    reaches that page alone, so the view knows which side's turn was picked."""
    box = widgets.VBox([timeline, page], layout=widgets.Layout(width="100%"))
    box.add_class("loopnb-view")
    return box


def _set(widget: widgets.HTML, value: str) -> None:
    if widget.value != value:
        widget.value = value


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
        f"{divergence_html(c, redact)}{totals_html(c)}{timelines}"
        f'<div style="margin:6px 0">{said}</div>'
        f'<div class="loopnb-inspectors" style="display:flex;flex-wrap:wrap;gap:12px 2%">{inspectors}</div>'
        f"<h3>aligned turns</h3>{rows_html(c, rows, redact, anchors=anchors)}{flows_html(c)}"
    )


def comparison_html(c: Comparison) -> str:
    """A static, script-free picture of the view (the rows around the divergence)."""
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
