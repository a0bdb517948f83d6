"""The documentation site in a real browser: served on 127.0.0.1, every other host refused.

A newcomer's path: open the site, search for ``ToolRecoveryExhausted``, follow the hit to its
reference entry. The site is built by ``tests/docs`` (``mkdocs build --strict``; without the docs
extra this skips, or fails under ``LOOPNB_REQUIRE_DOCS``). Pictures of the pages go to
``build/screenshots/docs_*.png`` (ignored by git) for a person to look at.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import pathlib
import re
import threading
from collections.abc import Iterator

import pytest

from tests.browser._serve import SHOTS, offline
from tests.docs._site import built_site

pytestmark = pytest.mark.browser


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # a test's output is for failures
        pass


@contextlib.contextmanager
def serving(folder: pathlib.Path) -> Iterator[str]:
    """``folder`` over HTTP on 127.0.0.1 (a free port) while the block runs; its base URL."""
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Quiet, directory=str(folder))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def site_url() -> Iterator[str]:
    with serving(built_site()) as url:
        yield url


def test_search_finds_ToolRecoveryExhausted_and_leads_to_its_reference(page, site_url):
    from playwright.sync_api import expect

    refused = offline(page)
    page.goto(site_url + "index.html")
    expect(page.locator("article h1").first).to_contain_text("loopnb")
    search = page.locator("input.md-search__input")
    search.click()
    # typed key by key, as a person does: the search runs on a key's release (a value set at once
    # is only seen if it is there when the index finishes loading, which made the test a race)
    expect(page.locator(".md-search-result__meta")).to_have_text("Type to start searching")
    search.press_sequentially("ToolRecoveryExhausted")
    # the first hit on a section (a link with an anchor) is the name's entry, before the pages that use it
    hit = page.locator('.md-search-result__item > a[href*="#"]').first
    expect(hit).to_be_visible()
    expect(hit).to_have_attribute("href", re.compile(r"/reference/[^#]+#loopnb\.ToolRecoveryExhausted$"))
    expect(hit).to_contain_text("loopnb.ToolRecoveryExhausted")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "docs_search.png"))
    hit.click()
    # search.highlight adds the words searched for as a query (?h=...)
    page.wait_for_url(re.compile(r"/reference/loopnb\.engine\.html(\?[^#]*)?#loopnb\.ToolRecoveryExhausted$"))
    entry = page.locator("h2#loopnb\\.ToolRecoveryExhausted")
    expect(entry).to_contain_text("loopnb.ToolRecoveryExhausted")
    expect(entry).to_be_in_viewport()
    expect(page.locator("h2#loopnb\\.ToolRecoveryExhausted + .doc-signature")).to_contain_text("attempts")
    page.screenshot(path=str(SHOTS / "docs_reference.png"))
    assert refused == [], f"the site asked other hosts for {refused}"
    assert page.errors == []  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "path",
    ["index.html", "principle.html", "notebooks/01_soft_and_hard.html", "notebooks/05_writing_tools.html"],
)
def test_a_page_opens_with_nothing_from_another_host(page, site_url, path):
    from playwright.sync_api import expect

    refused = offline(page)
    page.goto(site_url + path)
    expect(page.locator("nav.md-nav--primary")).to_be_attached()
    expect(page.locator("article h1").first).to_be_visible()
    page.wait_for_load_state("networkidle")
    if path.startswith("notebooks/05"):  # its plotly figure, drawn by the plotly.js the site carries
        figure = page.locator(".nb-plotly").first
        expect(figure.locator("svg.main-svg").first).to_be_visible()
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"docs_{pathlib.PurePath(path).stem}.png"), full_page=True)
    assert refused == [], f"{path} asked other hosts for {refused}"
    assert page.errors == []  # type: ignore[attr-defined]
