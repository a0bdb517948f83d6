"""The live view in a real browser: chromium driven by playwright, offline (the report: its own file).

Three things are checked where only a browser can check them: the panes render (inline SVG, the
timeline's marks, the breaker states as text), hostile HTML in a tool's output stays inert text
(it would set ``window.__pwned`` and the page title), and a button click reaches a running run.
Screenshots go to the test's tmp dir; with ``LOOPNB_UPDATE_SCREENSHOT=1`` the live view's also
replaces ``docs/live_view.png`` (the README's picture), so that a plain test run leaves the
checkout as it was.

Without chromium or playwright these tests skip, unless ``LOOPNB_REQUIRE_BROWSER`` is set (CI):
then they fail, so that a broken install cannot pass silently.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
REPO = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(sys.executable).parent
DOCS_SHOT = REPO / "docs" / "live_view.png"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def unavailable(reason: str) -> None:
    if os.environ.get("LOOPNB_REQUIRE_BROWSER"):
        pytest.fail(f"LOOPNB_REQUIRE_BROWSER is set but {reason}")
    pytest.skip(reason)


@pytest.fixture
def page(tmp_path):
    if not os.path.exists(CHROMIUM):
        unavailable(f"{CHROMIUM} is missing (apt-get install chromium)")
    try:
        from playwright.sync_api import expect, sync_playwright
    except ImportError:
        unavailable("playwright is not installed (the browser extra)")
    # A loaded CI machine can take longer than playwright's default 5 s to apply a widget update;
    # a check that times out here should mean "never", not "slow".
    expect.set_options(timeout=30_000)
    with sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            str(tmp_path / "profile"),
            executable_path=CHROMIUM,
            headless=True,
            args=ARGS,
            viewport={"width": 1280, "height": 1100},
        )
        page = ctx.new_page()
        page.set_default_timeout(60_000)
        page.errors = []  # type: ignore[attr-defined]
        page.on("pageerror", lambda exc: page.errors.append(str(exc)))  # type: ignore[attr-defined]
        yield page
        ctx.close()


def offline(page) -> list[str]:
    """Abort every http(s) request that is not to 127.0.0.1; returns the list of those refused."""
    refused: list[str] = []

    def route(r):
        if r.request.url.startswith(("http://127.0.0.1", "ws://127.0.0.1")):
            r.continue_()
        else:
            refused.append(r.request.url)
            r.abort()

    page.route(re.compile(r"^https?://"), route)
    return refused


def assert_inert(page, title: str) -> None:
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.title() == title


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def server(cmd, ready_url, log):
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
                    assert time.time() < deadline, "server did not start"
                    time.sleep(0.25)
            yield
        finally:
            stop_group(proc)


def stop_group(proc: subprocess.Popen) -> None:
    """End the server and its kernels: politely, then for good."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=15)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=15)


def scroll_to(locator) -> None:
    """Scroll an element into view without waiting for it to be "stable": on a page whose live
    views keep redrawing, playwright's own scrolling can wait for that in vain on a busy machine."""
    locator.evaluate("element => element.scrollIntoView({block: 'start'})")


def shoot(page, locator, path: pathlib.Path) -> None:
    """A screenshot of one view's box (a page whose widgets keep updating is never "stable",
    which an element screenshot would wait for)."""
    scroll_to(locator)
    box = locator.bounding_box()
    assert box is not None
    page.screenshot(path=str(path), clip=box, full_page=True, timeout=60_000)


NOTEBOOK_CELLS = [
    "import sys\nsys.path.insert(0, {repo!r})\n"
    "from loopnb.notebook import NotebookRunner\nfrom tests.notebook import scenarios as S",
    "engine, task = S.demo()\ndemo = NotebookRunner(engine)\ndemo.run(task);",
    "engine, task = S.payload()\nhostile = NotebookRunner(engine)\nhostile.run(task);",
    "import time\nengine, task = S.endless(delay=0.05)\nforever = NotebookRunner(engine)\n"
    "handle = forever.start(task)\ntime.sleep(0.3)",
    # a probe: does the page answer the view's frames (so that redraws are paced by the browser)?
    "import ipywidgets as W\nprobe, answer = W.Button(description='probe'), W.HTML()\n"
    "def show(_):\n    page = forever.view._page\n"
    "    answer.value = f'page answered: {{page.drawn > 0}}'\n"
    "probe.on_click(show)\nW.HBox([probe, answer])",
]


def write_notebook(path: pathlib.Path) -> None:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c.format(repo=str(REPO))) for c in NOTEBOOK_CELLS]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


