"""On a terminal (a pty), ``loopnb demo`` and ``loopnb audit`` colour ok / soft / hard from the palette;
piped, with ``NO_COLOR`` or on ``TERM=dumb`` they print the same words as plain text."""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest

from loopnb._palette import PALETTE

ROOT = Path(__file__).resolve().parents[1]
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def rgb(hex_colour: str) -> str:
    """The truecolour foreground escape of ``#rrggbb``."""
    r, g, b = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"38;2;{r};{g};{b}"


def environment(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "COLUMNS", "TERM")
    }
    return {**env, "PYTHONPATH": str(ROOT), "TERM": "xterm-256color", "COLORTERM": "truecolor", **extra}


def on_a_pty(args: list[str], **env: str) -> tuple[int, str]:
    """Run ``python -m loopnb ARGS`` with its stdout on a pseudo-terminal; its exit code and output."""
    leader, follower = os.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "loopnb", *args],
            stdout=follower,
            stderr=subprocess.DEVNULL,
            env=environment(**env),
        )
    finally:
        os.close(follower)
    chunks = []
    try:
        while select.select([leader], [], [], 60)[0]:
            try:
                chunk = os.read(leader, 1 << 16)
            except OSError:  # EIO: the child closed its end
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(leader)
    code = proc.wait(timeout=60)
    return code, b"".join(chunks).decode().replace("\r\n", "\n")


def piped(args: list[str], **env: str) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "loopnb", *args],
        capture_output=True,
        text=True,
        env=environment(**env),
        timeout=60,
        check=False,
    )
    return done.returncode, done.stdout


DEMO = ["demo", "mistyped_path", "stubborn_loop", "--width", "100"]


def test_the_demo_is_coloured_on_a_terminal_from_the_palette() -> None:
    code, out = on_a_pty(DEMO)
    assert code == 0
    for channel in ("ok", "soft", "hard"):
        assert rgb(PALETTE[channel]) in out, channel
    soft_cell = re.search(r"\x1b\[([0-9;]*)msoft", out)
    assert soft_cell is not None and rgb(PALETTE["soft"]) in soft_cell.group(1)


def test_the_words_are_the_same_with_or_without_colour() -> None:
    _, coloured = on_a_pty(DEMO)
    code, plain = piped(DEMO)
    assert code == 0
    assert ANSI.sub("", coloured) == plain
    for word in (" ok ", " soft ", " hard ", "ended ok", "ended hard"):
        assert word in plain


@pytest.mark.parametrize("env", [{"NO_COLOR": "1"}, {"TERM": "dumb"}], ids=["NO_COLOR", "TERM=dumb"])
def test_no_colour_with_no_color_or_a_dumb_terminal(env: dict[str, str]) -> None:
    code, out = on_a_pty(DEMO, **env)
    assert code == 0
    assert "\x1b[" not in out
    assert out == piped(DEMO)[1]


def test_piped_output_has_no_escapes_even_from_a_colour_terminal() -> None:
    code, out = piped(DEMO)
    assert code == 0 and "\x1b" not in out


def test_the_audit_is_coloured_on_a_terminal_and_plain_when_piped(tmp_path: Path) -> None:
    runs = str(tmp_path / "runs")
    assert piped(["demo", "mistyped_path", "stubborn_loop", "context_overflow", "--record", runs])[0] == 0
    code, coloured = on_a_pty(["audit", runs, "--width", "100"])
    assert code == 0
    for channel in ("ok", "soft", "hard"):
        assert rgb(PALETTE[channel]) in coloured, channel
    code, plain = piped(["audit", runs, "--width", "100"])
    assert code == 0 and "\x1b" not in plain
    assert ANSI.sub("", coloured) == plain
    _, no_color = on_a_pty(["audit", runs, "--width", "100"], NO_COLOR="1")
    assert no_color == plain


def test_the_pictures_in_docs_show_the_palette() -> None:
    """docs/terminal_*.svg, drawn by docs/make_terminal_svgs.py, carry each channel's colour."""
    for name, words in (("terminal_demo.svg", "declared"), ("terminal_audit.svg", "Summary")):
        svg = (ROOT / "docs" / name).read_text(encoding="utf-8")
        assert all(PALETTE[channel].lower() in svg.lower() for channel in ("ok", "soft", "hard")), name
        assert words in svg, name
