"""What the browser tests share: servers on 127.0.0.1, notebooks to serve, the page's checks.

``server`` runs a Jupyter server (Voila, JupyterLab, Notebook 7) in its own process group until it
answers; ``SETTINGS`` are the user settings that make JupyterLab and Notebook 7 reliable to drive;
``offline`` refuses every request that would leave 127.0.0.1 and lists it; ``measure`` (with
``CONTRAST_JS``) gives the contrast of the view's texts against the background each is drawn on
(the WCAG 2 ratio); ``board_overrun`` how far the breaker board draws past its pane.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence

import pytest

CHROMIUM = "/usr/bin/chromium"
REPO = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(sys.executable).parent
SHOTS = REPO / "build" / "screenshots"
"""Screenshots for a person to look at (ignored by git)."""
DOCS = REPO / "docs"
"""The README's pictures: replaced only with ``LOOPNB_UPDATE_SCREENSHOT=1``."""
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TOKEN = "test-token"
AA = 4.5
"""WCAG 2 AA: the least contrast ratio of body text against its background."""
SETTINGS = {
    # without autoStart a "Select Kernel" dialog can block Run All; the default windowing
    # ("contentVisibility") skips laying out cells off screen, whose text then has no box to measure
    "notebook-extension/tracker": {"autoStartDefaultKernel": True, "windowingMode": "none"},
    "apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
}
"""User settings of ``@jupyterlab/*`` plugins, for JupyterLab and Notebook 7 (built on the same ones)."""


def unavailable(reason: str) -> None:
    """Skip, or fail when ``LOOPNB_REQUIRE_BROWSER`` is set (CI: a broken install must not pass)."""
    if os.environ.get("LOOPNB_REQUIRE_BROWSER"):
        pytest.fail(f"LOOPNB_REQUIRE_BROWSER is set but {reason}")
    pytest.skip(reason)


def require(program: str, extra: str = "the browser extra") -> pathlib.Path:
    """The venv's ``program`` (voila, jupyter-lab), or ``unavailable``."""
    path = BIN / program
    if not path.exists():
        unavailable(f"{program} is not installed ({extra})")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def server(cmd: Sequence[object], ready_url: str, log: pathlib.Path) -> Iterator[None]:
    """Run ``cmd`` until ``ready_url`` answers (any HTTP status); end it and its kernels after."""
    with open(log, "w") as out:
        # its own session, so that the server and every kernel it started can be ended together
        proc = subprocess.Popen(
            [str(c) for c in cmd], stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            deadline = time.time() + 60
            while True:
                assert proc.poll() is None, log.read_text()
                try:
                    urllib.request.urlopen(ready_url, timeout=1).close()
                    break
                except urllib.error.HTTPError:
                    break  # any HTTP status means it is serving
                except OSError:
                    assert time.time() < deadline, f"server did not start: {log.read_text()[-2000:]}"
                    time.sleep(0.25)
            yield
        finally:
            stop_group(proc)


def stop_group(proc: subprocess.Popen[bytes]) -> None:
    """End the server and its kernels: politely, then for good."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=15)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=15)


def user_setting(settings_dir: pathlib.Path, name: str, value: dict[str, object]) -> None:
    """Write the user setting of ``@jupyterlab/{name}`` (read by pages opened from now on)."""
    path = settings_dir / "@jupyterlab" / f"{name}.jupyterlab-settings"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value))


def offline(page) -> list[str]:
    """Abort every request that is not to 127.0.0.1; returns the (growing) list of those refused."""
    refused: list[str] = []

    def route(r):
        if re.match(r"^https?://127\.0\.0\.1[:/]", r.request.url):
            r.continue_()
        else:
            refused.append(r.request.url)
            r.abort()

    page.route(re.compile(r"^https?://"), route)
    return refused


def assert_inert(page, title: str) -> None:
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.title() == title


def scroll_to(locator) -> None:
    """Scroll an element into view without waiting for it to be "stable": on a page whose live
    views keep redrawing, playwright's own scrolling can wait for that in vain on a busy machine."""
    locator.evaluate("element => element.scrollIntoView({block: 'start'})")


def shoot(page, locator, path: pathlib.Path) -> pathlib.Path:
    """A screenshot of one view's box (a page whose widgets keep updating is never "stable",
    which an element screenshot would wait for)."""
    scroll_to(locator)
    box = locator.bounding_box()
    assert box is not None
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path), clip=box, full_page=True, timeout=60_000)
    return path


def write_notebook(path: pathlib.Path, cells: Sequence[str]) -> pathlib.Path:
    """A notebook of code ``cells`` (``{repo}`` in a cell is this checkout), Python 3 kernel."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c.format(repo=str(REPO))) for c in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


DEMO = "engine, task = S.demo()\ndemo = NotebookRunner(engine)\ndemo.run(task);"
"""A cell: the demo run (8 turns; its last a final reply, "the model said")."""
IMPORTS = (
    "import sys\nsys.path.insert(0, {repo!r})\n"
    "from loopnb.notebook import NotebookRunner\nfrom tests.notebook import scenarios as S"
)
"""The first cell of every served notebook: this checkout's loopnb, the test scenarios."""