# This test used to time out about one run in three: the endless run's view sent up to 10 frames a
# second, each with the whole growing timeline, faster than software-rendered Chromium on two cores
# could draw them; the queue grew until the page stopped answering the server's pings. The view now
# waits for the page to answer each frame (the probe above checks that it does). One rerun, with
# everything started afresh, stays as a guard against the machine itself stalling.
@pytest.mark.flaky(reruns=1)
def test_live_view_in_voila(page, tmp_path):
    if not (BIN / "voila").exists():
        unavailable("voila is not installed (the browser extra)")
    from playwright.sync_api import expect

    write_notebook(tmp_path / "live.ipynb")
    port, token = free_port(), "test-token"
    cmd = [
        BIN / "voila",
        tmp_path / "live.ipynb",
        "--no-browser",
        "--Voila.ip=127.0.0.1",
        f"--port={port}",
        f"--token={token}",
    ]
    with server(cmd, f"http://127.0.0.1:{port}/voila/static/", tmp_path / "voila.log"):
        refused = offline(page)
        page.goto(f"http://127.0.0.1:{port}/?token={token}")
        views = page.locator(".loopnb-view")
        expect(views).to_have_count(3, timeout=90_000)
        demo, hostile, forever = views.nth(0), views.nth(1), views.nth(2)
        for view in (demo, hostile):
            expect(view.locator(".loopnb-status")).to_contain_text("finished", timeout=30_000)
            expect(view.locator("svg.loopnb-flow")).to_be_visible()

        # the demo: 8 marks (+1 ring on the selected turn), breakers as text, the gauge of turn 8
        expect(demo.locator(".loopnb-timeline .loopnb-mark")).to_have_count(8)
        expect(demo.locator('.loopnb-timeline .loopnb-selected[data-turn="8"]')).to_have_count(1)
        states = demo.locator(".loopnb-breaker-state").all_inner_texts()
        assert states == ["closed", "closed", "open", "open", "closed"]
        expect(demo.locator(".loopnb-board")).to_contain_text("20.0s of 20s")
        expect(demo.locator(".loopnb-gauge")).to_contain_text("turn 8 · recovery")  # a final reply:
        expect(demo.locator(".loopnb-gauge")).to_contain_text("no call dispatched this turn")
        scroll_to(demo)
        widths = (
            "Array.from(document.querySelectorAll('.loopnb-view svg.loopnb-flow'))"
            ".map(e => e.getBoundingClientRect().width)"
        )
        try:  # the flow scales to its pane once that is laid out
            page.wait_for_function(f"{widths}.every(w => w > 1000)", timeout=30_000)
        except Exception:
            print("plot widths:", page.evaluate(widths))
            raise
        shoot(page, demo, tmp_path / "voila_demo.png")
        if os.environ.get("LOOPNB_UPDATE_SCREENSHOT"):
            shutil.copy(tmp_path / "voila_demo.png", DOCS_SHOT)

        # the inspector shows the selected (last) turn; selecting other turns is covered by the
        # widget tests in tests/notebook (the slider selects; a mark's title names its turn)
        expect(demo.locator(".loopnb-inspector")).to_contain_text("turn 8")

        # hostile text stays text: in the status line, the inspector and the charts
        expect(hostile.locator(".loopnb-status")).to_contain_text("<img src=x onerror=")
        expect(hostile.locator(".loopnb-inspector")).to_contain_text("<script>window.__pwned=2")
        assert hostile.locator(".loopnb-inspector img, .loopnb-status img").count() == 0
        assert hostile.locator(".loopnb-svg img, .loopnb-svg script").count() == 0
        shoot(page, hostile, tmp_path / "voila_hostile.png")
        assert_inert(page, page.title())
        assert page.title() != "pwned"

        # a running background run: the page answers its frames, so the browser paces the redraws
        expect(forever.locator(".loopnb-status")).to_contain_text("running", timeout=30_000)
        page.get_by_role("button", name="probe").click()
        # (whether it is waited for right now depends on how fast it draws; that it answered does not)
        expect(page.get_by_text("page answered: True")).to_be_visible(timeout=30_000)

        # the Stop button reaches the run and it ends as Cancelled, visibly
        forever.get_by_role("button", name="Stop").click()
        expect(forever.locator(".loopnb-status")).to_contain_text("Cancelled", timeout=30_000)
        expect(forever.locator(".loopnb-status")).to_contain_text("stopped from the live view")
        shoot(page, forever, tmp_path / "voila_stopped.png")
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert all("127.0.0.1" not in url for url in refused)
        (tmp_path / "refused.json").write_text(json.dumps(refused))
