"""The public face: what each package exports, and that nothing else is public.

Every package's ``__all__`` is importable, listed once and sorted, and holds every public name the
package has; the only public modules are the packages themselves, ``loopnb.cli`` and
``loopnb.__main__``. ``EXPECTED`` is the committed public API: a name added or removed anywhere
fails here until this list is changed with it. Every class and function exported reports a public
home as its ``__module__``: ``loopnb`` for a name ``loopnb`` exports (wherever else it is exported
too), else the package that exports it (``tests/test_public_homes.py``: what that home is good for).
"""

from __future__ import annotations

import ast
import importlib
import json
import pkgutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

import loopnb

ROOT = Path(loopnb.__file__).parent

PACKAGES = [
    "loopnb",
    "loopnb.analysis",
    "loopnb.cli",
    "loopnb.engine",
    "loopnb.engine.models",
    "loopnb.faults",
    "loopnb.fileformats",
    "loopnb.foreign",
    "loopnb.integrations",
    "loopnb.integrations.openai_agents",
    "loopnb.notebook",
    "loopnb.otel",
    "loopnb.record",
    "loopnb.scenarios",
]

PUBLIC_MODULES = {*PACKAGES, "loopnb.__main__", "loopnb.cli.__main__"}

ENGINE = [
    "EVENT_ADAPTER",
    "MAX_RECOVERY_ATTEMPTS",
    "MAX_RETRY_DELAY",
    "AnalyseAndCorrect",
    "AnthropicModel",
    "AskUser",
    "CancelToken",
    "Cancelled",
    "CircuitBreaker",
    "Clock",
    "ContextBudget",
    "ContextExceeded",
    "ConvergenceDetector",
    "Engine",
    "Fail",
    "Failure",
    "FakeClock",
    "FallbackChain",
    "FallbackExhausted",
    "FallibleModel",
    "FunctionModel",
    "HookContext",
    "LoopDetected",
    "LoopDetector",
    "LoopError",
    "LoopnbWarning",
    "Message",
    "Model",
    "ModelAuthError",
    "ModelContextOverflow",
    "ModelReply",
    "ModelUnavailable",
    "OpenAIChatModel",
    "RecoveryStrategy",
    "Retry",
    "RetryWithBackoff",
    "RunResult",
    "RunSteps",
    "SafetySignal",
    "SafetySystem",
    "SafetyWatch",
    "ScriptedModel",
    "Skip",
    "SystemClock",
    "Tool",
    "ToolCall",
    "ToolError",
    "ToolRecoveryExhausted",
    "ToolRegistry",
    "ToolResult",
    "ToolSpec",
    "Turn",
    "Usage",
    "UserInputRequired",
    "tool",
    "turns_of",
]

LAZY = {
    "loopnb.faults": ["inject"],
    "loopnb.record": [
        "EVENT_SCHEMA",
        "TURN_SCHEMA",
        "Recorder",
        "Recording",
        "RecordingError",
        "RecordingWarning",
        "Redactor",
    ],
    "loopnb.analysis": [
        "Audit",
        "Comparison",
        "audit",
        "compare",
        "flow_counts",
        "breaker_history",
        "recovery_attempts",
        "scripted_from",
        "what_if",
        "WhatIf",
    ],
    "loopnb.notebook": ["LiveView", "NotebookRunner", "ViewModel", "replay", "watch"],
    "loopnb.fileformats": [
        "Format",
        "formats",
        "from_inspect",
        "from_openai_agents",
        "from_otel",
        "from_pydantic_ai",
        "load",
        "load_many",
        "register_format",
    ],
    "loopnb._sweep": ["Sweep", "SweepConfig", "query", "sweep"],
}
"""``loopnb``'s names that load their layer on first use."""


def _order(name: str) -> tuple[bool, bool, str]:
    """Ruff's order for ``__all__`` (RUF022): CONSTANTS, then Classes, then everything else."""
    return (not name.isupper(), not name[0].isupper(), name)


