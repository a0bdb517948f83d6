"""The layered house: packages import downward only, none holds more than 25 modules, each says
in its docstring what it is for (DESIGN.md, third round)."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "loopnb"


def _packages() -> list[Path]:
    return sorted(p.parent for p in PACKAGE.rglob("__init__.py") if "__pycache__" not in p.parts)


def test_the_layering_contract_is_kept() -> None:
    # import-linter's own command, as a user runs it; it reads [tool.importlinter] in pyproject.toml
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True))",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 kept, 0 broken" in done.stdout


def test_the_contract_sees_an_import_inside_a_function(tmp_path: Path) -> None:
    # the same contract over a copy of the package with one late, upward import added: broken
    copy = tmp_path / "loopnb"
    subprocess.run(["cp", "-r", str(PACKAGE), str(copy)], check=True)
    seqs = copy / "record" / "_seqs.py"
    seqs.write_text(seqs.read_text() + "\n\ndef _late() -> None:\n    from loopnb.notebook import LiveView\n")
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True))",
        ],
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "loopnb.record is not allowed to import loopnb.notebook" in done.stdout
    assert "loopnb.record._seqs -> loopnb.notebook" in done.stdout


@pytest.mark.parametrize("package", _packages(), ids=lambda p: ".".join(p.relative_to(ROOT).parts))
def test_a_package_holds_at_most_25_modules_and_says_what_it_is_for(package: Path) -> None:
    modules = sorted(package.glob("*.py"))
    assert len(modules) <= 25, f"{package.name} holds {len(modules)} modules: split it"
    docstring = ast.get_docstring(ast.parse((package / "__init__.py").read_text()))
    assert docstring, f"{package.name}/__init__.py says nothing about what the package is for"


def test_every_package_is_in_a_layer() -> None:
    # exhaustive = true makes import-linter refuse a package the contract does not place; this
    # checks the list and the tree agree from loopnb's side too
    import tomllib

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (contract,) = [c for c in contracts if c["type"] == "layers"]
    placed = {name.strip() for layer in contract["layers"] for name in layer.split("|")}
    top = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    top |= {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert placed == top
    for name in placed - {"__main__"}:  # and each imports on its own, in a fresh interpreter's order
        importlib.import_module(f"loopnb.{name}")


def test_the_drawing_module_draws_everything_the_layers_below_ask_for() -> None:
    # loopnb._drawing's docstring lists what the notebook layer provides; each is a function there
    import loopnb._drawing
    from loopnb.notebook import _drawing as provided

    for name in ("recording_page", "comparison_page", "comparison_view", "comparison_html"):
        assert f"``{name}(" in loopnb._drawing.__doc__
        assert callable(getattr(provided, name)), name
    assert loopnb._drawing.drawer() is provided


@pytest.mark.parametrize(
    "package", ["loopnb.notebook", "loopnb.analysis", "loopnb.fileformats", "loopnb.cli"]
)
def test_a_layer_imports_without_the_extras_it_does_not_need(package: str) -> None:
    # OpenTelemetry, DuckDB and Dask are extras: the notebook layer (watch() included) imports
    # without them and loads them when a function needs them
    blocked = ["opentelemetry", "duckdb", "dask", "distributed"]
    code = (
        "import sys\n"
        f"for name in {blocked!r}: sys.modules[name] = None  # import name raises ImportError\n"
        f"import {package}\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
