"""mkdocs hook: one API reference page per public package, written from its ``__all__`` at build time.

Every name of a package's ``__all__`` is listed on that package's page, so a name added to an
``__all__`` is on the site with nothing else to edit (``tests/docs`` checks the built pages against
the ``__all__`` lists). Each name is documented in full once, under the path a user imports it by
and its ``__module__`` reports (``loopnb.Retry``, ``loopnb.record.Column``), on the page of the
deepest public package that exports it: the layer that holds it. The other pages that export it
list it with a link there.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
TOP = "loopnb"
SECTION = "API reference"


@dataclass(frozen=True)
class Name:
    """One name of one package's ``__all__``."""

    package: str
    name: str
    path: str
    """The public path it is documented under: ``loopnb.X`` for a name ``loopnb`` exports."""
    documented_on: str
    """The package whose page documents it in full."""


def page_of(package: str) -> str:
    """The reference page of ``package``, relative to the docs folder."""
    return f"reference/{package}.md"


def public_packages() -> list[str]:
    """The public packages (no ``_`` in their path) whose ``__all__`` holds a name, ``loopnb`` first."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))  # this checkout's loopnb, installed or not
    found = []
    for init in sorted((ROOT / TOP).rglob("__init__.py")):
        parts = init.parent.relative_to(ROOT).parts
        if any(part.startswith("_") for part in parts):
            continue
        package = ".".join(parts)
        if importlib.import_module(package).__all__:
            found.append(package)
    return sorted(found, key=lambda p: (p != TOP, p))


def exported(packages: list[str]) -> dict[str, list[Name]]:
    """Each package's names, in ``__all__`` order, with where each is documented."""
    alls = {p: list(importlib.import_module(p).__all__) for p in packages}
    top = set(alls[TOP])
    names = {}
    for package, listed in alls.items():
        names[package] = []
        for name in listed:
            # a name loopnb exports is loopnb's wherever else it is exported; any other, its package's
            sharing = [p for p in packages if name in alls[p]] if name in top else [package]
            deepest = max(sharing, key=lambda p: (p.count("."), p != TOP, p))
            path = f"{TOP}.{name}" if name in top else f"{package}.{name}"
            names[package].append(Name(package, name, path, deepest))
    return names


def summaries(paths: list[str]) -> dict[str, str]:
    """The first line of each documented object's docstring, as griffe (and so the pages) reads it."""
    import griffe

    extensions = griffe.load_extensions(str(ROOT / "docs" / "_hooks" / "griffe_public.py"))
    loader = griffe.GriffeLoader(search_paths=[str(ROOT)], extensions=extensions)
    loader.load(TOP)
    loader.resolve_aliases(implicit=False, external=False)
    found = {}
    for path in paths:
        docstring = loader.modules_collection.get_member(path).docstring
        found[path] = docstring.value.strip().splitlines()[0] if docstring else ""
    return found


def page(package: str, names: list[Name], lines: dict[str, str]) -> str:
    """The markdown of ``package``'s page: its docstring, a table of its names, then those it documents."""
    here = [n for n in names if n.documented_on == package]
    elsewhere = len(here) < len(names)  # a third column says where
    rows = []
    for n in names:
        summary = lines[n.path].replace("|", "\\|")
        row = f"| [`{n.name}`][{n.path}] | {summary} |"
        if elsewhere:
            where = (
                ""
                if n.documented_on == package
                else f"[`{n.documented_on}`]({Path(page_of(n.documented_on)).name})"
            )
            row += f" {where} |"
        rows.append(row)
    parts = [
        "---",
        "search:",
        "  boost: 2  # a name searched for is looked up: its entry before the pages that use it",
        "---",
        "",
        f"# `{package}`",
        "",
        f"::: {package}",
        "    options:",
        "      show_root_heading: false",
        "      show_root_toc_entry: false",
        "      members: false",
        "",
        "## Every name it exports",
        "",
        _reading_note(package, here, names),
        "",
        "| name | what it is | documented on |" if elsewhere else "| name | what it is |",
        "| --- | --- | --- |" if elsewhere else "| --- | --- |",
        *rows,
        "",
    ]
    for n in here:
        parts += [f"::: {n.path}", ""]
    return "\n".join(parts)


def _reading_note(package: str, here: list[Name], names: list[Name]) -> str:
    """One sentence on how the page reads: where the names it lists are documented."""
    if len(here) == len(names):
        return f"Each is documented below, in `{package}`'s `__all__` order."
    if not here:
        return "Each is documented in the layer that holds it, linked in the last column."
    return "Those with no page named are documented below; the others in the layer that holds them."


_PAGES: dict[str, str] = {}


def _pages() -> dict[str, str]:
    """Every reference page's markdown by its path, built once per build."""
    if not _PAGES:
        packages = public_packages()
        names = exported(packages)
        lines = summaries(sorted({n.path for listed in names.values() for n in listed}))
        _PAGES.update({page_of(p): page(p, names[p], lines) for p in packages})
    return _PAGES


def on_config(config: MkDocsConfig, **kwargs: Any) -> MkDocsConfig:
    _PAGES.clear()  # `mkdocs serve` rebuilds after an edit: read the packages again
    nav = config.nav if config.nav is not None else []
    nav.append({SECTION: list(_pages())})
    config.nav = nav
    return config


@event_priority(50)  # before mkdocstrings and autorefs look at the files
def on_files(files: Files, config: MkDocsConfig, **kwargs: Any) -> Files:
    for path, markdown in _pages().items():
        files.append(File.generated(config, path, content=markdown))
    return files
