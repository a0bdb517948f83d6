"""The Binder configuration cannot rot: build its environment in a fresh virtualenv and run notebook 01.

repo2docker with a ``binder/`` folder ignores the root config, uses ``binder/runtime.txt`` for the
Python version and runs ``pip install -r binder/requirements.txt`` from the repository root on
top of its base environment (JupyterLab, ipywidgets, ipykernel). This test does the same without
Docker: a venv on the runtime.txt Python, a stand-in for the base environment, the requirements,
then notebook 01 under nbval, and every module any notebook imports.
"""

from __future__ import annotations

import ast
import json
import os
import pathlib
import re
import shutil
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
BINDER = REPO / "binder"
NOTEBOOK = REPO / "notebooks" / "01_soft_and_hard.ipynb"
BASE_ENV = ["jupyterlab==4.*", "notebook==7.*", "ipywidgets==8.*", "ipykernel", "pytest", "nbval"]

pytestmark = pytest.mark.slow


def runtime_python() -> str:
    text = (BINDER / "runtime.txt").read_text().strip()
    match = re.fullmatch(r"python-(\d+)\.(\d+)", text)
    assert match, f"binder/runtime.txt should read python-X.Y, got {text!r}"
    major, minor = match.groups()
    candidates: list[str | None] = []
    pyenv = pathlib.Path(os.environ.get("PYENV_ROOT", "/root/.pyenv")) / "versions"
    if pyenv.is_dir():
        candidates += [str(p / "bin" / "python3") for p in sorted(pyenv.glob(f"{major}.{minor}.*"))]
    candidates.append(shutil.which(f"python{major}.{minor}"))
    for candidate in candidates:
        if candidate and pathlib.Path(candidate).exists() and _runs(candidate):
            return candidate
    message = f"no Python {major}.{minor} on this machine to stand in for Binder's"
    if os.environ.get("LOOPNB_REQUIRE_BINDER_PYTHON"):
        pytest.fail(message)
    pytest.skip(message + " (set LOOPNB_REQUIRE_BINDER_PYTHON=1 to make this a failure)")


def _runs(python: str) -> bool:
    """A pyenv shim can exist and still refuse to run: try it."""
    proc = subprocess.run([python, "-c", "pass"], capture_output=True, timeout=60)
    return proc.returncode == 0


def test_binder_files_are_what_repo2docker_expects():
    # the package with the extra that holds what the notebooks import
    assert (BINDER / "requirements.txt").read_text().split()[0] == ".[notebook]"
    assert not (BINDER / "environment.yml").exists(), "environment.yml would make requirements.txt unused"
    major_minor = (BINDER / "runtime.txt").read_text().strip().removeprefix("python-")
    assert tuple(int(x) for x in major_minor.split(".")) >= (3, 11), "loopnb needs Python >= 3.11"


def test_binder_environment_runs_notebook_01(tmp_path):
    python = runtime_python()
    venv = tmp_path / "binder-venv"
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, *BASE_ENV], check=True, cwd=REPO, timeout=900)
    subprocess.run([*pip, "-r", "binder/requirements.txt"], check=True, cwd=REPO, timeout=900)
    work = tmp_path / "work"  # run a copy, under an empty pytest config, away from the repo
    work.mkdir()
    shutil.copy(NOTEBOOK, work / NOTEBOOK.name)
    (work / "pytest.ini").write_text("[pytest]\n")
    proc = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", "pytest.ini",
         "--nbval-lax", "--nbval-current-env", NOTEBOOK.name],
        cwd=work, capture_output=True, text=True, timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout
    modules = notebook_imports()
    assert {"loopnb", "distributed", "pydantic_ai", "inspect_ai"} <= set(modules), modules
    imported = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import " + ", ".join(modules)],
        cwd=work, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    lacks = f"binder/requirements.txt lacks a notebook's import:\n{imported.stderr[-2000:]}"
    assert imported.returncode == 0, lacks


def notebook_imports() -> list[str]:
    """The modules the notebooks' code cells import (absolute imports, as written)."""
    found: set[str] = set()
    for path in sorted((REPO / "notebooks").glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] != "code":
                continue
            source = "".join(cell["source"])
            lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
            for node in ast.walk(ast.parse("\n".join(lines))):
                if isinstance(node, ast.Import):
                    found.update(alias.name for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    found.add(node.module)
    return sorted(found)
