"""Fixtures of the browser tests: one headless Chromium for this package, a fresh context per test.

Playwright's sync API keeps an event loop running on the main thread while it is open, so the
browser is closed when the last browser test is done (package scope): the rest of the suite
(``asyncio.run`` in the engine's tests) must find no loop running.

Without chromium or playwright these tests skip, unless ``LOOPNB_REQUIRE_BROWSER`` is set (CI):
then they fail, so that a broken install cannot pass silently.
"""

from __future__ import annotations

import os

import pytest

from tests.browser._serve import ARGS, CHROMIUM, unavailable


@pytest.fixture(scope="package")
def chromium():
    """The browser, started once: a test gets its own context (cookies, storage) from it."""
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
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(chromium):
    """A page in a fresh context; ``page.errors`` collects the page's uncaught exceptions."""
    context = chromium.new_context(viewport={"width": 1280, "height": 1100})
    page = context.new_page()
    page.set_default_timeout(60_000)
    page.errors = []  # type: ignore[attr-defined]
    page.on("pageerror", lambda exc: page.errors.append(str(exc)))  # type: ignore[attr-defined]
    yield page
    context.close()
