"""The audit as ``loopnb audit`` prints it: short tables, each number beside its label.

Names left, numbers right, two spaces between columns; shares as percentages; times with their
unit; a column no recording filled is left out (and said so); a hard run's cause in full on lines
of its own, never clipped in a cell. Each channel's word takes its palette colour on a terminal
(``loopnb.cli._terminal``); the words are the same in plain text.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from loopnb.analysis._cells import cell_text, duration
from loopnb.cli import _terminal as terminal
from loopnb.cli._terminal import plural

if TYPE_CHECKING:
    import pandas as pd
    from rich.text import Text

    from loopnb.analysis import Audit

HARD_SHOWN = 20
"""At most this many hard runs are listed with their cause; the rest are counted."""

_NO_MODEL = "(no model)"
_TIMES = {
    "latency_ms_median": "turn median",
    "latency_ms_mean": "turn mean",
    "request_ms_median": "request median",
}
_TOKENS = {"input_tokens": "tokens in", "output_tokens": "tokens out"}
_CHANNEL_LABELS = {"ok turns": "ok", "soft turns": "soft", "runs ended hard": "hard"}


def audit_lines(a: Audit, *, width: int = 100) -> list[Text]:
    """Every section of the audit of ``a``, line by line; the times of its runs on a simulated
    clock (``Audit``'s ``simulated``) are told apart from wall time."""
    hard = int((a.turns["channel"].astype(str) == "hard").sum())
    lines: list[Text] = []
    usage = a.usage("model")
    for title, body in (
        ("Summary", _summary(a.summary(), width)),
        ("Soft and hard turns per producer", _by_producer(a.by_producer(), width)),
        ("Self-recovery after soft errors", _recovery(a.recovery(), width)),
        ("Per model", _models(a, width)),
        ("Usage and cost", _usage(usage, width) if _reported(usage) else []),
        (f"Runs that ended hard ({hard})", _hard_runs(a, width)),
    ):
        if body:
            lines += [_text(""), _text(title, style="bold"), *body]
    if a.events is not None and a.turns["source_status"].notna().any():
        rows = a.disagreements()
        title = f"Where the source's own marking disagrees with the channel table ({len(rows)})"
        lines += [_text(""), _text(title, style="bold"), *_disagreements(rows, width)]
    return lines


def _disagreements(rows: pd.DataFrame, width: int) -> list[Text]:
    """One line per disagreement (run, turn, tool, reason, what the source said), then the text
    the model read, in full, when there is one."""
    if not len(rows):
        return [_text("  (none: the source marks every call as the table does)")]
    lines: list[Text] = []
    for row in rows.head(HARD_SHOWN).astype(object).to_dict("records"):
        tool = row["tool"] if isinstance(row["tool"], str) else "-"
        head = _text(f"  run {row['run_id']}  turn {row['turn']}  {tool}  ")
        head.append_text(terminal.channel(str(row["channel"]), str(row["channel"])))
        head.append(f"  {row['reason']}  (source: {row['source_status']})")
        lines.append(head)
        detail = row["detail"]
        if isinstance(detail, str) and detail:
            for paragraph in detail.splitlines():
                lines += [_text(t) for t in _wrap(paragraph, width, "    ", "    ")]
    if len(rows) > HARD_SHOWN:
        lines.append(
            _text(f"  and {plural(len(rows) - HARD_SHOWN, 'more')}: audit(rec).disagreements() has them all")
        )
    return lines


# -- sections -----------------------------------------------------------------------------------


def _summary(df: pd.DataFrame, width: int) -> list[Text]:
    rows = [[str(v) for v in row] for row in df[["metric", "value", "detail"]].astype(object).to_numpy()]
    label_w = max(len(r[0]) for r in rows)
    value_w = max(len(r[1]) for r in rows)
    room = width - 2 - label_w - 2 - value_w - 2
    lines = []
    for label, value, detail in rows:
        head = _text("  ")
        head.append_text(terminal.channel(label, _CHANNEL_LABELS.get(label)))
        head.append(" " * (label_w - len(label) + 2) + value.rjust(value_w))
        if not detail or detail == "<NA>":
            lines.append(head)
            continue
        if room < 24:  # too narrow beside the numbers: the detail goes below them
            lines += [head, *(_text(t) for t in _wrap(detail, width, "    ", "    "))]
            continue
        wrapped = textwrap.wrap(detail, room) or [""]
        head.append("  " + wrapped[0])
        pad = " " * (width - room)
        lines += [head, *(_text(pad + t) for t in wrapped[1:])]
    return lines


def _by_producer(df: pd.DataFrame, width: int) -> list[Text]:
    columns = ["producer", "channel", "turns", "runs", "share", "errors"]
    if df["errors"].isna().all():  # turns only: errors are counted from events
        columns.remove("errors")
    rows = [[cell_text(c, v) for c, v in zip(columns, row, strict=True)] for row in _values(df, columns)]
    return _fitted(columns, rows, width, left={"producer", "channel"}, channel_column="channel")


def _recovery(df: pd.DataFrame, width: int) -> list[Text]:
    columns = [str(c) for c in df.columns]
    rows = [[cell_text(c, v) for c, v in zip(columns, row, strict=True)] for row in _values(df, columns)]
    headers = [c.replace("_", " ") for c in columns]
    return _fitted(headers, rows, width, left={"producer"})


def _models(a: Audit, width: int) -> list[Text]:
    import pandas as pd

    df = a.models()  # its times leave out the runs on a simulated clock
    t = a.turns
    keys = ["source", "run_id"] if "source" in t.columns else ["run_id"]
    on_fake = pd.Series(
        [tuple(k) in a.simulated for k in t[keys].astype(str).itertuples(index=False)],
        index=t.index,
        dtype=bool,
    )
    fake = bool(on_fake.any())  # times shown as missing, and why, below
    counts = ["turns", "runs", "ok", "soft", "hard", "failures"]
    columns = ["model", *counts, *_TIMES, *_TOKENS]
    rows = [
        [
            str(v) if c == "model" else duration(v) if c in _TIMES else cell_text(c, v)
            for c, v in zip(columns, row, strict=True)
        ]
        for row in _values(df, columns)
    ]
    lost = t[t["model"].isna()]
    if len(lost):  # turns no model answered (the run ended first): counted here, not lost
        ch = lost["channel"].astype(str)
        extra = {"model": _NO_MODEL, "turns": len(lost), "runs": lost[keys].drop_duplicates().shape[0]}
        extra.update({k: int((ch == k).sum()) for k in ("ok", "soft", "hard")})
        rows.append([str(extra.get(c, "-")) for c in columns])
    kept = [
        i
        for i, c in enumerate(columns)
        if c == "model" or (fake and c in _TIMES) or any(r[i] != "-" for r in rows)
    ]
    headers = [_TIMES.get(c, _TOKENS.get(c, c)) for c in columns]
    lines = _fitted(
        [headers[i] for i in kept],
        [[r[i] for i in kept] for r in rows],
        width,
        left={"model"},
        channel_headers=True,
    )
    notes = []
    if len(lost):
        notes.append(f"{_NO_MODEL}: {plural(len(lost), 'turn')} a run ended on before any model answered.")
    if any(columns[i] in _TIMES for i in kept):
        notes.append(
            "turn median / mean: each turn's wall time (the model's requests, the tool calls, any "
            "recovery back-off); request median: the model's answered requests alone."
        )
    if fake:
        faked = t[on_fake & t["model"].notna()]
        names = ", ".join(sorted(faked["model"].astype(str).unique()))
        spent = duration(faked["latency_ms"].sum(min_count=1))
        notes.append(
            f"{plural(len(faked), 'turn')} ({names}) ran on a simulated clock (a FakeClock): "
            f"{spent} of simulated time in all, not counted in these times."
        )
    gone = [headers[i] for i, c in enumerate(columns) if i not in kept]
    if gone:
        notes.append(f"not shown, no recording has any: {', '.join(gone)}.")
    if notes:
        lines.append(_text(""))
    for note in notes:
        lines += [_text(line) for line in _wrap(note, width, "  ", "    ")]
    return lines


def _reported(usage: pd.DataFrame) -> bool:
    """Whether any model reported tokens (the usage section is left out otherwise)."""
    return bool(usage["input_tokens"].notna().any() or usage["output_tokens"].notna().any())


def _usage(usage: pd.DataFrame, width: int) -> list[Text]:
    """``Audit.usage("model")`` as a table: tokens, cost and the price it was taken from; then,
    once each, the price table and why a cost is missing."""
    from loopnb.analysis._usage import dollars

    columns = ["model", "runs", "turns", "input_tokens", "output_tokens", "cost_usd", "priced_as"]
    headers = ["model", "runs", "turns", "tokens in", "tokens out", "cost", "priced as"]
    rows = [
        [
            _NO_MODEL if c == "model" and not isinstance(v, str)
            else dollars(float(v)) if c == "cost_usd" and isinstance(v, float)
            else cell_text(c, v)
            for c, v in zip(columns, row, strict=True)
        ]
        for row in _values(usage, columns)
    ]  # fmt: skip
    lines = _fitted(headers, rows, width, left={"model", "priced as"})
    notes = []
    sources = sorted({str(v) for v in usage["price_source"].dropna()})
    if sources:
        notes.append(f"cost: US dollars, as of each turn's start, from {'; '.join(sources)}.")
    missing = sorted({part for v in usage["unpriced"].dropna() for part in str(v).split("; ")})
    if missing:
        notes.append(f"no cost where: {'; '.join(missing)}.")
    if notes:
        lines.append(_text(""))
    for note in notes:
        lines += [_text(line) for line in _wrap(note, width, "  ", "    ")]
    return lines


def _hard_runs(a: Audit, width: int) -> list[Text]:
    t = a.turns
    hard = t[t["channel"].astype(str) == "hard"]
    if not len(hard):
        return [_text("  (none)")]
    lines: list[Text] = []
    shown = hard.head(HARD_SHOWN)
    for row in shown.astype(object).to_dict("records"):
        model = row.get("model")
        head = _text(f"run {row['run_id']}  turn {row['turn']}  ")
        head.append_text(terminal.channel(str(row["producer"]), "hard"))
        head.append(f"  model {model}" if isinstance(model, str) else "  no model answered")
        source = f"{row['source']}  " if "source" in row else ""
        if 2 + len(source) + len(head) <= width:
            lines.append(_text("  " + source).append_text(head))
        else:  # the file on a line of its own
            lines += [_text("  " + source.rstrip()), _text("  ").append_text(head)]
        cause = row.get("error_text")
        for paragraph in (cause if isinstance(cause, str) else "(no message recorded)").splitlines():
            lines += [_text(t) for t in _wrap(paragraph, width, "    ", "    ")]
    if len(hard) > HARD_SHOWN:
        more = len(hard) - HARD_SHOWN
        lines.append(
            _text(
                f"  and {plural(more, 'more hard run')}: every one is in the turns frame "
                "(loopnb.load_many(PATHS), channel == 'hard')"
            )
        )
    return lines


# -- layout -------------------------------------------------------------------------------------


def _wrap(text: str, width: int, first: str, rest: str) -> list[str]:
    return textwrap.wrap(text, max(40, width), initial_indent=first, subsequent_indent=rest) or [first]


def _values(df: pd.DataFrame, columns: Sequence[str]) -> list[list[Any]]:
    return [list(row) for row in df[list(columns)].astype(object).to_numpy()]


def _fitted(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int, **style: Any) -> list[Text]:
    """``_grid``, cut into tables of at most ``width`` columns when it is wider, each repeating the
    first column (its names), one below the other."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)] if rows else []
    groups: list[list[int]] = [[]]
    used = 2 + (widths[0] if widths else 0)
    for i, w in enumerate(widths[1:], start=1):
        if groups[-1] and used + 2 + w > width:
            groups.append([])
            used = 2 + widths[0]
        groups[-1].append(i)
        used += 2 + w
    lines: list[Text] = []
    for group in groups:
        columns = [0, *group]
        if lines:
            lines.append(_text(""))
        lines += _grid([headers[i] for i in columns], [[r[i] for i in columns] for r in rows], **style)
    return lines


def _grid(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    left: set[str],
    channel_column: str | None = None,
    channel_headers: bool = False,
) -> list[Text]:
    """A table: names in the ``left`` columns left-aligned, every other column right-aligned."""
    if not rows:
        return [_text("  (none)")]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    def line(cells: Sequence[str], *, head: bool) -> Text:
        text = _text("  ")
        for i, (cell, w) in enumerate(zip(cells, widths, strict=True)):
            padded = cell.ljust(w) if headers[i] in left else cell.rjust(w)
            if i:
                text.append("  ")
            coloured = (head and channel_headers) or (not head and headers[i] == channel_column)
            text.append_text(terminal.channel(padded, cell) if coloured else _text(padded))
        text.rstrip()
        return text

    return [line(headers, head=True), *(line(r, head=False) for r in rows)]


def _text(text: str, style: str = "") -> Text:
    from rich.text import Text

    return Text(text, style=style)
