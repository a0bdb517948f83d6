"""One ``Format`` object per format: ``loopnb.formats()`` lists them, ``register_format`` adds one.

``Toy`` is a user's own format, written only with loopnb's public names (``EVENT_ADAPTER``,
``Recording.from_events``, ``RecordingError``): a CSV of ``turn,channel,producer,error_text``
lines, one tool call a turn. The ``toy`` fixture registers it with one ``register_format`` call
and calls the function that returned when the test ends, so no registration outlives its test.
"""

from __future__ import annotations

import ast
import csv
import io
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

import loopnb
from loopnb import EVENT_ADAPTER, Recorder, Recording, RecordingError, RecordingWarning
from loopnb.cli import main

ROOT = Path(loopnb.__file__).resolve().parent
GOLDEN = ROOT.parent / "tests" / "golden"
HEADER = "turn,channel,producer,error_text"
SHIPPED = ["inspect", "langgraph", "openai-agents", "otlp", "pydantic-ai"]


def _turn(turn: str, channel: str, producer: str, text: str) -> list[dict[str, Any]]:
    """The events of a turn of one call of ``step``, as the toy file says it went."""
    soft, call = channel == "soft", {"name": "step", "arguments": {}, "id": f"c{turn}"}
    result = {"content": text or "done", "is_error": soft, "name": "step", "call_id": call["id"]}
    shown = {
        "kind": "soft_error_returned",
        "producer": producer,
        "text": text,
        "tool": "step",
        "call_id": call["id"],
    }
    events = [
        {"kind": "turn_started"},
        {"kind": "model_replied", "reply": {"tool_calls": [call]}, "latency_ms": 0.0},
        {"kind": "tool_dispatched", "result": result | ({"producer": producer} if soft else {})},
        *([shown] if soft else []),
        {"kind": "turn_finished", "channel": channel, "producer": producer or None},
    ]
    events[2]["source_status"] = f"toy:{channel}"  # what the file said of the call
    return [{**e, "turn": int(turn)} for e in events]


class Toy:
    """Turns as CSV lines: ``turn,channel,producer,error_text`` (channel ``ok`` or ``soft``)."""

    name = "toy"
    what = "turn,channel,producer,error_text lines"
    suffixes = (".csv",)
    marks: ClassVar = {"ok": "ok", "soft": "retry"}  # the file's "soft": an error given back to the model

    def sniff(self, head: bytes, path: Path) -> bool:
        return head.startswith(HEADER.encode())

    def read(self, path: Path, *, errors: str = "warn") -> Recording:
        rows = list(csv.reader(io.StringIO(Path(path).read_text(encoding="utf-8"))))
        start = {"kind": "run_started", "task": "toy", "system": None, "models": [], "tools": ["step"]}
        events: list[dict[str, Any]] = [{**start, "advertised": ["step"]}]
        for line, row in enumerate(rows, 1):
            if row == HEADER.split(","):
                continue
            if row[1] not in ("ok", "soft"):
                problem = f"{path}, line {line}: channel {row[1]!r} is neither ok nor soft"
                if errors == "raise":
                    raise RecordingError(problem)
                warnings.warn(f"{problem}; line skipped", RecordingWarning, stacklevel=3)
                continue
            events += _turn(*row)
        events.append({"kind": "run_finished", "outcome": "ok", "turns": len(rows) - 1})
        typed = [
            EVENT_ADAPTER.validate_python({**e, "seq": i, "run_id": "toy", "at": 0.0})
            for i, e in enumerate(events)
        ]
        return Recording.from_events(typed, meta={"source": {"format": "toy", "version": None}}, path=path)


class WritableToy(Toy):
    """The toy format, written too: the turns frame's four columns."""

    def write(self, recording: Recording, path: Path) -> Path:
        columns = ["turn", "channel", "producer", "error_text"]
        frame = recording.turns[columns].astype(object)
        Path(path).write_text(frame.where(frame.notna(), "").to_csv(index=False), encoding="utf-8")
        return Path(path)


@pytest.fixture
def toy() -> Iterator[Toy]:
    fmt = Toy()
    unregister = loopnb.register_format(fmt)
    yield fmt
    unregister()


def _toy_file(path: Path, *lines: str) -> Path:
    path.write_text("\n".join([HEADER, *lines]) + "\n", encoding="utf-8")
    return path


LINES = ("1,soft,tool_error,file src/mian.rs not found", "2,ok,,")


def _turns(rec: Recording) -> list[list[Any]]:
    frame = rec.turns[["turn", "channel", "producer", "error_text"]].astype(object)
    return frame.where(frame.notna(), None).values.tolist()


def test_a_registered_format_is_sniffed_by_load(toy, tmp_path):
    rec = loopnb.load(_toy_file(tmp_path / "run.csv", *LINES))
    assert _turns(rec) == [[1, "soft", "tool_error", "file src/mian.rs not found"], [2, "ok", None, None]]
    assert rec.meta["source"]["format"] == "toy"


