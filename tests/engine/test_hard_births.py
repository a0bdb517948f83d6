"""Where each hard error is born: the map in ``LoopError``'s docstring (and the README) is the code's."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

import loopnb.engine
from loopnb import LoopError

ENGINE = Path(loopnb.engine.__file__).resolve().parent
README = ENGINE.parents[1] / "README.md"
ROW = re.compile(r"\s*(?:(?P<error>[A-Z]\w+)\s+)?(?P<place>\w[\w.]*\.\w+): ")


def _map() -> list[tuple[str, str]]:
    """The docstring's rows: ``(error class name, module.function under loopnb.engine)``."""
    doc = inspect.getdoc(LoopError) or ""
    block = doc.partition("::")[2].partition("No tool-level")[0]
    rows, error = [], ""
    for line in filter(str.strip, block.splitlines()):
        match = ROW.match(line)
        assert match, f"not a row of the map: {line!r}"
        error = match["error"] or error
        rows.append((error, match["place"]))
    return rows


def _resolve(place: str) -> object:
    """The function ``place`` names: the longest importable module, then attributes."""
    parts = place.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            target: object = importlib.import_module("loopnb.engine." + ".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            target = getattr(target, name)
        return target
    raise AssertionError(f"no module under loopnb.engine for {place}")


def _makers() -> set[tuple[str, str]]:
    """Every ``(error, module.function)`` in the engine whose code constructs a ``LoopError`` variant."""
    names = {cls.__name__ for cls in LoopError.__subclasses__()}
    found = set()
    for path in ENGINE.rglob("*.py"):
        module = ".".join(path.relative_to(ENGINE).with_suffix("").parts)
        tree = ast.parse(path.read_text(encoding="utf-8"))

        def visit(node: ast.AST, scope: tuple[str, ...], module: str = module) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                    visit(child, (*scope, child.name))
                    continue
                if (
                    isinstance(child, ast.Call)
                    and isinstance(child.func, ast.Name)
                    and child.func.id in names
                ):
                    found.add((child.func.id, ".".join((module, *scope))))
                visit(child, scope)

        visit(tree, ())
    return found


def test_the_map_names_every_variant_and_every_place_exists():
    rows = _map()
    assert {error for error, _ in rows} == {cls.__name__ for cls in LoopError.__subclasses__()}
    for _, place in rows:
        assert callable(_resolve(place)), place


def test_each_place_makes_its_error_or_calls_a_place_of_the_map_that_does():
    rows = _map()
    for error, place in rows:
        source = inspect.getsource(_resolve(place))  # type: ignore[arg-type]
        others = [p.rsplit(".", 1)[-1] for e, p in rows if e == error and p != place]
        assert f"{error}(" in source or any(f".{name}(" in source for name in others), (error, place)


def test_every_place_the_engine_makes_a_hard_error_is_on_the_map():
    assert _makers() <= set(_map())


def test_max_turns_is_said_to_be_loopnbs_addition_to_the_spec():
    doc = inspect.getdoc(LoopError) or ""
    assert re.search(r"max_turns \(loopnb's, not in the spec\)", doc)


def test_the_readme_shows_the_same_map():
    readme = README.read_text(encoding="utf-8")
    section = readme.partition("### Where each hard error is born")[2].partition("\n## ")[0]
    assert section
    for error, place in _map():
        module, function = _split(place)
        assert f"`{error}`" in section
        assert f"`{module.replace('.', '/')}.py`" in section, place
        assert f"`{function}`" in section, place


def _split(place: str) -> tuple[str, str]:
    """``models._fallback.FallbackChain.ask`` -> (``models._fallback``, ``FallbackChain.ask``)."""
    parts = place.split(".")
    cut = next(i for i in range(len(parts)) if (ENGINE / Path(*parts[: i + 1])).with_suffix(".py").is_file())
    return ".".join(parts[: cut + 1]), ".".join(parts[cut + 1 :])
