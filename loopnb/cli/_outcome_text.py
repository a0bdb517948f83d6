"""``loopnb demo``'s text: one scenario run as a per-turn table tagged ok / soft / hard, and the summary.

Lines are rich ``Text``, each channel's word in its palette colour (``loopnb.cli._terminal``); their
``plain`` text is what a pipe gets. A hard ending's cause follows the table in full.
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

from loopnb.cli import _terminal as terminal
from loopnb.engine import Message, ToolResult, Turn

if TYPE_CHECKING:
    from rich.text import Text

    from loopnb.scenarios import Outcome

_COLUMNS = ("turn", "channel", "producer", "model", "retries", "tools", "what the model read")


def turn_rows(outcome: Outcome) -> list[dict[str, str]]:
    """One row per turn (keys: ``_COLUMNS``), each read from the run's events as a ``Turn``."""
    return [_row(turn) for turn in outcome.turns]


def _row(turn: Turn) -> dict[str, str]:
    calls = turn.reply.tool_calls if turn.reply is not None else ()
    if turn.channel == "hard":
        read = f"(run ended) {turn.error_text or ''}"
    elif turn.results or turn.feedback:
        said: list[ToolResult | Message] = [*turn.results, *turn.feedback]
        read = " | ".join(item.content for item in said)
    else:
        text = turn.reply.text if turn.reply is not None else ""
        read = f"(final answer) {text or ''}"
    if turn.injected is not None:
        read = f"[injected {turn.injected}] {read}"
    return {
        "turn": str(turn.turn),
        "channel": turn.channel,
        "producer": turn.producer or "-",
        "model": turn.model or "-",
        "retries": str(turn.recovery_attempts),
        "tools": ", ".join(call.name for call in calls) or "-",
        "what the model read": read,
    }


def format_outcome(outcome: Outcome, *, width: int = 100) -> str:
    """The per-turn table and the ending of one scenario run, as plain text.

    The ``model`` column appears when more than one model answered, ``retries`` when recovery
    retried a call. A hard ending's cause follows the table in full, on lines of its own.
    """
    return "\n".join(line.plain for line in outcome_lines(outcome, width=width))


def outcome_lines(outcome: Outcome, *, width: int = 100) -> list[Text]:
    """``format_outcome``'s lines as rich ``Text``, each channel's word in its palette colour."""
    from rich.text import Text

    s = outcome.scenario
    rows = turn_rows(outcome)
    for row in rows:
        if row["channel"] == "hard":
            row["what the model read"] = "(run ended: the cause is below)"
    columns = [
        c
        for c in _COLUMNS
        if (c != "model" or len({r["model"] for r in rows} - {"-"}) > 1)
        and (c != "retries" or any(r["retries"] != "0" for r in rows))
    ]
    fixed, last = columns[:-1], columns[-1]
    widths = [max(len(c), *(len(r[c]) for r in rows)) for c in fixed]
    room = max(20, width - 3 - sum(w + 2 for w in widths))

    def line(cells: dict[str, str], *, head: bool = False) -> Text:
        text = Text("   ")
        for c, w in zip(fixed, widths, strict=True):
            cell = cells[c].ljust(w) + "  "
            text.append_text(terminal.channel(cell, cells[c]) if c == "channel" and not head else Text(cell))
        text.append(_clip(cells[last], room))
        text.rstrip()
        return text

    lines = [Text(f"== {s.name}: {s.title}", style="bold")]
    lines += [Text(t) for t in _wrap(s.teaches, width, indent="   ")]
    lines.append(line({c: c for c in columns}, head=True))
    lines.extend(line(row) for row in rows)
    if outcome.error is None:
        ending = terminal.channel("ended ok", "ok")
        ending.append(f": {_clip(outcome.output or '', max(20, width - 40))!r}")
    else:
        ending = terminal.channel("ended hard", "hard")
        ending.append(f": {type(outcome.error).__name__} ({outcome.ending})")
    if outcome.as_expected:
        ending.append(", as declared")
    else:
        ending.append(", ")
        ending.append(f"NOT as declared: {outcome.mismatch()}", style=terminal.CHANNEL_STYLE["hard"])
    lines.append(Text("   ").append_text(ending))
    if outcome.error is not None:
        hard = [t for t in outcome.turns if t.channel == "hard"]
        cause = (hard[-1].error_text if hard else None) or str(outcome.error)
        lines.extend(Text(t) for t in _cause_lines(cause, width))
    return lines


def _cause_lines(cause: str, width: int) -> list[str]:
    """A hard run's cause in full: ``cause:`` then its text wrapped under it, every word kept."""
    lead, indent = "   cause: ", " " * 10
    out: list[str] = []
    for paragraph in cause.splitlines() or [""]:
        out += textwrap.wrap(
            paragraph,
            width=max(40, width),
            initial_indent=lead if not out else indent,
            subsequent_indent=indent,
            break_long_words=True,
            break_on_hyphens=False,
        ) or [(lead if not out else indent).rstrip()]
    return out


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: max(0, limit - 3)] + "..."


def _wrap(text: str, width: int, *, indent: str) -> list[str]:
    return textwrap.wrap(text, width=max(40, width), initial_indent=indent, subsequent_indent=indent)


def summary_line(outcomes: list[Outcome]) -> Text:
    """The demo's last line: scenarios, turns, how they ended, how many as declared."""
    from rich.text import Text

    n = len(outcomes)
    ok = sum(o.error is None for o in outcomes)
    turns = sum(len(o.turns) for o in outcomes)
    soft = sum(t.channel == "soft" for o in outcomes for t in o.turns)
    expected = sum(o.as_expected for o in outcomes)
    text = Text(f"{terminal.plural(n, 'scenario')}, {terminal.plural(turns, 'turn')} (")
    text.append_text(terminal.channel(f"{soft} soft", "soft"))
    text.append("): ")
    text.append_text(terminal.channel(f"{ok} ended ok", "ok"))
    text.append(", ")
    text.append_text(terminal.channel(f"{n - ok} hard", "hard"))
    text.append(f"; {expected}/{n} as declared")
    missed = [o.scenario.name for o in outcomes if not o.as_expected]
    if missed:
        text.append(f" (not as declared: {', '.join(missed)})", style=terminal.CHANNEL_STYLE["hard"])
    return text
