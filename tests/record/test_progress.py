"""A progress bar over many recordings: shown when someone watches (a terminal, a notebook) and there
are files enough; silent otherwise; ``progress=`` decides when given."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from loopnb import load_many
from loopnb.cli._commands import audit_command
from loopnb.record import _progress as progress
from loopnb.record._progress import PROGRESS_FROM, Progress, wanted


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """Three recordings of the same run under three run ids."""
    from loopnb.cli import main

    with io.StringIO() as sink:
        import contextlib

        with contextlib.redirect_stdout(sink):
            assert main(["demo", "mistyped_path", "--record", str(tmp_path / "one")]) == 0
    lines = (tmp_path / "one" / "mistyped_path.jsonl").read_text().splitlines()
    run_id = json.loads(lines[1])["run_id"]
    runs = tmp_path / "runs"
    runs.mkdir()
    for i in range(3):
        (runs / f"run{i}.jsonl").write_text("\n".join(lines).replace(run_id, f"run-{i}") + "\n")
    return runs


def test_auto_shows_a_bar_only_when_interactive_and_for_enough_files(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress, "in_notebook", lambda: False)
    assert wanted(None, PROGRESS_FROM, Terminal()) is True
    assert wanted(None, PROGRESS_FROM - 1, Terminal()) is False  # too few to matter
    assert wanted(None, 10 * PROGRESS_FROM, io.StringIO()) is False  # piped, a log, a test
    monkeypatch.setattr(progress, "in_notebook", lambda: True)
    assert wanted(None, PROGRESS_FROM, io.StringIO()) is True  # a notebook's widget


def test_an_explicit_choice_wins_and_a_wrong_one_is_named() -> None:
    assert wanted(True, 1, io.StringIO()) is True
    assert wanted(False, 10 * PROGRESS_FROM, Terminal()) is False
    with pytest.raises(TypeError, match=r"progress must be True, False or None \(auto\), got 'yes'"):
        wanted("yes", 1)  # type: ignore[arg-type]


def test_not_in_a_notebook_here() -> None:
    assert progress.in_notebook() is False


def test_load_many_draws_the_bar_on_stderr_when_asked(
    folder: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(progress, "_DELAY", 0.0)
    df = load_many(folder, progress=True)
    assert df["source"].nunique() == 3
    err = capsys.readouterr().err
    assert "loading recordings" in err and "/3 [" in err  # tqdm redraws at most every 0.1 s


def test_load_many_is_silent_by_default_when_not_interactive(
    folder: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(progress, "_DELAY", 0.0)
    monkeypatch.setattr(progress, "PROGRESS_FROM", 2)
    assert len(load_many(folder)) == 9
    assert len(load_many(folder, progress=False)) == 9
    assert capsys.readouterr().err == ""


def test_audit_of_a_large_folder_shows_progress_on_a_terminal_and_keeps_errors_whole(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(progress, "_DELAY", 0.0)
    monkeypatch.setattr(progress, "PROGRESS_FROM", 3)
    (folder / "run1.jsonl").write_text((folder / "run1.jsonl").read_text().splitlines()[0] + "\n{torn\n{x\n")
    err, out = Terminal(), io.StringIO()
    assert audit_command([str(folder)], out=out, err=err) == 1
    text = err.getvalue()
    assert "loading recordings" in text and "/3 [" in text
    named = [
        line for line in text.replace("\r", "\n").splitlines() if line.startswith("loopnb audit: error:")
    ]
    assert len(named) == 1 and "run1.jsonl, line 2" in named[0]
    assert out.getvalue().startswith("loopnb audit: 3 recordings, 1 could not be read (named above)\n")
    quiet = io.StringIO()
    assert audit_command([str(folder)], out=io.StringIO(), err=quiet) == 1
    assert "loading" not in quiet.getvalue()  # not a terminal: no bar


def test_the_bar_goes_away_however_the_work_ends() -> None:
    stream = Terminal()
    with pytest.raises(RuntimeError), Progress(5, shown=True, file=stream) as bar:
        bar.advance()
        raise RuntimeError("stop")
    assert bar.shown is False
    with Progress(5, shown=False, file=stream) as quiet:
        quiet.note("a line")
    assert stream.getvalue().endswith("a line\n")
