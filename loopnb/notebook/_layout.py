"""What the view's panes share: the page's theme, the fonts, the channels' marks.

The panes follow the notebook's theme: every colour of text or background they draw, other than
a channel's own (``loopnb._palette``), is one of JupyterLab's ``--jp-*`` CSS variables (``jp``),
with the light theme's value as its fallback, so that a page without JupyterLab's CSS (nbviewer,
the report) reads as light. ``LIGHT`` and ``DARK`` are JupyterLab 4's values of those variables:
the report takes ``DARK`` in a dark browser, and the tests measure every pair's contrast in both.
The colours, fonts and marks are ``Html`` (``loopnb.notebook._html``): this package's own, safe
as they stand in a style or a picture.
"""

from __future__ import annotations

from loopnb._palette import IDLE, PALETTE, SHAPE
from loopnb.notebook._html import Html

LIGHT = {
    "ui-font-color1": "rgba(0,0,0,.87)",
    "ui-font-color2": "rgba(0,0,0,.54)",
    "layout-color0": "#ffffff",
    "layout-color1": "#ffffff",
    "layout-color2": "#eeeeee",
    "border-color1": "#bdbdbd",
    "border-color2": "#e0e0e0",
}
"""JupyterLab 4's light theme (``@jupyterlab/theme-light-extension``), the variables the view uses."""
DARK = {
    "ui-font-color1": "rgba(255,255,255,.87)",
    "ui-font-color2": "rgba(255,255,255,.54)",
    "layout-color0": "#111111",
    "layout-color1": "#212121",
    "layout-color2": "#424242",
    "border-color1": "#616161",
    "border-color2": "#424242",
}
"""JupyterLab 4's dark theme, the same variables."""
FALLBACK = {
    "ui-font-color1": "#212121",
    "ui-font-color2": "#757575",
    "layout-color0": "#fff",
    "layout-color1": "#fff",
    "layout-color2": "#eee",
    "border-color1": "#bdbdbd",
    "border-color2": "#e0e0e0",
}
"""Each variable's value where no theme defines it: the light theme's, as drawn on white."""


def jp(name: str) -> Html:
    """JupyterLab's ``--jp-{name}`` variable, falling back on the light theme's value."""
    return Html("var(--jp-{}, {})").format(name, FALLBACK[name])


TEXT = jp("ui-font-color1")
"""Text, on the page (``--jp-layout-color0``), a raised box (1) or a code block (2)."""
MUTED = jp("ui-font-color2")
"""Secondary text (a hint, a turn number), on the page or a raised box only: not on a code block."""
PAGE = jp("layout-color0")
"""The notebook's background, behind every pane."""
RAISED = jp("layout-color1")
"""A box drawn on the page: the flow's steps, the gauge's empty cells."""
CODE_BG = jp("layout-color2")
"""A code block's background: what the model said or read."""
LINE = jp("border-color2")
"""Rules between rows and around a pane."""
EDGE = jp("border-color1")
"""An arrow no turn took yet."""
UI_FONT = Html("var(--jp-ui-font-family, system-ui, -apple-system, 'Segoe UI', sans-serif)")
CODE_FONT = Html("var(--jp-code-font-family, ui-monospace, SFMono-Regular, Menlo, Consolas, monospace)")
"""Monospace in every front end (Voila's widgets inherit the page's font, even in a ``pre``)."""

_PAINT = {c: Html(' class="m k-{}"').format(c) for c in PALETTE}
_FILL = {c: Html(' fill="{}"').format(PALETTE.get(c, IDLE)) for c in (*PALETTE, "")}
_CIRCLE = Html('<circle{} cx="{:g}" cy="{:g}" r="{:g}"/>')
_TRIANGLE = Html('<path{} d="M{:g},{:g}h{:g}l{:g},{:g}z"/>')
_SQUARE = Html('<rect{} x="{:g}" y="{:g}" width="{:g}" height="{:g}"/>')


def mark(channel: str, x: float, y: float, size: float = 9.0, *, fill: bool = False) -> Html:
    """A channel's mark (circle, triangle or square, ``SHAPE``) centred on ``x``, ``y``.

    Coloured by the panes' style sheet (class ``k-{channel}``), or with ``fill`` by its own
    attribute (for HTML that may be shown without the style sheet).
    """
    h = size / 2
    if channel not in PALETTE:
        paint = _FILL[""]
    elif fill:
        paint = _FILL[channel]
    else:
        paint = _PAINT[channel]
    match SHAPE.get(channel):
        case "circle":
            return _CIRCLE.format(paint, x, y, h)
        case "triangle":
            return _TRIANGLE.format(paint, x - h - 0.5, y + h, size + 1, -h - 0.5, -size - 1)
        case _:
            return _SQUARE.format(paint, x - h, y - h, size, size)


_NAME = {c: Html.escape(c) for c in (*PALETTE, "other")}
_ICON = Html(
    '<svg class="loopnb-svg loopnb-icon" viewBox="0 0 10 10" width="10" height="10" role="img" '
    'aria-label="{}" style="display:inline-block;vertical-align:-1px;margin-right:4px">{}</svg>'
)


def icon(channel: str) -> Html:
    """A channel's mark as a small inline picture in its colour, to stand before its word."""
    return _ICON.format(_NAME.get(channel, _NAME["other"]), mark(channel, 5, 5, 8, fill=True))
