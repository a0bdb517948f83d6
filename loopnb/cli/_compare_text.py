"""``loopnb compare A B``: two recorded runs side by side in a terminal.

The totals of each run in two columns (a figure the runs differ on marked ``≠``), the first
divergence in words, then the aligned turns around it: each side's turn, channel, producer and
calls, cut to the width. Channel words take their palette colour on a terminal (``_terminal``);
piped, or with ``NO_COLOR``, the same words in plain text.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from loopnb._palette import GLYPH
from loopnb.analysis._cells import cell_text, duration
from loopnb.analysis._compare_frames import TOTALS_LABELS
from loopnb.cli import _terminal as terminal

if TYPE_CHECKING:
    from rich.text import Text

    from loopnb.analysis import Comparison


def _text(s: str = "", style: str = "") -> Text:
    from rich.text import Text

    return Text(s, style=style)


def _cut(s: str, n: int) -> str:
    return s if len(s) <= n else s[: max(n - 1, 0)] + "…"


def _value(column: str, value: Any) -> str:
    return duration(value) if column == "latency_ms" else cell_text(column, value)


def compare_lines(c: Comparison, *, width: int = 100, context: int = 3) -> list[Text]:
    """The comparison as the command prints it, line by line."""
    la, lb = c.labels
    lines = [_text("Totals", "bold")]
    t = c.totals.astype(object).to_dict("records")
    values = [[_value(col, row[col]) for row in t] for col, _ in TOTALS_LABELS]
    label_w = max(len(w) for _, w in TOTALS_LABELS)
    col_w = max(len(la), len(lb), *(len(v) for pair in values for v in pair))
    lines.append(_text(f"  {'':<{label_w}}  {la:>{col_w}}  {lb:>{col_w}}"))
    for (column, words), (va, vb) in zip(TOTALS_LABELS, values, strict=True):
        line = _text(f"  {words:<{label_w}}")
        for v in (va, vb):
            line.append("  ")
            line.append_text(_styled(v, col_w) if column == "ended" else _text(f"{v:>{col_w}}"))
        if va != vb:
            line.append("  ≠")
        lines.append(line)
    if not all(row["with_events"] for row in t):
        lines.append(_text("  (a side without events is counted turn by turn, as audit does)"))
    lines += [_text(""), *_divergence(c, width), _text("")]
    lines += _rows(c, width, context)
    return lines


def _styled(value: str, w: int) -> Text:
    channel = "ok" if value == "ok" else "hard" if value not in ("-", "") else ""
    return terminal.channel(f"{value:>{w}}", channel)


def _divergence(c: Comparison, width: int) -> list[Text]:
    import textwrap

    d = c.divergence
    if d is None:
        return [_text("The two runs agree on every turn and end alike.", "bold")]
    said = " ".join(d.text().split())  # one line: a multi-line error text is read in the rows
    wrapped = textwrap.wrap(said, max(width - 18, 20)) or [""]
    first = _text("First divergence: ", "bold")
    first.append(wrapped[0])
    return [first, *(_text(" " * 18 + w) for w in wrapped[1:])]


def _rows(c: Comparison, width: int, context: int) -> list[Text]:
    rows = c.around(context)
    n = len(c.turns)
    if not len(rows):
        return [_text("No turns on either side.")]
    numbers = [int(x) for x in rows["row"].tolist()]
    first, last = numbers[0], numbers[-1]
    la, lb = c.labels
    lines = [_text(f"Aligned turns, rows {first}-{last} of {n}", "bold")]
    side_w = max((width - 2 - 4 - 12 - 4) // 2, 16)
    head = f"  {'row':>4}  {'how':<10}  {_cut(la, side_w):<{side_w}}  {_cut(lb, side_w)}".rstrip()
    lines.append(_text(head))
    for r in rows.astype(object).to_dict("records"):
        how = r["how"] if isinstance(r["how"], str) else ""
        a, b = _parts(r, "a"), _parts(r, "b")
        at = _first_difference(a[2], b[2]) if a and b else None
        line = _text(f"  {r['row']:>4}  {how:<10}  ")
        line.append_text(_side(a, side_w, at))
        line.append("  ")
        line.append_text(_side(b, side_w, at, pad=False))
        lines.append(line)
    if last < n:
        lines.append(_text(f"  ... {terminal.plural(n - last, 'more row')}: Comparison.turns has them all"))
    return lines


def _parts(r: dict[Any, Any], s: str) -> tuple[str, str, str] | None:
    """Side ``s`` of an aligned row as (turn and channel, channel, producer and calls), or ``None``
    where the side has no turn."""
    turn = r[f"turn_{s}"]
    if not isinstance(turn, int):
        return None
    channel = str(r[f"channel_{s}"])
    producer = r[f"producer_{s}"]
    call, reply = r[f"call_{s}"], r[f"reply_text_{s}"]
    if isinstance(call, str):
        call = _short(call)
    else:
        call = f"reply: {' '.join(reply.split())}" if isinstance(reply, str) else "(no call)"
    tail = f" {producer}" if isinstance(producer, str) else ""
    return f"t{turn} {GLYPH.get(channel, '?')} {channel}", channel, f"{tail} {call}"


def _first_difference(a: str, b: str) -> int | None:
    """Where ``a`` and ``b`` first differ, or ``None`` when they are the same."""
    if a == b:
        return None
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def _side(parts: tuple[str, str, str] | None, w: int, at: int | None, *, pad: bool = True) -> Text:
    if parts is None:
        return _text(f"{'-':<{w}}" if pad else "-")
    said, channel, rest = parts
    room = max(w - len(said), 0)
    shown = _cut(rest, room) if at is None else _cut_showing(rest, room, at)
    out = terminal.channel(said, channel)
    out.append(f"{shown:<{room}}" if pad else shown)
    return out


def _cut_showing(s: str, n: int, at: int) -> str:
    """``s`` cut to ``n`` characters so that its character ``at`` (where the two sides first differ)
    shows: when the cut would hide it, what both sides share gives way to ``…`` after the name of
    the call that differs (``read_file(…src/mian.rs)``)."""
    if len(s) <= n or at < n - 1:
        return _cut(s, n)
    opening = s.find("(", 0, at)
    name = s.rfind(" ", 0, opening) + 1
    head = " " + s[name : opening + 1] if opening >= 0 and opening + 2 - name <= n // 2 else s[: n // 3]
    room = n - len(head) - 1
    start = max(min(at - 2, len(s) - room), 0)  # the end of the call when it fits, else from the difference
    return head + "…" + _cut(s[start:], room)


def _short(calls: str) -> str:
    """``read_file({"path": "src/a.rs"}), ls({})`` as ``read_file(path=src/a.rs), ls()``, so that a
    narrow column shows the arguments, where two runs differ, rather than JSON's punctuation;
    anything not in that form is shown as it is."""
    decoder, out, i = json.JSONDecoder(), [], 0
    while i < len(calls):
        opening = calls.find("(", i)
        try:
            arguments, end = decoder.raw_decode(calls, opening + 1)
        except ValueError:
            return calls
        if opening < 0 or calls[end : end + 1] != ")":
            return calls
        if isinstance(arguments, dict):
            inner = ", ".join(
                f"{k}={v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}"
                for k, v in arguments.items()
            )
        else:
            inner = json.dumps(arguments, ensure_ascii=False)
        out.append(f"{calls[i:opening]}({inner})")
        i = end + 1
        if calls.startswith(", ", i):
            i += 2
        elif i < len(calls):
            return calls
    return ", ".join(out)
