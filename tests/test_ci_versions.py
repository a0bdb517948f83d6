"""``scripts/ci_versions.py``: a red CI run names the packages that moved since the last green one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "ci_versions.py"


def run(*args: str) -> str:
    done = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, check=True)
    return done.stdout


def test_each_moved_added_or_removed_package_is_named(tmp_path: Path) -> None:
    record = SCRIPT.parents[1] / ".ci" / "versions-green.txt"
    green = dict(line.split("==", 1) for line in record.read_text(encoding="utf-8").splitlines())
    assert len(green) >= 3, "the record of the last green run lists the main lane's packages"
    moved, gone = sorted(green)[:2]
    today = {**green, moved: "0.0.0.dev1", "brand_new-pkg": "1.2"}
    del today[gone]
    freeze = tmp_path / "freeze.txt"
    pinned = [f"{name}=={version}" for name, version in today.items()]
    freeze.write_text("\n".join([*pinned, "-e git+https://x#egg=loopnb"]) + "\n")
    out = run(str(freeze))
    assert "3 packages differ from the last green run" in out
    assert f"  {moved}: {green[moved]} -> 0.0.0.dev1\n" in out
    assert f"  {gone}: {green[gone]}, no longer installed\n" in out
    assert "  brand-new-pkg: new, 1.2\n" in out


def test_an_unchanged_freeze_says_so(tmp_path: Path) -> None:
    record = SCRIPT.parents[1] / ".ci" / "versions-green.txt"
    freeze = tmp_path / "freeze.txt"
    freeze.write_text(record.read_text(encoding="utf-8"))
    assert "every package is at the version of the last green run" in run(str(freeze))
