"""The concept pages against what they describe: the specification's tables, the code, pyproject.

The principle page has the spec's tables as tables, and its map of where each hard error is born
names every place under ``loopnb/engine`` that makes a ``LoopError``, and only functions that
exist and make it (or call one that does). The other-frameworks page states the versions ``pyproject.toml``
declares.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import tomllib
from collections.abc import Iterator

from tests.docs._site import REPO, built_site, read, table

ENGINE = REPO / "loopnb" / "engine"
SITE = re.compile(r"([\w/]+\.py): ([\w.]+)")
"""A raise site as the principle page names it: ``_state.py: RunState.checkpoint``."""


def loop_errors() -> list[str]:
    """The six hard errors: every subclass of ``LoopError`` that ``loopnb`` exports."""
    import loopnb

    return sorted(
        name
        for name in loopnb.__all__
        if isinstance(value := getattr(loopnb, name), type)
        and issubclass(value, loopnb.LoopError)
        and value is not loopnb.LoopError
    )


def raise_sites() -> Iterator[tuple[str, str, str]]:
    """(file under loopnb/engine, qualified function, error) for each place the engine makes a LoopError."""
    hard = set(loop_errors())
    for path in sorted(ENGINE.rglob("*.py")):
        if path.name != "_errors.py":  # where they are defined, not made
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for function, error in _made(tree, [], hard):
                yield path.relative_to(ENGINE).as_posix(), function, error


def _made(node: ast.AST, scope: list[str], hard: set[str]) -> Iterator[tuple[str, str]]:
    """(qualified function, error) for each call of a class in ``hard`` under ``node``."""
    for child in ast.iter_child_nodes(node):
        inner = scope
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            inner = [*scope, child.name]
        elif isinstance(child, ast.Call) and isinstance(child.func, ast.Name) and child.func.id in hard:
            yield ".".join(scope), child.func.id
        yield from _made(child, inner, hard)


def test_the_principle_page_has_the_specs_tables_as_tables(site):
    """The specification's tables are tables on the site: the two channels side by side, every
    failure with its channel, and where each hard error is born."""
    from loopnb.engine._errors import HARD_PRODUCERS, SOFT_PRODUCERS

    page = read(site / "principle.html")
    sides = table(page, ["", "Soft error", "Hard error"])
    assert [row[0] for row in sides] == [
        "Shape",
        "Who sees it",
        "The run",
        "The transcript",
        "In a recording",
        "Example",
    ]
    channels = table(page, ["failure", "channel", "what the model reads", "producer", "why this side"])
    assert sorted(row[3] for row in channels) == sorted(SOFT_PRODUCERS + HARD_PRODUCERS)
    assert all(row[1] == ("soft" if row[3] in SOFT_PRODUCERS else "hard") for row in channels)
    born = table(page, ["LoopError", "what gives birth to it (the spec)", "where loopnb raises it"])
    assert sorted({row[0] for row in born}) == loop_errors()
    contexts = [row for row in born if row[0] == "ContextExceeded"]
    assert any("no-progress guard inside the compaction feed" in row[1] for row in contexts)
    turns = [row for row in born if "max_turns" in row[1]]
    assert [row[0] for row in turns] == ["LoopDetected"] and "loopnb's addition" in turns[0][1]


def test_where_each_hard_error_is_born_is_the_code(site):
    """Every place the engine makes a LoopError is on the map under that error, and every function
    the map names exists and makes that error or calls one the map names for it."""
    born = table(
        read(site / "principle.html"),
        ["LoopError", "what gives birth to it (the spec)", "where loopnb raises it"],
    )
    named = {(file, function, row[0]) for row in born for file, function in SITE.findall(row[2])}
    sites = set(raise_sites())
    assert len(sites) >= 6
    assert sites - named == set(), "made there, not on the principle page's map"
    for file, function, error in sorted(named):
        # it makes the error, or calls a function the map names for it (FallbackChain.ask raises
        # what FallbackChain._exhausted builds)
        source = inspect.getsource(_function(file, function))
        callees = {f.rsplit(".", 1)[-1] + "(" for _, f, e in named if e == error and f != function}
        assert error in source or any(c in source for c in callees), f"{file}: {function} and {error}"


def _function(file: str, qualified: str) -> object:
    """The function ``qualified`` (``Class.method``) of the engine's module in ``file``."""
    target: object = importlib.import_module("loopnb.engine." + file.removesuffix(".py").replace("/", "."))
    for part in qualified.split("."):
        target = getattr(target, part)
    return target


def test_the_other_frameworks_versions_are_those_pyproject_declares(site):
    """Each reader's "versions" cell names the lowest version the ``test`` extra installs."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    lowest = dict(
        re.fullmatch(r"([\w-]+)(?:\[[\w,]+\])?>=([\w.]+)", pin).groups()  # type: ignore[union-attr]
        for pin in project["optional-dependencies"]["test"]
    )
    rows = table(
        read(site / "other-frameworks.html"),
        ["format", "the framework", "what loopnb reads", "in memory", "versions"],
    )
    assert sorted(row[0] for row in rows) == sorted(foreign_formats())
    for row in rows:
        stated = re.findall(r"([\w-]+) ([\w.]+) and later", row[4])
        assert stated, f"{row[0]}: no version stated"
        assert all(lowest.get(package) == version for package, version in stated), (row[0], stated)


def foreign_formats() -> list[str]:
    """The readers of other frameworks: every built-in format but loopnb's own."""
    from loopnb.fileformats import formats

    return [f.name for f in formats() if f.name not in ("jsonl", "parquet")]


def test_the_faults_pages_example_runs_and_shows_the_injected_turns():
    """The faults page's Python block, run as written: two injected turns, then the real tool."""
    page = (REPO / "docs" / "faults.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"```python\n(.*?)```", page, flags=re.S)
    namespace: dict[str, object] = {}
    exec(compile(block, "docs/faults.md", "exec"), namespace)
    turns = namespace["rec"].turns  # type: ignore[attr-defined]
    assert turns["injected"].tolist()[:2] == ['error("disk busy").first(2)'] * 2
    assert turns["channel"].tolist() == ["soft", "soft", "ok", "ok"]


def test_the_frameworks_table_is_the_readmes_included_once():
    """The other-frameworks page shows README's table of the frameworks read (included, not copied),
    a row for each, and every framework lane of CI is one of them."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    start, end = "<!-- --8<-- [start:frameworks] -->", "<!-- --8<-- [end:frameworks] -->"
    section = readme[readme.index(start) : readme.index(end)]
    written = [line.split("|")[1].strip() for line in section.splitlines() if line.startswith("| ")]
    header = ["framework", "tested with", "path", "what its traces cannot say"]
    assert written[0] == header[0] and len(written) >= 11
    rows = table(read(built_site() / "other-frameworks.html"), header)
    assert [row[0] for row in rows] == written[1:]
    page = (REPO / "docs" / "other-frameworks.md").read_text(encoding="utf-8")
    assert "| framework | tested with |" not in page  # written once, in README.md
    lanes = (REPO / ".ci" / "frameworks.txt").read_text(encoding="utf-8").splitlines()
    names = {line.split("\t")[0] for line in lanes if line and not line.startswith("#")}
    shown = " ".join(written).lower().replace(" ", "")
    assert all(name.split("-")[0] in shown for name in names), (names, written)
