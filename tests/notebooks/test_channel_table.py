"""Every row of the channel table appears in notebook 02 with its exact text, in an output.

Notebook 02 prints each failure as ``channel: <soft|hard> (<producer>)`` followed by exactly what
the model reads (soft) or the ``LoopError`` your code receives (hard). This test executes the
notebook and looks for every row of DESIGN.md's table "Every failure has one channel", and for the
row that table leaves out but the producers name (``invalid_arguments``: arguments that do not fit
the tool's schema). Texts with variable parts (a tool's name, a message, a duration) are checked
against the table's fixed shape with a regular expression; the variable parts are the notebook's
examples. The recap at the end is one table of every row: its failure, channel, producer, the
whole text, and why.
"""

from __future__ import annotations

import html
import os
import pathlib
import re
from dataclasses import dataclass

import pytest

import nbformat
import nbclient

REPO = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOK = REPO / "notebooks" / "02_every_failure_has_a_channel.ipynb"

NAME = r"[A-Za-z_][\w-]*"
MISS = rf"Tool not found: {NAME}\. Available: {NAME}(?:, {NAME}){{0,7}}(?:\.\.\.)?"


@dataclass(frozen=True)
class Row:
    """One row of the channel table and the shapes of its text (each must appear)."""

    number: int
    failure: str
    channel: str
    producer: str
    shape: str  # as the table writes it
    texts: tuple[str, ...]  # regexes: each must match a printed text line exactly


ROWS = (
    Row(1, "tool raises ToolError / returns an error", "soft", "tool_error", "the tool's own text",
        (re.escape("file src/mian.rs not found"),)),
    Row(2, "tool raises any other exception (panic)", "soft", "tool_panic",
        'Tool "x" panicked: <message>; message = the string payload, else (unknown payload)',
        (rf'Tool "{NAME}" panicked: (?!\(unknown payload\)).+',
         rf'Tool "{NAME}" panicked: \(unknown payload\)')),
    Row(3, "name never advertised to the model", "soft", "not_advertised", "tool 'x' is not available",
        (rf"tool '{NAME}' is not available",)),
    Row(4, "name advertised but missing at dispatch", "soft", "registry_miss",
        "Tool not found: x. Available: a, b, c... plus  Did you mean 'a'? when the suggestion layer is on",
        (MISS, rf"{MISS} Did you mean '{NAME}'\?")),
    Row(5, "arguments that do not fit the tool's schema", "soft", "invalid_arguments",
        "invalid arguments for tool 'x': each wrong field, what came; then the arguments expected",
        (rf"invalid arguments for tool '{NAME}':\n(?:- {NAME}: .+; got .+\n)+expected arguments: \{{.+\}}",)),
    Row(6, "pre-dispatch hook vetoes", "soft", "hook_veto", "blocked by policy: <the hook's own reason>",
        (r"blocked by policy: .+",)),
    Row(7, "tool's circuit breaker is open", "soft", "breaker_open",
        "tool temporarily unavailable: circuit breaker open",
        (re.escape("tool temporarily unavailable: circuit breaker open"),)),
    Row(8, "timeout middleware fires", "soft", "timeout", "Tool 'x' timed out after Ns",
        (rf"Tool '{NAME}' timed out after \d+(?:\.\d+)?s",)),
    Row(9, "loop detector refuses before execution", "soft", "loop_refusal",
        "dispatch refused before execution: <the detection error>",
        (r"dispatch refused before execution: loop detected: .+",)),
    Row(10, "recovery gives up (Skip / AskUser / Fail)", "soft", "recovery_gave_up",
        "the original failing result, verbatim",
        (re.escape("remote rejected main: protected branch"),)),
    Row(11, "cancellation", "hard", "cancelled", "Cancelled", ("Cancelled",)),
    Row(12, "context cannot fit after compaction", "hard", "context_exceeded", "ContextExceeded",
        ("ContextExceeded",)),
    Row(13, "loop detector stop threshold, or convergence with action Stop", "hard", "loop_detected",
        "LoopDetected",
        ("LoopDetected\nmessage: loop detected: .+", "LoopDetected\nmessage: convergence detected: .+")),
    Row(14, "convergence with action AskUser", "hard", "user_input_required", "UserInputRequired",
        ("UserInputRequired",)),
    Row(15, "recovery retries past the ceiling", "hard", "tool_recovery_exhausted",
        "ToolRecoveryExhausted(attempts=6)", (re.escape("ToolRecoveryExhausted(attempts=6)"),)),
    Row(16, "every model in the fallback chain spent", "hard", "fallback_exhausted", "FallbackExhausted",
        ("FallbackExhausted",)),
)  # fmt: skip


