"""A ``Comparison`` in a notebook: ``CompareView``, one ipywidgets box.

The widget shows the headline (where the runs first diverge), a what-if's findings in words
(when the comparison came from ``what_if``), the totals side by side, both timelines one above
the other with the divergence marked, one slider over the aligned rows, the two inspectors side
by side for the selected row, and the two decision flows' counts with their differences. Its
``mimebundle`` carries a script-free ``text/html`` picture of the same panes
(``loopnb.notebook._compare_page``) for GitHub and nbviewer. The panes are
``loopnb.notebook._compare_html``'s. A notebook may save the picture and the panes' values
(widget state), so both show secrets as ``[REDACTED]`` (the panes are ``Html``, whose escaping
redacts: see ``loopnb.notebook._html``); the ``Comparison``'s frames keep exactly what the model
read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from loopnb.notebook._compare_html import (
    divergence_html,
    flows_html,
    inspector_for,
    timeline_html,
    totals_html,
    what_if_html,
)
from loopnb.notebook._compare_page import comparison_html, row_caption
from loopnb.notebook._compare_sides import SideView, side_views
from loopnb.notebook._html import Html
from loopnb.notebook._pacing import Page
from loopnb.notebook._svg import SVG_STYLE

if TYPE_CHECKING:
    from loopnb.analysis import Comparison

_VIEW_STYLE = Html(".loopnb-compare .widget-html-content{min-width:0}")


class CompareView:
    """The widget of a ``Comparison``: ``widget`` is the box to display; ``select(row)`` shows
    an aligned row (1-based) in both inspectors and rings its turns on both timelines."""

    def __init__(self, comparison: Comparison) -> None:
        self.comparison = c = comparison
        self.views: tuple[SideView, SideView] = side_views(c)
        n = len(c.turns)
        d = c.divergence
        self.row = d.row if d is not None and d.row is not None else min(n, 1)
        self.header = widgets.HTML(str(divergence_html(c)))
        self.what_if = widgets.HTML(str(what_if_html(c)))
        self.totals = widgets.HTML(str(totals_html(c)))
        self.timelines = (widgets.HTML(), widgets.HTML())
        self.pages = (Page(on_select=self._picker(0)), Page(on_select=self._picker(1)))
        self.slider = widgets.IntSlider(
            value=self.row, min=min(n, 1), max=n, description="row", disabled=n == 0,
            continuous_update=True, layout=widgets.Layout(width="45%", min_width="260px"),
        )  # fmt: skip
        self.caption = widgets.HTML(layout=widgets.Layout(flex="1 1 auto"))  # on one line beside it
        half = widgets.Layout(width="49%")
        self.inspectors = (widgets.HTML(layout=half), widgets.HTML(layout=half))
        self.flows = widgets.HTML(str(flows_html(c)))
        style = widgets.HTML(str(Html("<style>{}{}</style>").format(SVG_STYLE, _VIEW_STYLE)))
        self.widget = widgets.VBox(
            [
                style,
                self.header,
                *([self.what_if] if self.what_if.value else []),
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
        for child in (self.header, self.what_if, self.totals, *self.timelines, *self.pages, self.slider):
            child.close()
        for child in (self.caption, *self.inspectors, self.flows):
            child.close()
        self.widget.close()


def _clickable(timeline: widgets.HTML, page: Page) -> widgets.Box:
    """A timeline in its own ``loopnb-view`` box with its ``Page``: a click on one of its marks
    reaches that page alone, so the view knows which side's turn was picked."""
    box = widgets.VBox([timeline, page], layout=widgets.Layout(width="100%"))
    box.add_class("loopnb-view")
    return box


def _set(widget: widgets.HTML, value: Html) -> None:
    if widget.value != value:
        widget.value = str(value)  # a plain string leaves for the front end