def test_a_registered_format_is_read_by_load_many_over_a_folder(toy, tmp_path):
    _toy_file(tmp_path / "run.csv", *LINES)
    recorder = Recorder()
    loopnb.Engine(loopnb.ScriptedModel(["done"]), observers=[recorder]).run("task")
    recorder.save(tmp_path / "own.jsonl")
    (tmp_path / "notes.csv").write_text("not,a,toy\n", encoding="utf-8")  # sniffed, not listed
    frame = loopnb.load_many(tmp_path)
    assert frame["source"].tolist() == [str(tmp_path / "own.jsonl"), *[str(tmp_path / "run.csv")] * 2]


def test_format_forces_the_registered_format(toy, tmp_path):
    headless = tmp_path / "headless.txt"
    headless.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    with pytest.raises(RecordingError, match="not a recording loopnb knows"):
        loopnb.load(headless)
    assert [row[1] for row in _turns(loopnb.load(headless, format="toy"))] == ["soft", "ok"]


def test_format_loopnb_takes_either_of_loopnbs_own_and_nothing_else(toy, tmp_path):
    recorder = Recorder()
    loopnb.Engine(loopnb.ScriptedModel(["done"]), observers=[recorder]).run("task")
    assert len(loopnb.load(recorder.save(tmp_path / "own.jsonl"), format="loopnb").turns) == 1
    toy_file = _toy_file(tmp_path / "run.csv", *LINES)
    with pytest.raises(RecordingError, match=r"run\.csv: not a loopnb recording \(it reads as toy\)$"):
        loopnb.load(toy_file, format="loopnb")


def test_errors_reaches_the_formats_reader(toy, tmp_path):
    path = _toy_file(tmp_path / "run.csv", *LINES, "3,weird,,")
    with pytest.raises(RecordingError, match=r"run\.csv, line 4: channel 'weird' is neither ok nor soft$"):
        loopnb.load(path, errors="raise")
    with pytest.warns(RecordingWarning, match="line 4: channel 'weird' is neither ok nor soft; line skipped"):
        assert len(loopnb.load(path).turns) == 2  # "warn", the default
    with pytest.raises(ValueError, match=r"^errors must be 'warn' or 'raise', got 'skip'$"):
        loopnb.load(path, errors="skip")  # type: ignore[arg-type]


def test_formats_lists_loopnbs_own_first_then_the_shipped_then_the_registered(toy):
    found = loopnb.formats()
    assert [fmt.name for fmt in found] == ["jsonl", "parquet", *SHIPPED, "toy"]
    assert found[-1] is toy
    assert all(isinstance(fmt, loopnb.Format) for fmt in found)
    assert [fmt.name for fmt in found if callable(getattr(fmt, "write", None))] == ["jsonl", "parquet"]


def test_an_unrecognised_file_names_every_format_the_registered_one_too(toy, tmp_path):
    stranger = tmp_path / "notes.txt"
    stranger.write_text("hello\n", encoding="utf-8")
    with pytest.raises(RecordingError) as info:
        loopnb.load(stranger)
    said = str(info.value)
    assert said.startswith(
        f"{stranger}: not a recording loopnb knows. loopnb reads jsonl: loopnb's own recordings"
    )
    assert "; toy: turn,channel,producer,error_text lines. To read it as one of them, name it" in said
    assert all(f"{fmt.name}: {fmt.what}" in said for fmt in loopnb.formats())
    with pytest.raises(RecordingError, match=r"unknown format 'nope': loopnb reads jsonl: .*; toy: turn"):
        loopnb.load(stranger, format="nope")


def test_a_duplicate_name_is_a_clear_error(toy):
    with pytest.raises(ValueError) as info:
        loopnb.register_format(Toy())
    assert str(info.value) == (
        "register_format(): a format named 'toy' is there already (turn,channel,producer,error_text "
        "lines); give yours another name"
    )
    otlp = type("Otlp", (Toy,), {"name": "otlp"})()
    with pytest.raises(
        ValueError, match=r"^register_format\(\): a format named 'otlp' is there already \(Open"
    ):
        loopnb.register_format(otlp)
    mine = type("Mine", (Toy,), {"name": "loopnb"})()
    with pytest.raises(ValueError, match=r"named 'loopnb' is there already \(loopnb's own formats\)"):
        loopnb.register_format(mine)


SHAPE = (
    "a format has name, what, suffixes, sniff(head, path) and read(path, *, errors), and "
    "write(recording, path) if it can be written"
)


def test_what_is_no_format_is_a_clear_error():
    with pytest.raises(TypeError) as info:
        loopnb.register_format("toy")  # type: ignore[arg-type]
    assert (
        str(info.value)
        == f"register_format(): 'toy' is not a loopnb.Format: no name, what, suffixes, sniff, read ({SHAPE})"
    )
    readless = type("Readless", (), {"name": "r", "what": "w", "suffixes": (".r",), "sniff": Toy.sniff})()
    with pytest.raises(TypeError, match=r"is not a loopnb\.Format: no read \(a format has"):
        loopnb.register_format(readless)
    dotless = type("Dotless", (Toy,), {"suffixes": ("csv",)})()
    with pytest.raises(
        TypeError, match=r"its suffixes must be a tuple of suffixes such as \(\"\.csv\",\), got \('csv',\)"
    ):
        loopnb.register_format(dotless)
    nameless = type("Nameless", (Toy,), {"name": ""})()
    with pytest.raises(TypeError, match="its name must be a non-empty str, got ''"):
        loopnb.register_format(nameless)
    assert [fmt.name for fmt in loopnb.formats()][-1] == "pydantic-ai"  # none of them was added


