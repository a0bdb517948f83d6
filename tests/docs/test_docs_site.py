"""The documentation site as built by ``mkdocs build --strict``: the reference, the notebooks, offline.

The reference is checked against the ``__all__`` lists themselves: every name of every public
package is in its package's table, in order, linked to one entry under the path a user imports it
by (``loopnb.Retry``, ``loopnb.record.Column``), with a docstring. The site fetches nothing from
another host as a page opens (no web font, no CDN script), and its search index leads to the
reference. The notebooks are pages with the outputs they were committed with, never executed.
"""

from __future__ import annotations

import html
import importlib
import importlib.util
import json
import pathlib
import re

import pytest

from tests.docs._site import REPO, read, require_docs_extra
from tests.test_public_api import PACKAGES

DOCUMENTED = [p for p in PACKAGES if importlib.import_module(p).__all__]
"""The public packages that export a name (``loopnb.foreign`` and ``loopnb.integrations`` export none)."""
REMOTE = re.compile(r"^(?:[a-z][a-z0-9+.-]*:)?//", re.I)
"""A URL that leaves the site: with a scheme and a host, or protocol-relative (``data:`` stays)."""
CSS_REMOTE = re.compile(r"(?:url\(\s*['\"]?|@import\s+['\"])\s*(?:[a-z][a-z0-9+.-]*:)?//", re.I)


def public_path(package: str, name: str) -> str:
    """Where a name is documented: ``loopnb.X`` for a name ``loopnb`` exports, else ``package.X``."""
    return f"loopnb.{name}" if name in importlib.import_module("loopnb").__all__ else f"{package}.{name}"


def names_table(site: pathlib.Path, package: str) -> list[list[str]]:
    """The rows (name, what it is[, documented on]) of ``package``'s reference page."""
    page = read(site / "reference" / f"{package}.html")
    tables = [t for t in page.tables if t and t[0][:2] == ["name", "what it is"]]
    assert len(tables) == 1, f"{package}'s page has {len(tables)} tables of its names"
    return tables[0][1:]


def reference_ids(site: pathlib.Path) -> list[str]:
    return [i for path in sorted((site / "reference").glob("*.html")) for i in read(path).ids]


def test_every_public_package_that_exports_a_name_has_a_reference_page(site):
    pages = sorted(p.stem for p in (site / "reference").glob("*.html"))
    assert pages == sorted(DOCUMENTED)
    for package in DOCUMENTED:
        assert read(site / "reference" / f"{package}.html").h1 == package


@pytest.mark.parametrize("package", DOCUMENTED)
def test_every_name_of_the_packages_all_is_on_its_page_in_order(site, package):
    """A name added to an ``__all__`` and missing from its page fails here."""
    names = importlib.import_module(package).__all__
    rows = names_table(site, package)
    assert [row[0] for row in rows] == names
    page = read(site / "reference" / f"{package}.html")
    for name in names:
        target = public_path(package, name)
        assert any(href.endswith(f"#{target}") for href in page.hrefs), f"{package}: no link to {target}"


@pytest.mark.parametrize("package", DOCUMENTED)
def test_every_name_has_a_docstring_on_the_page(site, package):
    """The table's "what it is" is the first line of the entry's docstring: empty, it has none."""
    undocumented = [row[0] for row in names_table(site, package) if not row[1]]
    assert undocumented == [], f"{package}: no docstring for {undocumented}"


def test_every_name_is_documented_once_under_its_public_path(site):
    ids = reference_ids(site)
    for package in DOCUMENTED:
        for name in importlib.import_module(package).__all__:
            assert ids.count(public_path(package, name)) == 1, public_path(package, name)
    private = sorted({i for i in ids if "._" in i.replace(".__", ".")})
    assert private == [], "the reference names private modules"


def test_the_site_loads_nothing_from_another_host(site):
    """No web font, script, stylesheet or image from the network: it reads offline."""
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 20
    remote = []
    for path in pages:
        page = read(path)
        remote += [f"{path.relative_to(site)}: <{tag}> {url}" for tag, url in page.loads if REMOTE.match(url)]
        remote += [f"{path.relative_to(site)}: style {s[:80]}" for s in page.styles if CSS_REMOTE.search(s)]
    for path in sorted(site.rglob("*.css")):
        remote += [
            f"{path.relative_to(site)}: {m}" for m in CSS_REMOTE.findall(path.read_text(encoding="utf-8"))
        ]
    assert remote == []