@pytest.fixture(scope="module")
def executed() -> nbformat.NotebookNode:
    """The notebook, executed."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    env_path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env_path) if p)
    try:
        client = nbclient.NotebookClient(
            nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}
        )
        client.execute()
    finally:
        os.environ["PYTHONPATH"] = env_path
        if not env_path:
            del os.environ["PYTHONPATH"]
    return nb


@pytest.fixture(scope="module")
def cell_outputs(executed: nbformat.NotebookNode) -> list[str]:
    """Each code cell's printed text (stdout streams), in order."""
    texts = []
    for cell in executed.cells:
        if cell.cell_type == "code":
            texts.append("".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream"))
    return texts


def printed_as(row: Row, text: str) -> re.Pattern[str]:
    """``row``'s channel and producer, followed by a text matching ``text`` exactly (its group 1)."""
    return re.compile(rf"^channel: {row.channel} \({row.producer}\)\n({text})$", re.MULTILINE)


def matches(row: Row, text: str, outputs: list[str]) -> list[int]:
    """The cells whose output shows ``row``'s channel and producer followed by ``text`` exactly."""
    return [i for i, out in enumerate(outputs) if printed_as(row, text).search(out)]


def printed(row: Row, text: str, outputs: list[str]) -> list[str]:
    """Each text matching ``text`` that a cell printed under ``row``'s channel and producer."""
    return [m[1] for out in outputs for m in printed_as(row, text).finditer(out)]


def test_the_table_has_sixteen_rows_ten_soft():
    assert [r.number for r in ROWS] == list(range(1, 17))
    assert [r.channel for r in ROWS].count("soft") == 10


@pytest.mark.parametrize("row", ROWS, ids=lambda r: f"{r.number}-{r.producer}")
def test_row_appears_with_its_exact_text(row, cell_outputs):
    for text in row.texts:
        assert matches(row, text, cell_outputs), (
            f"row {row.number} ({row.failure} -> {row.channel}: {row.shape}) not printed as "
            f"'channel: {row.channel} ({row.producer})' followed by a line matching {text!r}"
        )


def test_each_row_has_its_own_cell(cell_outputs):
    cells = {row.number: set(matches(row, row.texts[0], cell_outputs)) for row in ROWS}
    firsts = [min(found) for found in cells.values() if found]
    assert len(firsts) == len(ROWS) and len(set(firsts)) == len(ROWS), cells


def test_the_recap_names_each_failure_says_why_and_shows_every_text_whole(executed, cell_outputs):
    """The recap table: one row per row of the table, with its failure and why, and each text the
    model read as the row's cell printed it, not cut short."""
    tables = [
        "".join(out["data"]["text/html"])
        for cell in executed.cells
        if cell.cell_type == "code"
        for out in cell.outputs
        if out.get("output_type") == "execute_result" and "text/html" in out.get("data", {})
    ]
    recap = next((t for t in tables if re.search(r"<th[^>]*>why</th>", t)), None)
    assert recap is not None, "no table of the notebook has a why column"
    headings = re.findall(r"<th[^>]*>([^<]*)</th>", recap)
    columns = [h for h in headings if h not in ("", "&nbsp;", "row") and not h.isdigit()]
    assert columns == ["failure", "channel", "producer", "text", "why"]
    assert [int(h) for h in headings if h.isdigit()] == [row.number for row in ROWS]
    shown = html.unescape(recap)
    for row in ROWS:
        if row.channel == "soft":
            texts = [t for text in row.texts for t in printed(row, text, cell_outputs)]
            whole = [t for t in texts if t in shown]
            assert whole, f"row {row.number}: none of {texts} is whole in the recap"
    refusal = next(row for row in ROWS if row.producer == "loop_refusal")
    assert max(len(t) for t in printed(refusal, refusal.texts[0], cell_outputs)) > 120  # past the old cut
