"""The one palette of loopnb: every view, report, audit figure and terminal table takes its colours here.

Okabe-Ito hues, told apart by most colour-blind readers (bluish green, orange, vermillion), and
always paired with a word or a shape (``SHAPE``, ``GLYPH``) so that a channel never reads by
colour alone. Text never stands on a channel's colour: it stands on its ``PALE`` fill, in ``INK``.
"""

from __future__ import annotations

PALETTE = {"ok": "#009E73", "soft": "#E69F00", "hard": "#D55E00"}
"""Each channel's colour."""
PALE = {"ok": "#d9f0e9", "soft": "#fbeccc", "hard": "#f7dccc"}
"""The same hues, pale: a lit box's fill, behind dark text."""
SHAPE = {"ok": "circle", "soft": "triangle", "hard": "square"}
"""Each channel's mark, so that a timeline reads without colour too."""
GLYPH = {"ok": "●", "soft": "▲", "hard": "■"}
"""Each channel's mark as a character, for text (a terminal, a tooltip)."""
IDLE = "#9aa0a6"
"""Greyed: nothing configured, a later turn, an unfinished run."""
ACCENT = "#0072B2"
"""Okabe-Ito blue: replay, pause and other states of the view rather than of a turn."""
INK = "#222222"
"""Text on a ``PALE`` fill, whatever the page's theme (a pale fill stays pale in a dark theme)."""
ON_ACCENT = "#ffffff"
"""Text on ``ACCENT``."""
