"""What the view's HTML panes share: the channels' colours and the pictures of control characters."""

from __future__ import annotations

CHANNEL_COLOR = {"ok": "#2e9d4a", "soft": "#e69500", "hard": "#d7263d"}
CHANNEL_FILL = {"ok": "#dff3e4", "soft": "#fdf0d5", "hard": "#f9dcdf"}

CONTROL_PICTURES = {c: 0x2400 + c for c in range(32) if chr(c) not in "\t\n\r"} | {0x7F: 0x2421}
"""``str.translate`` table: control characters as their visible pictures (NUL as ␀), because
browsers drop a NUL from HTML and draw nothing for the others."""
