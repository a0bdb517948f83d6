"""Notebooks are committed cleared: no outputs, no widget state, no execution counts, no errors.

A saved plotly widget embeds megabytes of JavaScript, and a committed output drifts from the code.
Clear them with: python scripts/clear_notebooks.py notebooks/*.ipynb
"""

from __future__ import annotations

import json
import pathlib

import pytest

NOTEBOOKS = sorted((pathlib.Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
KEPT_METADATA = {"kernelspec", "language_info"}


def test_there_are_notebooks():
    assert NOTEBOOKS, "notebooks/ holds the tutorials; none were found"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_committed_cleared(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    assert set(nb.get("metadata", {})) <= KEPT_METADATA, f"{path.name}: notebook metadata holds widget state"
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        assert cell.get("outputs") == [], f"{path.name} cell {i}: outputs committed"
        assert cell.get("execution_count") is None, f"{path.name} cell {i}: execution count committed"
    assert path.stat().st_size < 100_000, f"{path.name} is {path.stat().st_size} bytes: cleared?"