EXPECTED = {
    "loopnb": sorted(
        [
            *ENGINE,
            *LAZY["loopnb.record"],
            *LAZY["loopnb.analysis"],
            *LAZY["loopnb.notebook"],
            *LAZY["loopnb.fileformats"],
            *LAZY["loopnb._sweep"],
            *LAZY["loopnb.faults"],
            "__version__",
        ],
        key=_order,
    ),
    "loopnb.otel": [
        "ATTEMPT",
        "BREAKER",
        "CEILING",
        "CHANNEL",
        "ERROR_TEXT",
        "PRODUCER",
        "SOFT_ERROR",
        "Exporter",
        "LiveSpans",
        "exporter_for",
        "http_provider",
    ],
    "loopnb.foreign": [],
    "loopnb.faults": [
        "KINDS",
        "Fault",
        "FaultSyntaxError",
        "InjectedModel",
        "InjectedTool",
        "Injection",
        "NoSuchTool",
        "Outcome",
        "Schedule",
        "crash",
        "empty",
        "error",
        "hang",
        "inject",
        "outcome",
        "parse",
        "register_target",
        "slow",
        "unavailable",
        "wrong",
    ],
    "loopnb.fileformats": [
        "REASONS",
        "Format",
        "formats",
        "from_inspect",
        "from_openai_agents",
        "from_otel",
        "from_pydantic_ai",
        "load",
        "load_many",
        "register_format",
    ],
    "loopnb.engine": ENGINE,
    "loopnb.integrations": [],
    "loopnb.integrations.openai_agents": ["JsonlProcessor"],
    "loopnb.engine.models": [
        "AnthropicModel",
        "FallbackChain",
        "FallibleModel",
        "FunctionModel",
        "Model",
        "ModelConfigError",
        "OpenAIChatModel",
        "ScriptedModel",
        "from_env",
        "model_from_spec",
        "to_anthropic_request",
        "to_openai_messages",
    ],
    "loopnb.notebook": [
        "PANES",
        "BackgroundRun",
        "LiveView",
        "NotebookRunner",
        "Pane",
        "ViewModel",
        "replay",
        "report_html",
        "to_html",
        "watch",
    ],
    "loopnb.record": [
        "DEFAULT_PATTERNS",
        "DEFAULT_REDACTOR",
        "EVENTS",
        "EVENT_SCHEMA",
        "TURNS",
        "TURN_SCHEMA",
        "Column",
        "Recorder",
        "Recording",
        "RecordingError",
        "RecordingWarning",
        "Redactor",
        "Table",
    ],
    "loopnb.analysis": [
        "Audit",
        "Comparison",
        "WhatIf",
        "audit",
        "breaker_history",
        "compare",
        "flow_counts",
        "recovery_attempts",
        "scripted_from",
        "what_if",
    ],
    "loopnb.cli": ["main"],
    "loopnb.scenarios": [
        "FILES",
        "SCENARIOS",
        "Build",
        "Ending",
        "Outcome",
        "Scenario",
        "get",
        "make_list_dir",
        "make_read_file",
        "names",
    ],
}


def _modules() -> list[str]:
    """Every module of the package, by name, found on disk."""
    return ["loopnb", *(m.name for m in pkgutil.walk_packages([str(ROOT)], "loopnb."))]


def _python_files() -> list[Path]:
    return sorted(ROOT.rglob("*.py"))


@pytest.mark.parametrize("package", PACKAGES)
def test_all_is_the_committed_list(package):
    """Adding or removing a public name is a change to this file too."""
    names = importlib.import_module(package).__all__
    missing = sorted(set(EXPECTED[package]) - set(names))
    extra = sorted(set(names) - set(EXPECTED[package]))
    assert not missing and not extra, f"{package}.__all__: missing {missing}, unexpected {extra}"
    assert names == EXPECTED[package]


@pytest.mark.parametrize("package", PACKAGES)
def test_all_is_listed_once_sorted_and_importable(package):
    module = importlib.import_module(package)
    names = module.__all__
    repeated = sorted({n for n in names if names.count(n) > 1})
    assert not repeated, f"{package}.__all__ lists {repeated} more than once"
    assert names == sorted(names, key=_order), f"{package}.__all__ is not in ruff's (RUF022) order"
    unreachable = [name for name in names if not hasattr(module, name)]
    assert not unreachable, f"{package}.__all__ names what it does not hold: {unreachable}"


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_of_a_package_is_in_its_all(package):
    module = importlib.import_module(package)
    public = {name for name in {*vars(module), *dir(module)} if not name.startswith("_")}
    submodules = {
        name
        for name in public
        if isinstance(getattr(module, name), types.ModuleType)
        and getattr(module, name).__name__ == f"{package}.{name}"
    }
    stray = sorted(public - submodules - set(module.__all__))
    assert not stray, f"{package} has public names missing from its __all__: {stray}"


