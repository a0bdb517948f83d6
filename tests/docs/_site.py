"""The documentation site, built once per test session with ``mkdocs build --strict``.

Needs the ``docs`` extra (mkdocs, mkdocs-material, mkdocstrings). Without it the docs tests skip
saying so, unless ``LOOPNB_REQUIRE_DOCS`` is set (CI): then they fail, so that a broken install
cannot pass silently. ``pages`` reads a built page's ids, links, tables and loads.
"""

from __future__ import annotations

import atexit
import functools
import importlib.util
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
from html.parser import HTMLParser

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
NEEDED = {"mkdocs": "mkdocs", "material": "mkdocs-material", "mkdocstrings_handlers.python": "mkdocstrings"}


def unavailable(reason: str) -> None:
    """Skip, or fail when ``LOOPNB_REQUIRE_DOCS`` is set (CI: a broken install must not pass)."""
    if os.environ.get("LOOPNB_REQUIRE_DOCS"):
        pytest.fail(f"LOOPNB_REQUIRE_DOCS is set but {reason}")
    pytest.skip(reason)


def require_docs_extra() -> None:
    for module, package in NEEDED.items():
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:  # a parent package missing
            found = False
        if not found:
            unavailable(f"{package} is not installed (the docs extra: pip install -e '.[docs]')")


@functools.cache
def _build() -> pathlib.Path:
    site = pathlib.Path(tempfile.mkdtemp(prefix="loopnb-site-"))
    atexit.register(shutil.rmtree, site, ignore_errors=True)  # one build per session, removed after it
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--config-file",
            "mkdocs.yml",
            "--site-dir",
            site,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"
    return site


def built_site() -> pathlib.Path:
    """The folder of the site built from this checkout (built on the first call of the session)."""
    require_docs_extra()
    return _build()


class Page(HTMLParser):
    """What one built HTML page holds: element ids, link targets, what it loads, its tables' cells."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: list[str] = []
        self.hrefs: list[str] = []
        self.loads: list[tuple[str, str]] = []
        """(tag, URL) of everything the page fetches as it opens: scripts, styles, fonts, images, frames."""
        self.tables: list[list[list[str]]] = []
        """Each table's rows, each row's cells as text."""
        self.styles: list[str] = []
        """The text of its ``<style>`` elements and ``style`` attributes."""
        self.h1 = ""
        self._cell: list[str] | None = None
        self._in = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {k: v or "" for k, v in attrs}
        if "id" in found:
            self.ids.append(found["id"])
        if tag == "a" and "href" in found:
            self.hrefs.append(found["href"])
        if tag == "link" and "href" in found:
            self.loads.append((tag, found["href"]))
        for attr in ("src", "data", "poster"):
            if attr in found and tag != "a":
                self.loads.append((tag, found[attr]))
        if "style" in found:
            self.styles.append(found["style"])
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []
        if tag in ("h1", "style"):
            self._in = tag

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self.tables and self.tables[-1]:
            self.tables[-1][-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        if tag == self._in:
            self._in = ""

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        if self._in == "h1":
            self.h1 += data
        elif self._in == "style":
            self.styles.append(data)


def read(path: pathlib.Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    page.h1 = page.h1.replace("¶", "").strip()
    return page


def table(page: Page, header: list[str]) -> list[list[str]]:
    """The rows of the one table of ``page`` whose header row is ``header``."""
    found = [t[1:] for t in page.tables if t and t[0] == header]
    assert len(found) == 1, f"{len(found)} tables headed {header}"
    return found[0]
