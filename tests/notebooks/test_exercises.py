"""The notebooks as students use them: exercises, cells run again out of order, other folders, real models.

nbval runs each notebook once, top to bottom, with its own configuration. These tests execute a
notebook with a change a student would make (a cell appended, a cell run again, a setting
edited) and check that what the prose promises still holds. Each starts one kernel.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import re
from collections.abc import Iterator

import pytest

import nbformat
import nbclient

REPO = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"


def cell_index(nb, marker: str) -> int:
    """The index of the only code cell whose source contains ``marker``."""
    found = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and marker in c.source]
    assert len(found) == 1, f"{len(found)} code cells contain {marker!r}"
    return found[0]


def printed(cell) -> str:
    """What a cell printed (stdout), and its error if it raised."""
    out = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
    errors = [f"{o.ename}: {o.evalue}" for o in cell.outputs if o.output_type == "error"]
    return out + "\n".join(errors)


class Session:
    """One kernel for a notebook: run its cells, then more cells, as a student would."""

    def __init__(self, name: str) -> None:
        self.nb = nbformat.read(NOTEBOOKS / name, as_version=4)
        self.client = nbclient.NotebookClient(
            self.nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}
        )

    def edit(self, marker: str, old: str, new: str) -> None:
        """Replace ``old`` (exactly once) in the code cell containing ``marker``."""
        cell = self.nb.cells[cell_index(self.nb, marker)]
        assert cell.source.count(old) == 1, f"{old!r} not found once in the cell with {marker!r}"
        cell.source = cell.source.replace(old, new)

    def run_all(self) -> None:
        for i in range(len(self.nb.cells)):
            self.run_cell(i)

    def run_cell(self, index: int) -> str:
        """Execute one cell (again): what it printed, or its error."""
        cell = self.nb.cells[index]
        if cell.cell_type != "code":
            return ""
        cell.outputs = []
        with contextlib.suppress(nbclient.exceptions.CellExecutionError):  # the error is in the outputs
            self.client.execute_cell(cell, index)
        return printed(cell)

    def run(self, source: str) -> str:
        """Append a code cell and run it: what it printed, or its error."""
        self.nb.cells.append(nbformat.v4.new_code_cell(source))
        return self.run_cell(len(self.nb.cells) - 1)

    def errors(self) -> list[str]:
        """Every error a cell raised, as ``cell i: Name: message``."""
        return [
            f"cell {i}: {o.ename}: {o.evalue}"
            for i, c in enumerate(self.nb.cells)
            if c.cell_type == "code"
            for o in c.outputs
            if o.output_type == "error"
        ]


@pytest.fixture
def session(monkeypatch) -> Iterator:
    """Open a notebook in a fresh kernel that imports loopnb from this checkout."""
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    )
    for var in ("LOOPNB_MODEL", "LOOPNB_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    with contextlib.ExitStack() as kernels:

        def open_(name: str, **env: str) -> Session:
            for var, value in env.items():
                monkeypatch.setenv(var, value)
            s = Session(name)
            kernels.enter_context(s.client.setup_kernel())
            return s

        yield open_


def test_03_cells_run_again_out_of_order_keep_their_own_runs(session):
    s = session("03_the_recovery_ceiling.ipynb")
    s.run_all()
    assert not s.errors()
    s.run_cell(cell_index(s.nb, "class Patient"))  # back to the first strategy after the second
    again = s.run_cell(cell_index(s.nb, "table = attempts(forever_events)"))
    assert not s.errors()
    assert again.startswith("ToolRecoveryExhausted(attempts=6)"), again
    s.edit("class Patient", "return Fail(", "return Skip(")  # the last exercise
    s.run_cell(cell_index(s.nb, "class Patient"))
    assert not s.errors()


def test_03_the_back_off_exercise_meets_the_ceiling(session):
    s = session("03_the_recovery_ceiling.ipynb")
    s.edit("def service_status", "FAILING_CALLS = 2", "FAILING_CALLS = 6")
    s.edit("def service_status", "RETRIES = 3", "RETRIES = 10")
    s.run_all()
    assert not s.errors()
    out = printed(s.nb.cells[cell_index(s.nb, "def service_status")])
    assert "is_error=True) after 6 calls" in out and "[0.5, 1.0, 2.0, 4.0, 8.0]" in out


def test_04_the_convergence_exercise_ends_with_user_input_required(session):
    s = session("04_safety_systems.ipynb")
    s.run_all()
    assert not s.errors()
    out = s.run('print(repr(converging.run(convergence=ConvergenceDetector(action="ask_user")).error))')
    assert out.startswith("UserInputRequired('convergence detected: "), out
    out = s.run(
        'print(repr(converging.run(convergence=ConvergenceDetector(action="warn"), max_turns=12).error))'
    )
    assert out.startswith("LoopDetected('the run reached max_turns=12 without a final reply')"), out


def test_04_each_section_keeps_its_own_ending(session):
    s = session("04_safety_systems.ipynb")
    s.run_all()
    for marker in ("assert isinstance(loop_err, LoopDetected)", 'str(converged).startswith("convergence'):
        s.run_cell(cell_index(s.nb, marker))  # again, after the fallback chain's run
    assert not s.errors()


def test_06_audits_a_folder_of_your_own(session, tmp_path):
    from loopnb import Recorder, scenarios

    mine = tmp_path / "mine"
    mine.mkdir()
    with Recorder(mine / "one.jsonl") as recorder:  # one run, ok, of a model the notebook never made
        scenarios.get("mistyped_path").run(observers=[recorder])
    s = session("06_auditing_runs.ipynb")
    s.edit('RECORDINGS = Path("recordings")', 'Path("recordings")', f"Path({str(mine)!r})")
    s.run_all()
    assert not s.errors()
    assert sorted(p.name for p in mine.iterdir()) == ["one.jsonl"]  # nothing generated into it


@pytest.fixture
def fake_openai():
    from tests.models import fakeserver

    return fakeserver


def test_07_runs_the_smallest_program_on_a_configured_model(session, fake_openai):
    script = [
        fake_openai.Reply(calls=[("read_file", {"path": "src/mian.rs"})]),
        fake_openai.Reply(calls=[("list_files", {})]),
        fake_openai.Reply(calls=[("read_file", {"path": "src/main.rs"})]),
        fake_openai.Reply("It does nothing."),
    ]
    with fake_openai.FakeServer(script) as server:
        s = session(
            "07_bring_your_own_model.ipynb", LOOPNB_MODEL="openai:test", LOOPNB_BASE_URL=server.openai_url
        )
        s.run_all()
    assert not s.errors()
    out = printed(s.nb.cells[cell_index(s.nb, "engine.run(TASK)")])
    assert out.splitlines() == [
        "soft  read_file: 'file src/mian.rs not found'",
        'ok    list_files: \'["Cargo.toml", "src/main.rs"]\'',
        "ok    read_file: 'fn main() {}'",
        "turns: 4; answer: 'It does nothing.'",
    ]


def test_07_a_model_that_never_answers_is_stopped_by_max_turns(session, fake_openai):
    busy = [fake_openai.Reply(calls=[("list_files", {})])] * 30
    with fake_openai.FakeServer(busy) as server:
        s = session(
            "07_bring_your_own_model.ipynb", LOOPNB_MODEL="openai:test", LOOPNB_BASE_URL=server.openai_url
        )
        s.run_all()
        left = server.remaining
    assert not s.errors()
    out = printed(s.nb.cells[cell_index(s.nb, "engine.run(TASK)")])
    assert re.search(r"^The run ended hard: LoopDetected: ", out, re.MULTILINE), out
    assert left >= 30 - 10


PUBLIC = {"AnthropicModel", "OpenAIChatModel", "FallbackChain", "from_env", "ModelConfigError"}


def test_07_imports_the_public_names_from_the_public_modules():
    """The names a reader copies into their own code come from ``loopnb`` or ``loopnb.engine.models``."""
    nb = nbformat.read(NOTEBOOKS / "07_bring_your_own_model.ipynb", as_version=4)
    found = re.findall(
        r"^\s*from (loopnb[\w.]*) import ([\w, ]+)$", "\n".join(c.source for c in nb.cells), re.M
    )
    wrong = [
        f"{name} from {module}"
        for module, names in found
        for name in names.replace(" ", "").split(",")
        if name in PUBLIC and module not in {"loopnb", "loopnb.engine.models"}
    ]
    assert not wrong, wrong


def shown(cell) -> str:
    """What a cell printed, and the text of the value it showed."""
    texts = [o.get("text", "") for o in cell.outputs if o.output_type == "stream"]
    texts += [o.data.get("text/plain", "") for o in cell.outputs if o.output_type == "execute_result"]
    return "".join(texts)


REASON = re.compile(r"\b(soft_shown_as_success|soft_shown_as_hard|panic_ended_run|unknown_tool_ended_run"
                    r"|missing_tool_record|error_text_names_nothing)\b")  # fmt: skip


def test_08_shows_each_sources_disagreements_and_its_exercises_hold(session):
    s = session("08_auditing_other_frameworks.ipynb")
    s.run_all()
    assert not s.errors()

    def out(marker: str) -> str:
        return shown(s.nb.cells[cell_index(s.nb, marker)])

    history = out("history = from_pydantic_ai(")
    for said in ("retried/model_retry", "retried/unknown_tool", "retried/validation_error", "unreturned"):
        assert f"pydantic-ai:{said}" in history, history
    assert REASON.findall(out("audit(history).disagreements().drop")) == ["panic_ended_run"]
    spans = out("exporter = InMemorySpanExporter()")
    assert spans.count("execute_tool read_file   ERROR") == 2 and "serch" not in spans, spans
    # read_file's retries are ERROR tool spans under a run span that went on: handled, no disagreement
    assert REASON.findall(out("trace = from_otel(spans)")) == ["missing_tool_record", "panic_ended_run"]
    evaluated = out("[log] = inspect_eval(")
    assert evaluated == "the eval's status: success; the sample's error: KeyError('notes.txt')\n", evaluated
    assert "inspect:failed" in out("inspected = load(log.location)")
    # the history saved without its exception does not say why the run stopped: the crash is the log's
    assert REASON.findall(out("everywhere = audit(turns, events)")) == ["panic_ended_run"]

    inspect_eval = cell_index(s.nb, "[log] = inspect_eval(")

    def again() -> None:  # every cell but the Inspect eval, whose log stays where it was written
        for i, cell in enumerate(s.nb.cells):
            if cell.cell_type == "code" and i != inspect_eval:
                s.run_cell(i)
        assert not s.errors()

    crash = '        return f"deleted {path}; backup at {BACKUPS[path]}"'
    fixed = (
        "        if path not in BACKUPS:\n"
        '            raise ModelRetry(f"{path} has no backup; ask the user first")\n' + crash
    )
    s.edit("def notes_agent", crash, fixed)  # the first exercise: the crash becomes a soft error
    again()
    assert "the run raised None" in out("error = None")
    assert REASON.findall(out("audit(history).disagreements().drop")) == []
    assert REASON.findall(out("trace = from_otel(spans)")) == ["missing_tool_record"]
    assert REASON.findall(out("everywhere = audit(turns, events)")) == ["panic_ended_run"]  # the log's
    s.edit("def notes_agent", "retries=3", "retries=1")  # the second: read_file runs out of retries
    again()
    assert "UnexpectedModelBehavior" in out("error = None")
    assert "tool_recovery_exhausted" in out("history = from_pydantic_ai(")


def test_09_the_sweep_run_again_reads_what_is_written_and_the_default_detector_counts_all(session):
    s = session("09_sweeps_at_scale.ipynb")
    close = cell_index(s.nb, "cluster.close()")
    for i in range(close):
        s.run_cell(i)
    assert not s.errors()
    s.run_cell(cell_index(s.nb, "results = sweep("))  # again: resume=True reads what is written
    assert s.run("print(len(results.figures), results.turns['run_id'].nunique())").split() == ["0", "600"]
    # The exercise: without the strict loop detector, the vague text's soft refusals all "recover".
    s.edit("SLIPS = [", '        loop_detector={"warn_after": 3, "stop_after": 3},\n', "")
    for marker in ("scratch = tempfile", "SLIPS = [", "results = sweep("):  # a fresh folder, the same cluster
        s.run_cell(cell_index(s.nb, marker))
    rates = s.run("print(*results.by_config()['recovery_rate'])")
    s.run_cell(close)
    assert not s.errors()
    assert rates.split() == ["1.0", "1.0", "1.0"], rates
    assert s.run("print(WORK.exists())").strip() == "False"


def test_10_the_try_it_edits_move_the_divergence_and_a_new_text_needs_a_new_run(session):
    s = session("10_what_if.ipynb")
    s.run_all()
    assert not s.errors()
    tighter = cell_index(s.nb, "TIGHTER = LoopDetector(")
    assert "at turn 3: saves 18 turns" in printed(s.nb.cells[tighter])
    # the first exercise: warn at once, stop later; then the same cell projected to the end
    s.edit("TIGHTER = LoopDetector(", "warn_after=2, stop_after=2", "warn_after=1, stop_after=3")
    for i in range(tighter, len(s.nb.cells)):
        s.run_cell(i)
    assert not s.errors()
    out = printed(s.nb.cells[tighter])
    assert "turn 2: soft (tool_error) -> soft (loop_refusal)" in out and "the replay stops there" in out, out
    s.edit("TIGHTER = LoopDetector(", "loop_detector=TIGHTER)", "loop_detector=TIGHTER, to_end=True)")
    out = s.run_cell(tighter)
    assert not s.errors()
    assert "projected past it" in out and "ends hard (loop_detected) at turn 4: saves 17 turns" in out, out
    # the second: another error text stops the replay at once; a new run answers the question
    better = '"config.yaml does not exist; the files are README.md and src/main.rs"'
    out = s.run(f'print(what_if(recorded_run, error_text={{"read_file": {better}}}).what_if.text())')
    assert "turn 1: soft (tool_error) both, but the text the model reads differs" in out, out
    assert "the replay stops there" in out, out
    out = s.run(
        "rerun = Recorder()\n"
        f"tools = [make_read_file(lambda path: {better})]\n"
        "engine = stubborn.engine(clock=FakeClock(), observers=[rerun], loop_detector=None, max_turns=20,"
        " tools=tools)\n"
        "try:\n    engine.run(stubborn.task)\nexcept LoopError:\n    pass\n"
        "c = compare(recorded_run, rerun)\n"
        "print(c.first_divergence, c.divergence.how, acted_differently(c))"
    )
    assert out == "1 error_text None\n", out  # this model ignores even a helpful text


def test_11_six_failures_in_a_row_meet_the_loop_detector(session):
    """The loop detector refuses the 4th identical failing call (softly), the model gives up: an
    answer with no recovery, which the audit calls a false success."""
    s = session("11_breaking_it_on_purpose.ipynb")
    s.edit("EXERCISE_FAULT =", 'faults.error("disk busy").first(2)', 'faults.error("disk busy").first(6)')
    s.run_all()
    assert not s.errors()
    said = s.run_cell(cell_index(s.nb, "EXERCISE_FAULT ="))
    assert "dispatch refused before execution: loop detected" in said and "ended hard: None" in said
    assert re.search(r'error\("disk busy"\)\.first\(6\)\s+3\s+0\s+0\.0', said), said