def test_no_module_is_public_but_the_packages_the_cli_and_main():
    modules = _modules()
    private = [m for m in modules if any(p.startswith("_") and p != "__main__" for p in m.split("."))]
    public = set(modules) - set(private)
    assert public == PUBLIC_MODULES, f"public modules: {sorted(public)}"
    assert len(modules) > len(public) * 5  # the implementation does live in the private modules


def test_only_the_public_modules_declare_all():
    """A private module's names are reached through its package; it declares no ``__all__`` of its own."""
    declaring = []
    for path in _python_files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else []
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                declaring.append(path.relative_to(ROOT.parent).as_posix())
    expected = sorted(f"{p.replace('.', '/')}/__init__.py" for p in PACKAGES)
    assert sorted(declaring) == expected


def test_no_module_imports_another_modules_underscore_name():
    """A name shared between modules is public in its (private) module; a private module is fine."""
    modules = set(_modules())
    crossing = []
    for path in _python_files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imports = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        for node in imports:
            source = node.module or ""
            for name in (alias.name for alias in node.names):
                private = name.startswith("_") and not name.startswith("__")
                if source.startswith("loopnb") and private and f"{source}.{name}" not in modules:
                    crossing.append(f"{path.relative_to(ROOT.parent)}:{node.lineno}: {source}.{name}")
    assert not crossing, crossing


def _home(package: str, name: str) -> str:
    """The rule: a name ``loopnb`` exports reports ``loopnb``; any other, the package exporting it."""
    return "loopnb" if name in EXPECTED["loopnb"] else package


def _homes(module: types.ModuleType, names: list[str]) -> dict[str, str]:
    """The ``__module__`` of each class and function among ``names``."""
    values = {name: getattr(module, name) for name in names}
    return {n: v.__module__ for n, v in values.items() if isinstance(v, type | types.FunctionType)}


@pytest.mark.parametrize("package", PACKAGES)
def test_every_class_and_function_reports_its_public_home(package):
    module = importlib.import_module(package)
    homes = _homes(module, module.__all__)
    wrong = {name: home for name, home in homes.items() if home != _home(package, name)}
    assert not wrong, f"{package}: these report another home than the rule's: {wrong}"
    assert set(homes.values()) <= PUBLIC_MODULES


@pytest.mark.parametrize("package", [*PACKAGES, "loopnb._sweep"])
def test_a_layer_imported_alone_gives_its_names_their_homes(package):
    """However a name is reached (its layer imported directly, a lazy name loaded), never ``loopnb.X``
    first, it already reports its home: the home does not depend on what was imported before."""
    names = LAZY["loopnb._sweep"] if package == "loopnb._sweep" else None  # a private package: no __all__
    probe = (
        f"import importlib, json; from tests.test_public_api import _homes;"
        f"module = importlib.import_module({package!r});"
        f"print(json.dumps(_homes(module, {names!r} or module.__all__)))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    homes = json.loads(out.stdout)
    assert homes == {name: _home(package, name) for name in homes}
    assert names is None or sorted(homes) == sorted(names)


def test_the_lazy_names_are_the_layers_own():
    for package, names in LAZY.items():
        layer = importlib.import_module(package)
        for name in names:
            assert getattr(loopnb, name) is getattr(layer, name), f"loopnb.{name}"


HEAVY = ("pandas", "ipywidgets", "plotly", "IPython", "loopnb.record", "loopnb.notebook")


def _imported_after(code: str) -> list[str]:
    """Which of ``HEAVY`` a fresh interpreter holds after running ``code``."""
    probe = f"import sys, json; {code}; print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_import_loopnb_loads_neither_the_recording_nor_the_notebook_layer():
    assert _imported_after("import loopnb, loopnb.engine, loopnb.engine.models, loopnb.scenarios") == []


def test_a_name_of_a_layer_loads_that_layer_on_first_use():
    assert _imported_after("import loopnb; loopnb.Recorder") == ["loopnb.record"]
    notebook = _imported_after("import loopnb; loopnb.LiveView")
    assert {"loopnb.notebook", "ipywidgets"} <= set(notebook)
    assert "plotly" not in notebook  # the live view draws its panes as SVG: plotly serves the audit
