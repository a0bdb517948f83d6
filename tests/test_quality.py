"""The code passes its own linters and a strict type check of the whole package (one command runs all)."""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys
import tomllib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
BIN = pathlib.Path(sys.executable).parent


def tool_path(name: str) -> str:
    found = BIN / name
    if found.exists():
        return str(found)
    on_path = shutil.which(name)
    if on_path is None:
        pytest.fail(f"{name} is not installed; install the test extra: pip install -e '.[test]'")
    return on_path


def run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)


def test_ruff_lint_is_clean():
    proc = run(tool_path("ruff"), "check", "loopnb", "tests", "benchmarks")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_format_is_clean():
    proc = run(tool_path("ruff"), "format", "--check", "loopnb", "tests", "benchmarks")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_strict_on_the_whole_package():
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    assert config["files"] == ["loopnb"], "mypy must check the whole package, not a part of it"
    assert config["strict"] is True
    proc = run(tool_path("mypy"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no issues found" in proc.stdout, proc.stdout
