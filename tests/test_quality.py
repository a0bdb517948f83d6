"""The code passes its own linters and the engine's strict type check (one command runs all)."""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys

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


def test_mypy_strict_on_the_engine():
    proc = run(tool_path("mypy"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
