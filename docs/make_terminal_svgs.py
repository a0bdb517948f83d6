"""Draw docs/terminal_demo.svg and docs/terminal_audit.svg: what ``loopnb demo`` and ``loopnb audit``
print on a colour terminal.

Each command runs for real (``python -m loopnb``, with ``FORCE_COLOR`` so that rich writes the
colours it writes on a terminal); its output is read back with ``Text.from_ansi`` into a recording
console and saved with ``Console.save_svg``. Run from the repository root::

    PYTHONPATH=$PWD python docs/make_terminal_svgs.py
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.text import Text

ROOT = Path(__file__).resolve().parents[1]
WIDTH = 100
DEMO = ["demo", "mistyped_path", "stubborn_loop", "flaky_tool_breaker", "--width", str(WIDTH)]


def coloured(args: list[str], cwd: Path) -> str:
    """The output of ``loopnb ARGS`` as a colour terminal gets it (ANSI escapes included)."""
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM")}
    env.update(FORCE_COLOR="1", COLORTERM="truecolor", TERM="xterm-256color")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    done = subprocess.run(
        [sys.executable, "-m", "loopnb", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"loopnb {' '.join(args)} exited {done.returncode}:\n{done.stderr}")
    return done.stdout


def save(args: list[str], output: str, path: Path) -> None:
    """Draw ``$ loopnb ARGS`` and its ``output`` as a terminal window, into ``path``."""
    console = Console(
        record=True, width=WIDTH, force_terminal=True, color_system="truecolor", file=io.StringIO()
    )
    console.print(Text(f"$ loopnb {' '.join(args)}", style="bold"), soft_wrap=True)
    console.print(Text.from_ansi(output.rstrip("\n")), soft_wrap=True)
    console.save_svg(str(path), title=f"loopnb {args[0]}")
    print(f"wrote {path.relative_to(ROOT)}")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        here = Path(tmp)
        save(DEMO, coloured(DEMO, here), ROOT / "docs" / "terminal_demo.svg")
        coloured(["demo", "--record", "runs"], here)  # every scenario, for the audit
        audit = ["audit", "runs", "--width", str(WIDTH)]
        save(audit, coloured(audit, here), ROOT / "docs" / "terminal_audit.svg")


if __name__ == "__main__":
    main()
