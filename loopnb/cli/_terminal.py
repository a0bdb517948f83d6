"""Writing to a terminal: ok / soft / hard in the palette's colours on one, plain text otherwise.

Colour is on only when the output is a terminal that is not ``TERM=dumb`` and ``NO_COLOR`` is
unset (``FORCE_COLOR`` forces it, as rich reads it); the words are the same either way, so a
channel never reads by colour alone. The command line builds its lines as rich ``Text`` and
writes them through ``Console.print(..., soft_wrap=True)``: the layout is the caller's, never
rewrapped, and piped output is exactly ``Text.plain``.
"""

from __future__ import annotations

import errno
import os
from typing import TYPE_CHECKING, TextIO

from loopnb._palette import PALETTE

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

CHANNEL_STYLE = {"ok": PALETTE["ok"], "soft": PALETTE["soft"], "hard": f"bold {PALETTE['hard']}"}
"""The rich style of each channel's word: its palette colour (hard also bold)."""


def console(out: TextIO) -> Console:
    """A rich console writing to ``out``: in colour on a terminal, plain text otherwise. A
    closed pipe raises ``BrokenPipeError`` (rich would exit), for the command to end quietly."""
    from rich.console import Console

    class PipeAware(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise BrokenPipeError(errno.EPIPE, "the reader closed the pipe")

    probe = Console(file=out, force_jupyter=False)
    colour = probe.is_terminal and not probe.is_dumb_terminal and not os.environ.get("NO_COLOR")
    return PipeAware(
        file=out,
        force_jupyter=False,
        force_terminal=colour,
        color_system="auto" if colour else None,
        highlight=False,
        markup=False,
        emoji=False,
    )


def write(con: Console, line: Text | str) -> None:
    """One line, as laid out (never wrapped nor cropped by rich)."""
    con.print(line, soft_wrap=True, crop=False, overflow="ignore")


def channel(text: str, name: str | None = None) -> Text:
    """``text`` styled as the channel ``name`` (``text`` itself names it by default)."""
    from rich.text import Text

    styled = Text()  # the style on a span, not the whole Text: what is appended later stays plain
    return styled.append(text, style=CHANNEL_STYLE.get(name or text.strip(), ""))


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 turn``, ``2 turns``; ``many`` for an irregular plural (``1 is``, ``2 are``)."""
    return f"{n} {word if n == 1 else (many or word + 's')}"
