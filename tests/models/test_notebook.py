"""The bring-your-own-model notebook, run against the local protocol server as its real model."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tests.models.fakeserver import FakeServer, Reply

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = REPO / "notebooks" / "07_bring_your_own_model.ipynb"


def outputs(nb: nbformat.NotebookNode) -> str:
    return "\n".join(
        out.get("text", "")
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
    )


def test_the_notebook_runs_the_smallest_program_on_a_configured_model(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.push(
        Reply(calls=[("read_file", {"path": "src/mian.rs"})]),
        Reply(calls=[("list_files", {})]),
        Reply(calls=[("read_file", {"path": "src/main.rs"})]),
        Reply("It does nothing: main is empty."),
    )
    # The kernel inherits this process's environment: the model lives on the local server.
    monkeypatch.setenv("LOOPNB_MODEL", "openai:local-test")
    monkeypatch.setenv("LOOPNB_BASE_URL", server.openai_url)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    nb = nbformat.read(NOTEBOOK, as_version=4)

    NotebookClient(nb, timeout=120, resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()

    text = outputs(nb)
    assert f"Using a real model: OpenAIChatModel('local-test', base_url='{server.openai_url}'" in text
    assert "soft  read_file: 'file src/mian.rs not found'" in text
    assert "turns: 4; answer: 'It does nothing: main is empty.'" in text
    tool_messages = [m for m in server.requests[1].body["messages"] if m["role"] == "tool"]
    assert tool_messages[0]["content"] == "ERROR: file src/mian.rs not found"
    assert server.requests[0].headers["authorization"] == "Bearer no-key"


def test_the_committed_notebook_is_stored_as_run_on_the_embedded_model_and_stripped() -> None:
    """Stored executed (scripts/store_notebooks.py, checked in tests/notebooks/test_hygiene.py) on the
    embedded model: no key, no server address and no widget state reach the file."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert set(nb.metadata) <= {"kernelspec", "language_info"}
    printed = "".join(
        "".join(o.get("text", "")) for c in nb.cells if c.cell_type == "code" for o in c.outputs
    )
    assert "Bearer" not in printed and "sk-" not in printed and "fallible" in printed.lower()
    for cell in nb.cells:
        assert set(cell.metadata) <= {"tags"}