CONTRAST_JS = """
(elements) => {
  // Any CSS colour as [r, g, b, a] (0-255, alpha 0-1), by letting a canvas parse and paint it.
  const canvas = document.createElement("canvas");
  canvas.width = canvas.height = 1;
  const ctx = canvas.getContext("2d", { willReadFrequently: true });
  const rgba = (css) => {
    ctx.clearRect(0, 0, 1, 1);
    ctx.fillStyle = "#000";
    ctx.fillStyle = css;
    ctx.fillRect(0, 0, 1, 1);
    const [r, g, b, a] = ctx.getImageData(0, 0, 1, 1).data;
    return [r, g, b, a / 255];
  };
  const over = (top, below) => {  // top composited over an opaque colour
    const a = top[3];
    return [0, 1, 2].map((i) => top[i] * a + below[i] * (1 - a)).concat(1);
  };
  // The colour behind an element: its own and its ancestors' backgrounds, composited from the
  // page (white, the canvas's default) up.
  const behind = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = rgba(getComputedStyle(e).backgroundColor);
      if (c[3] > 0) layers.push(c);
      if (c[3] >= 1) break;
    }
    return layers.reverse().reduce((below, top) => over(top, below), [255, 255, 255, 1]);
  };
  const luminance = ([r, g, b]) => {
    const lin = (v) => { v /= 255; return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
  };
  const own = (el) => Array.from(el.childNodes)
    .filter((n) => n.nodeType === Node.TEXT_NODE).map((n) => n.textContent).join("").trim();
  const shown = elements.filter((el) => !el.closest("svg") && el.getClientRects().length > 0 && own(el));
  return shown.map((el) => {
    const bg = behind(el);
    const fg = over(rgba(getComputedStyle(el).color), bg);
    const [hi, lo] = [luminance(fg), luminance(bg)].sort((x, y) => y - x);
    return {
      text: own(el).slice(0, 60), tag: el.tagName.toLowerCase(), cls: el.className.baseVal ?? el.className,
      color: getComputedStyle(el).color, background: `rgb(${bg.slice(0, 3).map(Math.round).join(", ")})`,
      ratio: (hi + 0.05) / (lo + 0.05),
    };
  });
}
"""
"""Page JS (``locator.evaluate_all``): for each element given that shows text of its own (SVG
aside), that text, its colour, the colour behind it (the backgrounds of it and its
ancestors, composited) and the WCAG 2 contrast ratio of the two (1 to 21; AA asks 4.5 of body text)."""


def measure(view) -> list[dict[str, object]]:
    """The contrast of every text in the view's status line and inspector (``CONTRAST_JS``)."""
    scroll_to(view)
    return view.locator(".loopnb-status *, .loopnb-inspector, .loopnb-inspector *").evaluate_all(CONTRAST_JS)


def faint(measured: list[dict[str, object]]) -> list[str]:
    """The texts of ``measured`` below ``AA``, one line each (ratio, text, colours)."""
    return [
        f"  {m['ratio']:.2f}:1  {m['text']!r} ({m['tag']}, {m['color']} on {m['background']})"
        for m in measured
        if float(m["ratio"]) < AA  # type: ignore[arg-type]
    ]


FITS_JS = """
(view) => {
  // where the board's drawing ends on screen: each box, cut at the nearest box between it and
  // the board that clips or scrolls it sideways, against the board's pane and the inspector
  const board = view.querySelector(".loopnb-board");
  const pane = board.closest(".widget-html") || board.parentElement;
  const shown = (e) => {
    let right = Math.max(...[...e.getClientRects()].map((r) => r.right), -Infinity);
    for (let a = e.parentElement; a && board.contains(a); a = a.parentElement) {
      const clips = getComputedStyle(a).overflowX !== "visible";
      if (clips) right = Math.min(right, a.getBoundingClientRect().right);
    }
    return right;
  };
  return {
    drawn: Math.max(...[board, ...board.querySelectorAll("*")].map(shown)),
    pane: pane.getBoundingClientRect().right,
    inspector: view.querySelector(".loopnb-inspector").getBoundingClientRect().left,
    // how far the board's table would have to be scrolled sideways to be read whole
    scroll: Math.max(0, ...[...board.querySelectorAll("div")].map((d) => d.scrollWidth - d.clientWidth)),
  };
}
"""
"""Page JS (``locator.evaluate``): where the breaker board's drawing ends (what a scroll box
hides aside), where its pane ends and where the inspector begins."""


def board_overrun(view) -> tuple[float, dict[str, float]]:
    """How many px the breaker board draws past its pane or over the inspector (<= 0: it fits),
    and ``FITS_JS``'s measures."""
    fits = view.evaluate(FITS_JS)
    return fits["drawn"] - min(fits["pane"], fits["inspector"]), fits