def test_search_leads_to_the_reference_entry(site):
    index = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))
    locations = [doc["location"] for doc in index["docs"]]
    assert "reference/loopnb.engine.html#loopnb.ToolRecoveryExhausted" in locations
    assert "principle.html" in locations
    # a dotted title is words: a name searched for matches its entry's title, not only its text
    words = re.split(index["config"]["separator"], "loopnb.ToolRecoveryExhausted(attempts=6)")
    assert "ToolRecoveryExhausted" in words and "loopnb" in words


def _title(notebook: dict[str, object]) -> str:
    first = next(c for c in notebook["cells"] if c["cell_type"] == "markdown")  # type: ignore[index, union-attr]
    return "".join(first["source"]).splitlines()[0].removeprefix("# ").strip()


@pytest.mark.parametrize("path", sorted((REPO / "notebooks").glob("*.ipynb")), ids=lambda p: p.stem)
def test_every_notebook_is_a_page_and_a_download(site, path):
    notebook = json.loads(path.read_text(encoding="utf-8"))
    built = site / "notebooks" / f"{path.stem}.html"
    assert read(built).h1 == _title(notebook)
    code = [c for c in notebook["cells"] if c["cell_type"] == "code" and "".join(c["source"]).strip()]
    assert built.read_text(encoding="utf-8").count('class="language-python highlight"') >= len(code)
    assert (site / "notebooks" / path.name).read_bytes() == path.read_bytes()
    stored = any(c.get("outputs") for c in notebook["cells"])  # type: ignore[union-attr]
    figures = sum(
        "application/vnd.plotly.v1+json" in out.get("data", {})
        for c in notebook["cells"]  # type: ignore[union-attr]
        for out in c.get("outputs", [])
    )
    assert built.read_text(encoding="utf-8").count('class="nb-output nb-plotly"') == figures
    if figures:
        assert (site / "javascripts" / "plotly.min.js").stat().st_size > 1_000_000  # from this site
    says = "It is saved without its outputs" in built.read_text(encoding="utf-8")
    assert says is not stored, "the page says whether the outputs it shows are the notebook's"


def _notebooks_hook():
    require_docs_extra()  # the hook imports mkdocs
    spec = importlib.util.spec_from_file_location("notebooks_hook", REPO / "docs" / "_hooks" / "notebooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_notebooks_outputs_show_as_a_static_page_shows_them():
    output = _notebooks_hook().output
    assert (
        output({"output_type": "stream", "name": "stdout", "text": ["soft\n", "ok\n"]})
        == "```text\nsoft\nok\n```"
    )
    table = {"output_type": "execute_result", "data": {"text/html": "<table><tr><td>soft</td></tr></table>"}}
    assert (
        output(table) == '<div class="nb-output" markdown="0">\n<table><tr><td>soft</td></tr></table>\n</div>'
    )
    figure = {
        "output_type": "display_data",
        "data": {
            "text/html": '<script src="https://cdn.example/plotly.js"></script>',
            "image/png": "iVBOR\n",
        },
    }
    assert output(figure) == '<img class="nb-output" alt="a figure" src="data:image/png;base64,iVBOR">'
    widget = {"output_type": "display_data", "data": {"application/vnd.jupyter.widget-view+json": {}}}
    assert "live widget" in output(widget)
    figure = {"data": [{"type": "bar", "name": "<b>x</b>", "y": [1]}], "layout": {"title": "it's"}}
    drawn = output({"output_type": "display_data", "data": {"application/vnd.plotly.v1+json": figure}})
    found = re.fullmatch(
        r'<div class="nb-output nb-plotly" markdown="0" data-figure="([^"<>]*)"></div>', drawn
    )
    assert found is not None and json.loads(html.unescape(found[1])) == figure
    error = {
        "output_type": "error",
        "ename": "LoopDetected",
        "evalue": "",
        "traceback": ["\x1b[31mLoopDetected\x1b[0m"],
    }
    assert output(error) == "```text\nLoopDetected\n```"
    assert output({"output_type": "stream", "text": "a ``` fence"}) == "````text\na ``` fence\n````"


def test_the_landing_page_leads_to_every_concept_page_and_the_reference(site):
    page = read(site / "index.html")
    concepts = [
        p.name.replace(".md", ".html") for p in sorted((REPO / "docs").glob("*.md")) if p.name != "index.md"
    ]
    assert concepts
    for target in [*concepts, "notebooks/01_soft_and_hard.html", "reference/loopnb.html"]:
        assert target in page.hrefs, f"the landing page does not link {target}"
