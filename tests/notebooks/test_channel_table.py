"""Every row of the channel table appears in notebook 02 with its exact text, in an output.

Notebook 02 prints each failure as ``channel: <soft|hard> (<producer>)`` followed by exactly what
the model reads (soft) or the ``LoopError`` your code receives (hard). This test executes the
notebook and looks for every row of DESIGN.md's table "Every failure has one channel". Texts with
variable parts (a tool's name, a message, a duration) are checked against the table's fixed shape
with a regular expression; the variable parts are the notebook's examples.
"""

from __future__ import annotations

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
    Row(5, "pre-dispatch hook vetoes", "soft", "hook_veto", "blocked by policy: <the hook's own reason>",
        (r"blocked by policy: .+",)),
    Row(6, "tool's circuit breaker is open", "soft", "breaker_open",
        "tool temporarily unavailable: circuit breaker open",
        (re.escape("tool temporarily unavailable: circuit breaker open"),)),
    Row(7, "timeout middleware fires", "soft", "timeout", "Tool 'x' timed out after Ns",
        (rf"Tool '{NAME}' timed out after \d+(?:\.\d+)?s",)),
    Row(8, "loop detector refuses before execution", "soft", "loop_refusal",
        "dispatch refused before execution: <the detection error>",
        (r"dispatch refused before execution: loop detected: .+",)),
    Row(9, "recovery gives up (Skip / AskUser / Fail)", "soft", "recovery_gave_up",
        "the original failing result, verbatim",
        (re.escape("remote rejected main: protected branch"),)),
    Row(10, "cancellation", "hard", "cancelled", "Cancelled", ("Cancelled",)),
    Row(11, "context cannot fit after compaction", "hard", "context_exceeded", "ContextExceeded",
        ("ContextExceeded",)),
    Row(12, "loop detector stop threshold, or convergence with action Stop", "hard", "loop_detected",
        "LoopDetected",
        ("LoopDetected\nmessage: loop detected: .+", "LoopDetected\nmessage: convergence detected: .+")),
    Row(13, "convergence with action AskUser", "hard", "user_input_required", "UserInputRequired",
        ("UserInputRequired",)),
    Row(14, "recovery retries past the ceiling", "hard", "tool_recovery_exhausted",
        "ToolRecoveryExhausted(attempts=6)", (re.escape("ToolRecoveryExhausted(attempts=6)"),)),
    Row(15, "every model in the fallback chain spent", "hard", "fallback_exhausted", "FallbackExhausted",
        ("FallbackExhausted",)),
)  # fmt: skip


@pytest.fixture(scope="module")
def cell_outputs() -> list[str]:
    """The notebook executed: each code cell's printed text (stdout streams), in order."""
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
    texts = []
    for cell in nb.cells:
        if cell.cell_type == "code":
            texts.append("".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream"))
    return texts


def matches(row: Row, text: str, outputs: list[str]) -> list[int]:
    """The cells whose output shows ``row``'s channel and producer followed by ``text`` exactly."""
    pattern = re.compile(rf"^channel: {row.channel} \({row.producer}\)\n{text}$", re.MULTILINE)
    return [i for i, out in enumerate(outputs) if pattern.search(out)]


def test_the_table_has_fifteen_rows_nine_soft():
    assert [r.number for r in ROWS] == list(range(1, 16))
    assert [r.channel for r in ROWS].count("soft") == 9


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
