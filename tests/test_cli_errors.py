"""The ``loopnb`` command line on bad input, Ctrl-C and closed pipes: a clear message, the right
exit code, no traceback, and nothing of the user's lost."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import loopnb
from loopnb import scenarios
from loopnb.cli import _main as cli
from loopnb.cli import main
from loopnb.scenarios import Scenario

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def usage_error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """The stderr of a command argparse rejects (exit code 2)."""
    with pytest.raises(SystemExit) as exit_info:
        main(list(args))
    assert exit_info.value.code == 2
    return capsys.readouterr().err


# -- the entry points -----------------------------------------------------------------------


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out == f"loopnb {loopnb.__version__}\n"


def test_python_dash_m_loopnb_is_the_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "loopnb", "demo", "--list"],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[0] == scenarios.names()[0]


# -- loopnb demo: bad input -----------------------------------------------------------------


def test_an_unknown_scenario_suggests_the_close_names(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "demo", "mistypd_path", "stubborn", "hook_veto")
    assert code == 2 and out == ""
    assert "no scenario named 'mistypd_path' (did you mean mistyped_path?)" in err
    assert "no scenario named 'stubborn' (did you mean stubborn_loop?)" in err
    assert "hook_veto'" not in err


def test_a_name_close_to_nothing_gets_no_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "demo", "xyzzy")
    assert code == 2
    assert "no scenario named 'xyzzy'; the scenarios are: mistyped_path," in err


@pytest.mark.parametrize(
    ("width", "expected"),
    [("0", "expected a positive number of columns, got 0"), ("-5", "got -5"), ("wide", "got 'wide'")],
)
def test_a_width_that_is_not_a_positive_number_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], width: str, expected: str
) -> None:
    err = usage_error(capsys, "demo", "mistyped_path", "--width", width)
    assert "argument --width" in err and expected in err


def test_a_seed_that_is_not_a_number_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert "argument --seed: invalid int value: 'abc'" in usage_error(capsys, "demo", "--seed", "abc")


def test_an_empty_model_spec_is_a_usage_error_not_the_embedded_model(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "demo", "mistyped_path", "--model", " ")
    assert code == 2 and out == ""
    assert err == "loopnb demo: --model needs a model spec, e.g. openai:gpt-4o-mini or ollama:llama3.1\n"


def test_an_unknown_provider_fails_before_the_record_folder_is_made(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = run(capsys, "demo", "--model", "bogus:x", "--record", str(tmp_path / "runs"))
    assert code == 2 and out == ""
    assert err.startswith("loopnb demo: unknown model spec 'bogus:x'; expected fallible, openai:<model>")
    assert not (tmp_path / "runs").exists()


def test_a_missing_api_key_is_named_at_once(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    code, out, err = run(capsys, "demo", "--model", "anthropic")
    assert code == 2 and out == ""
    assert err.startswith("loopnb demo: ") and ("ANTHROPIC_API_KEY" in err or "pip install" in err)
    assert "Traceback" not in err


# -- loopnb demo --record -------------------------------------------------------------------


def test_record_at_a_file_is_a_usage_error_and_leaves_the_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = tmp_path / "notes.txt"
    target.write_text("mine")
    code, out, err = run(capsys, "demo", "mistyped_path", "--record", str(target))
    assert code == 2 and out == ""
    assert f"--record {target}: exists and is not a folder" in err
    assert target.read_text() == "mine"


def test_record_where_no_folder_can_be_made_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "a-file").write_text("")
    code, out, err = run(capsys, "demo", "mistyped_path", "--record", str(tmp_path / "a-file" / "runs"))
    assert code == 2 and out == ""
    assert "cannot make the folder" in err


def test_record_refuses_to_replace_what_is_not_a_recording(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "mistyped_path.jsonl").write_text("my own notes\n")
    (tmp_path / "hook_veto.jsonl").mkdir()
    code, out, err = run(capsys, "demo", "mistyped_path", "--record", str(tmp_path))
    assert code == 2 and out == ""
    assert "mistyped_path.jsonl exists and is not a loopnb recording; not overwriting it" in err
    assert (tmp_path / "mistyped_path.jsonl").read_text() == "my own notes\n"
    code, _, err = run(capsys, "demo", "hook_veto", "--record", str(tmp_path))
    assert code == 2 and "hook_veto.jsonl exists and is not a file" in err


def test_record_replaces_a_scenarios_earlier_recording(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from loopnb import load

    for _ in range(2):
        code, _, err = run(capsys, "demo", "mistyped_path", "--record", str(tmp_path))
        assert code == 0, err
    assert len(load(tmp_path / "mistyped_path.jsonl").turns) == 3


@pytest.mark.filterwarnings("default::loopnb.LoopnbWarning")
def test_a_recorder_that_cannot_write_is_one_plain_warning(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from loopnb.record import _jsonl as jsonl

    def disk_full(self: object, events: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(jsonl.JsonlWriter, "write", disk_full)
    code, out, err = run(capsys, "demo", "mistyped_path", "--record", str(tmp_path))
    assert code == 0 and "1/1 as declared\n" in out
    assert err.startswith("loopnb demo: warning: ") and "streaming stopped" in err
    assert "No space left on device" in err and len(err.splitlines()) == 1


# -- Ctrl-C and closed pipes ----------------------------------------------------------------


def test_ctrl_c_in_a_scenario_stops_the_demo_with_130(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cancelled = scenarios.get("cancelled_run").run()
    ran: list[str] = []

    def run_until_ctrl_c(self: Scenario, **kwargs: Any) -> Any:
        ran.append(self.name)
        with contextlib.suppress(KeyboardInterrupt):  # the engine ends the run as Cancelled
            signal.raise_signal(signal.SIGINT)
        return cancelled

    monkeypatch.setattr(Scenario, "run", run_until_ctrl_c)
    code, out, err = run(capsys, "demo", "mistyped_path", "hook_veto")
    assert code == 130
    assert ran == ["mistyped_path"]
    assert out.count("\n== ") + out.startswith("== ") == 1 and "ended hard: Cancelled" in out
    assert err == "loopnb demo: interrupted\n"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_ctrl_c_between_scenarios_exits_130_without_a_traceback(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*args: object, **kwargs: object) -> str:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "outcome_lines", interrupted)
    code, _, err = run(capsys, "demo", "mistyped_path")
    assert code == 130 and err == "loopnb demo: interrupted\n"


def test_a_closed_pipe_ends_quietly(monkeypatch: pytest.MonkeyPatch) -> None:
    class ClosedPipe(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    assert main(["demo", "--list"]) == 141
    assert main(["demo", "mistyped_path"]) == 141


def test_a_reader_gone_before_the_first_line_leaves_no_traceback() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # as `| head` does once it has its lines
    try:
        done = subprocess.run(
            [sys.executable, "-m", "loopnb", "demo", "--list"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            env=ENV,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 141
    assert done.stderr == ""
