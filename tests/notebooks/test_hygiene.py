"""Notebooks are committed executed, with the static picture a reader without a kernel can see.

GitHub, nbviewer and the documentation site show stored outputs, so each notebook is stored run
top to bottom (``python scripts/store_notebooks.py notebooks/*.ipynb``): printed text, tables,
plotly's JSON and the script-free HTML picture of loopnb's views; no widget view or widget state
(they need the kernel that made them), no error, no script, no secret, and small. Cells tagged
``nbval-check-output`` are compared by nbval on every run, so a stored output that no longer
matches the code fails the suite; the last test proves that comparison is live.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from loopnb import Redactor

REPO = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
KEPT_METADATA = {"kernelspec", "language_info"}
KEPT_MIME = {"text/plain", "text/markdown", "text/html", "application/vnd.plotly.v1+json", "image/png"}
CHECK = "nbval-check-output"
MAX_BYTES = 400_000


def load(path: pathlib.Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def code_cells(nb: dict) -> list[dict]:
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def test_there_are_notebooks():
    assert NOTEBOOKS, "notebooks/ holds the tutorials; none were found"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_stored_executed_in_order(path):
    nb = load(path)
    assert set(nb.get("metadata", {})) <= KEPT_METADATA, f"{path.name}: notebook metadata holds widget state"
    counts = [c.get("execution_count") for c in code_cells(nb)]
    assert counts == list(range(1, len(counts) + 1)), f"{path.name}: not stored run top to bottom: {counts}"
    assert any(c["outputs"] for c in code_cells(nb)), f"{path.name}: stored without outputs"
    assert path.stat().st_size < MAX_BYTES, f"{path.name} is {path.stat().st_size:,} bytes"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_stored_outputs_render_without_a_kernel(path):
    redact = Redactor()
    for i, cell in enumerate(code_cells(load(path)), start=1):
        for out in cell["outputs"]:
            where = f"{path.name} [{i}]"
            kind, data = out["output_type"], out.get("data", {})
            assert kind in {"stream", "display_data", "execute_result"}, f"{where}: {kind}"
            assert set(data) <= KEPT_MIME, f"{where}: needs a kernel: {sorted(set(data) - KEPT_MIME)}"
            text = "".join(out.get("text", "")) + json.dumps(data)
            assert "<script" not in text.lower(), f"{where}: a stored output carries a script"
            assert redact(text) == text, f"{where}: a stored output holds something the redactor masks"


def checked(path: pathlib.Path) -> bool:
    return any(CHECK in c["metadata"].get("tags", []) for c in code_cells(load(path)))


def test_printed_outputs_are_checked():
    tagged = [p.name for p in NOTEBOOKS if checked(p)]
    assert len(tagged) >= len(NOTEBOOKS) // 2, f"only {tagged} have cells whose stored output nbval checks"


def test_a_stale_stored_output_fails_nbval(tmp_path):
    """Change what a checked cell is stored as printing: nbval must report the difference."""
    source = next(p for p in NOTEBOOKS if p.name.startswith("03_"))
    nb = load(source)
    cell = next(c for c in code_cells(nb) if CHECK in c["metadata"].get("tags", []))
    stream = next(o for o in cell["outputs"] if o["output_type"] == "stream")
    stream["text"] = ["a line the code no longer prints\n"]
    stale = tmp_path / "notebooks" / source.name
    stale.parent.mkdir()
    stale.write_text(json.dumps(nb), encoding="utf-8")
    shutil.copy(REPO / "notebooks" / "nbval_sanitize.cfg", stale.parent)
    paths = (str(REPO), os.environ.get("PYTHONPATH"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
         "--nbval-lax", "--nbval-current-env", str(stale)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout[-2000:]
    assert "a line the code no longer prints" in done.stdout