def test_unregistering_removes_the_format_and_only_it(tmp_path):
    path = _toy_file(tmp_path / "run.csv", *LINES)
    unregister = loopnb.register_format(Toy())
    assert len(loopnb.load(path).turns) == 2
    unregister()
    unregister()  # gone already: nothing happens
    assert [fmt.name for fmt in loopnb.formats()] == ["jsonl", "parquet", *SHIPPED]
    with pytest.raises(RecordingError, match="not a recording loopnb knows"):
        loopnb.load(path)


def test_a_read_that_returns_no_recording_is_named(tmp_path):
    liar = type("Liar", (Toy,), {"name": "liar", "read": lambda self, path, *, errors: "turns"})()
    unregister = loopnb.register_format(liar)
    try:
        with pytest.raises(
            TypeError, match=r"^format 'liar' read .*run\.csv as a str, not a loopnb\.Recording$"
        ):
            loopnb.load(_toy_file(tmp_path / "run.csv", *LINES), format="liar")
    finally:
        unregister()


def test_a_registered_formats_marks_feed_the_disagreements(toy, tmp_path):
    rec = loopnb.load(
        _toy_file(tmp_path / "run.csv", "1,soft,tool_error,An error occurred. Please try again.")
    )
    rows = loopnb.audit(rec).disagreements()
    assert rows[["turn", "source_status", "reason"]].values.tolist() == [
        [1, "toy:soft", "error_text_names_nothing"]
    ]


def test_convert_writes_with_the_format_that_has_the_suffix(tmp_path, capsys):
    src = _toy_file(tmp_path / "run.csv", *LINES)
    unregister = loopnb.register_format(WritableToy())
    try:
        assert main(["convert", str(src), str(tmp_path / "run.jsonl")]) == 0
        assert main(["convert", str(tmp_path / "run.jsonl"), str(tmp_path / "back.csv")]) == 0
        assert main(["convert", str(src), str(tmp_path / "run.txt")]) == 2
    finally:
        unregister()
    assert (tmp_path / "back.csv").read_text(encoding="utf-8") == "\n".join([HEADER, *LINES]) + "\n"
    wanted = "give DST a .jsonl or .parquet or .csv suffix (it picks the format)"
    assert capsys.readouterr().err == f"loopnb convert: error: {tmp_path / 'run.txt'}: {wanted}\n"


def test_no_page_is_written_over_a_registered_formats_file(toy, tmp_path):
    path = _toy_file(tmp_path / "run.csv", *LINES)
    with pytest.raises(
        RecordingError, match=r"run\.csv: is a loopnb recording: a report is never written over one"
    ):
        loopnb.load(path).to_html(path)
    assert path.read_text(encoding="utf-8").startswith(HEADER)


@pytest.mark.parametrize(
    "path", sorted(p for p in (GOLDEN / "foreign").glob("*/*") if p.is_file()), ids=lambda p: p.name
)
def test_every_golden_is_claimed_by_exactly_one_format(path):
    """The order formats are tried in decides nothing on the files loopnb knows."""
    head = path.read_bytes()[: 1 << 16]
    assert [fmt.name for fmt in loopnb.formats() if fmt.sniff(head, path)] == [path.parent.name]


def test_a_torn_last_line_warns_at_the_caller_of_load(tmp_path):
    recorder = Recorder(tmp_path / "torn.jsonl")
    loopnb.Engine(loopnb.ScriptedModel(["done"]), observers=[recorder]).run("task")
    recorder.close()
    with (tmp_path / "torn.jsonl").open("a", encoding="utf-8") as f:
        f.write('{"kind": "turn_sta')
    with pytest.warns(RecordingWarning, match="torn last line left out") as caught:
        loopnb.load(tmp_path / "torn.jsonl")
    assert caught[0].filename == __file__


def test_listing_the_formats_imports_no_framework_and_no_pandas():
    heavy = [
        "pandas",
        "pydantic_ai",
        "inspect_ai",
        "agents",
        "opentelemetry",
        "langgraph",
        "msgpack",
        "zstandard",
    ]
    probe = f"import sys, loopnb; loopnb.formats(); print([m for m in {heavy!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_recording_layer_never_imports_the_formats_layer():
    """Layers import downward only: not even a function of ``loopnb/record`` imports ``loopnb.foreign``."""
    upward = []
    for path in sorted((ROOT / "record").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            upward += [f"{path.name}:{node.lineno}" for n in names if n.startswith("loopnb.foreign")]
    assert upward == []
