"""README.md's examples run as written and show what the README says they show.

The Python blocks run in README order in one namespace, in a temporary folder: the README reads
as the cells of one notebook (later sections use ``read_file`` and ``engine``). The blocks that
need a real model's key or network are skipped by section name, and a test checks that exactly
those blocks mention keys or a server, so the skip list cannot silently grow.
"""

from __future__ import annotations

import ast
import asyncio
import glob
import inspect
import re
import shlex
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from loopnb.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"

# Sections whose Python blocks need an API key or a model server, with what they need.
NEEDS_A_REAL_MODEL = {
    "Real models": "OPENAI_API_KEY / ANTHROPIC_API_KEY or a local model server",
    "Exporting to OpenTelemetry": "an OTLP/HTTP endpoint (tests/otel checks the same calls against one)",
}
# `loopnb` command lines that need the same.
REAL_MODEL_COMMANDS = (
    "loopnb demo --model openai:gpt-4o-mini",
    "loopnb demo --model ollama:llama3.1 --base-url http://127.0.0.1:11434/v1",
)
MENTIONS_A_REAL_MODEL = re.compile(
    r"API_KEY|base_url|--base-url|--model|OpenAIChatModel|AnthropicModel|http_provider|export=\"http"
)
# `expr   # "literal"`: a line whose comment states the value of its expression.
STATED_VALUE = re.compile(r"^(?P<expr>[^#\s][^#]*?)\s+#\s*(?P<value>\"[^\"]*\")\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced code block of the README."""

    section: str
    lang: str
    line: int  # the README line of the block's first code line
    code: str

    @property
    def where(self) -> str:
        return f"README.md:{self.line} ({self.section})"

    def compiled(self) -> Any:
        """The block as code whose tracebacks give README.md line numbers; a block may ``await`` at
        its top level, as a notebook cell may."""
        return compile(
            "\n" * (self.line - 1) + self.code, str(README), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
        )


def readme_blocks() -> list[Block]:
    """Every fenced block, with the ``## `` section it sits in."""
    found, section, lines = [], "", README.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("## "):
            section = lines[i][3:].strip()
        fence = re.match(r"^```(\w*)\s*$", lines[i])
        if fence:
            end = lines.index("```", i + 1)
            found.append(Block(section, fence.group(1), i + 2, "\n".join(lines[i + 1 : end])))
            i = end
        i += 1
    return found


def python_blocks() -> list[Block]:
    return [b for b in readme_blocks() if b.lang == "python"]


def readme_commands() -> list[str]:
    """The ``loopnb`` command lines of the bash blocks, comments removed."""
    commands = []
    for block in readme_blocks():
        if block.lang != "bash":
            continue
        for line in block.code.splitlines():
            command = line.split("#", 1)[0].strip()
            if command.startswith("loopnb "):
                commands.append(command)
    return commands


def stated_values(block: Block) -> list[tuple[str, object]]:
    """The ``expr  # "value"`` lines of a block, as (expression, value)."""
    stated = []
    for line in block.code.splitlines():
        match = STATED_VALUE.match(line)
        if match is None:
            continue
        try:
            ast.parse(match["expr"], mode="eval")
        except SyntaxError:
            continue
        stated.append((match["expr"], ast.literal_eval(match["value"])))
    return stated


@dataclass
class Session:
    """The README's runnable blocks, run in order: the namespace after each section."""

    folder: Path
    after: dict[str, dict[str, Any]] = field(default_factory=dict)
    failure: str | None = None
    wrong_values: list[str] = field(default_factory=list)

    def names(self, section: str) -> dict[str, Any]:
        if self.failure is not None:
            pytest.fail(self.failure)
        return self.after[section]


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Session:
    folder = tmp_path_factory.mktemp("readme")
    done = Session(folder)
    namespace: dict[str, Any] = {"__name__": "__readme__"}
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        for block in python_blocks():
            if block.section in NEEDS_A_REAL_MODEL:
                continue
            try:
                ran = eval(block.compiled(), namespace)  # a coroutine when the block awaits
                if inspect.iscoroutine(ran):
                    asyncio.run(ran)
            except Exception:
                done.failure = f"{block.where} fails:\n{traceback.format_exc()}"
                break
            for expr, value in stated_values(block):
                try:
                    got = eval(expr, namespace)
                except Exception as exc:
                    got = exc
                if got != value:
                    done.wrong_values.append(f"{block.where}: {expr} is {got!r}, the README says {value!r}")
            done.after[block.section] = dict(namespace)
        background = namespace.get("background")
        if background is not None:
            assert background.wait(30), "the README's background run did not end"
    return done


def test_the_skipped_blocks_are_exactly_those_that_need_a_real_model() -> None:
    blocks = python_blocks()
    skipped = [b.where for b in blocks if b.section in NEEDS_A_REAL_MODEL]
    mentioning = [b.where for b in blocks if MENTIONS_A_REAL_MODEL.search(b.code)]
    assert skipped, f"no Python block in the sections {sorted(NEEDS_A_REAL_MODEL)}"
    assert skipped == mentioning
    real = [c for c in readme_commands() if MENTIONS_A_REAL_MODEL.search(c)]
    assert real == list(REAL_MODEL_COMMANDS)


def test_the_skipped_blocks_import_names_that_exist() -> None:
    """They cannot run here, but a renamed import would still break them."""
    for block in python_blocks():
        if block.section not in NEEDS_A_REAL_MODEL:
            continue
        imports = [n for n in ast.parse(block.code).body if isinstance(n, ast.Import | ast.ImportFrom)]
        assert imports, block.where
        exec(compile(ast.Module(body=imports, type_ignores=[]), block.where, "exec"), {})


def test_every_runnable_python_block_runs(session: Session) -> None:
    assert session.failure is None, session.failure
    ran = {b.section for b in python_blocks() if b.section not in NEEDS_A_REAL_MODEL}
    assert set(session.after) == ran


def test_every_value_a_comment_states_holds(session: Session) -> None:
    stated = [s for b in python_blocks() for s in stated_values(b)]
    assert ("result.output", "It prints nothing.") in stated
    assert session.failure is None, session.failure
    assert session.wrong_values == []


def test_the_smallest_program_recovers_from_the_misspelt_path(session: Session) -> None:
    names = session.names("The smallest program")
    first, second = names["result"].tool_results
    assert (first.is_error, first.content) == (True, "file src/mian.rs not found")
    assert (second.is_error, second.content) == (False, "fn main() {}")


def test_the_hard_failure_hands_back_the_completed_turns(session: Session) -> None:
    salvaged = session.names("The smallest program")["salvaged"]
    producers = [r.producer for r in salvaged.tool_results]
    assert producers == ["tool_error"] * 3 + ["loop_refusal"] * 2  # "3 errors, 2 refusals"


def test_recording_writes_and_loads_what_it_says(session: Session) -> None:
    names = session.names("Recording and auditing")
    block = next(b for b in python_blocks() if b.section == "Recording and auditing")
    listed = re.search(r"recorder\.turns\s+# one row per turn: (.*?), \.\.\.", block.code, re.S)
    assert listed is not None, "the README no longer lists the turns columns"
    columns = [re.sub(r"\s*\(.*?\)", "", c).strip(" #\n") for c in listed[1].split(",")]
    assert set(columns) <= set(names["recorder"].turns.columns), columns
    rec, frame = names["rec"], names["frame"]
    assert len(rec.turns) > 0
    # every recording in runs/ counted once: the Parquet copy is saved elsewhere
    assert len(frame) == len(rec.turns)
    assert set(frame["source"]) == {str(Path("runs/one.jsonl"))}
    assert (session.folder / "one.parquet").is_file()
    summary = names["audit"](rec).summary()
    assert {"runs", "soft turns", "runs ended hard"} <= set(summary["metric"])


def test_the_notebook_runner_saves_and_exports(session: Session) -> None:
    names = session.names("Watching a run in a notebook")
    assert names["result"].output
    assert len(names["runner"].turns) > 0
    background = names["background"]
    assert background.done and background.failure is None and background.error is None
    assert (session.folder / "run.jsonl").is_file()
    assert "<html" in (session.folder / "run.html").read_text(encoding="utf-8")[:2000].lower()


def test_the_command_lines_run_and_exit_0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    commands = [c for c in readme_commands() if c not in REAL_MODEL_COMMANDS]
    assert "loopnb demo --record runs/" in commands and "loopnb audit runs/*.jsonl" in commands
    for command in commands:
        argv = []
        for arg in shlex.split(command)[1:]:  # the shell expands globs, not loopnb
            argv += sorted(glob.glob(arg)) if "*" in arg else [arg]
        assert main(argv) == 0, f"{command}:\n{capsys.readouterr()}"
    capsys.readouterr()


def test_the_benchmark_scripts_it_names_exist() -> None:
    root = README.parent
    scripts = re.findall(r"python (benchmarks/\S+\.py)", README.read_text(encoding="utf-8"))
    assert scripts
    for script in scripts:
        assert (root / script).is_file(), script


def test_the_names_its_prose_puts_in_backticks_are_public() -> None:
    """`LoopDetected`, `RetryWithBackoff`, `Engine(breakers=CircuitBreaker(...))`: all from loopnb."""
    import builtins

    import loopnb

    prose = re.sub(r"```.*?```", "", README.read_text(encoding="utf-8"), flags=re.S)
    named = set()
    for span in re.findall(r"`([^`\n]+)`", prose):
        named.update(re.findall(r"(?<![\w.'\"])([A-Z][a-z]+(?:[A-Z][a-z]+)*)(?=\(|$)", span))
    named -= set(dir(builtins)) | {"Ns"}  # `True`; the N seconds of `timed out after Ns`
    assert {"LoopError", "Cancelled", "CircuitBreaker"} <= named
    assert sorted(n for n in named if not hasattr(loopnb, n)) == []


def test_the_readme_runs_as_cells_of_a_notebook_in_a_kernel(tmp_path: Path) -> None:
    """The README reads as one notebook: its runnable blocks, as cells, run in a real IPython
    kernel, where an event loop is already running (``run_sync`` would fail there, ``await`` works)."""
    import nbformat
    from nbclient import NotebookClient

    cells = [
        nbformat.v4.new_code_cell(block.code)
        for block in python_blocks()
        if block.section not in NEEDS_A_REAL_MODEL
    ]
    cells.append(nbformat.v4.new_code_cell("background.wait(30)"))
    notebook = nbformat.v4.new_notebook(cells=cells)
    NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    errors = [
        f"cell {i}: {out['ename']}: {out['evalue']}"
        for i, cell in enumerate(notebook.cells)
        for out in cell.get("outputs", [])
        if out.get("output_type") == "error"
    ]
    assert not errors
    assert notebook.cells[-1].outputs[0]["data"]["text/plain"] == "True"
