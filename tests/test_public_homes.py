"""Public names have a public home: what reprs, tracebacks, type hints, pydantic and pickles make of it.

Every class and function a public package exports reports a public module (``loopnb.Retry``, never
``loopnb.engine._recovery.Retry``); ``tests/test_public_api.py`` checks each name. Here: the
things that read ``__module__`` still work: ``typing.get_type_hints`` and pydantic resolve a
class's annotations, the events' JSON round trip holds, and a pickle made in one process names
only public paths and loads in another.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import pickle
import pickletools
import subprocess
import sys
import traceback
import typing
from pathlib import Path

import pydantic
import pytest

import loopnb
from loopnb import (
    AskUser,
    Fail,
    Message,
    ModelReply,
    Retry,
    Skip,
    ToolCall,
    ToolError,
    ToolResult,
    ToolSpec,
    Usage,
    scenarios,
)
from loopnb.engine._events import EVENT_TYPES, Event

from .test_public_api import PACKAGES, PUBLIC_MODULES

ROOT = Path(__file__).resolve().parents[1]


def _python(code: str) -> str:
    """Run ``code`` in a fresh interpreter at the repository's root; its standard output."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return out.stdout


def _public_classes() -> list[type]:
    found: dict[str, type] = {}
    for package in PACKAGES:
        module = importlib.import_module(package)
        for name in module.__all__:
            value = getattr(module, name)
            if isinstance(value, type):
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return [found[key] for key in sorted(found)]


def test_a_class_prints_as_loopnb_names_it():
    assert _python("import loopnb; print(loopnb.Retry)").strip() == "<class 'loopnb.Retry'>"
    assert _python("import loopnb; print(loopnb.Recorder)").strip() == "<class 'loopnb.Recorder'>"


def test_a_traceback_names_the_public_path():
    assert traceback.format_exception_only(ToolError("file x not found")) == [
        "loopnb.ToolError: file x not found\n"
    ]
    warning = traceback.format_exception_only(loopnb.RecordingWarning("torn line"))
    assert warning == ["loopnb.RecordingWarning: torn line\n"]


@pytest.mark.parametrize("cls", _public_classes(), ids=lambda cls: cls.__qualname__)
def test_the_type_hints_of_every_public_class_resolve(cls):
    """``get_type_hints`` evaluates a class's annotations in ``sys.modules[cls.__module__]``."""
    hints = typing.get_type_hints(cls, include_extras=True)
    assert set(inspect.get_annotations(cls)) <= set(hints)
    assert not [name for name, hint in hints.items() if isinstance(hint, str | typing.ForwardRef)]


def test_a_message_field_keeps_its_literal_type():
    assert typing.get_type_hints(ToolResult)["producer"] == typing.get_type_hints(Message)["producer"]
    assert typing.get_args(typing.get_type_hints(ModelReply)["role"]) == ("assistant",)


MESSAGES = [
    ToolCall("read_file", {"path": "src/main.rs"}, id="c1"),
    ToolResult("file src/mian.rs not found", is_error=True, name="read_file", producer="tool_error"),
    ModelReply(text="done", tool_calls=(ToolCall("t", {}),), model="m", usage=Usage(3, 4)),
    Message(role="user", content="What does src/main.rs do?"),
    Usage(1, 2),
    ToolSpec(name="read_file", description="Read a file."),
    Retry({"path": "src/main.rs"}, delay=0.5, note="typo"),
    Skip("gave up"),
    AskUser("which file?"),
    Fail(),
]


@pytest.mark.parametrize("value", MESSAGES, ids=lambda v: type(v).__name__)
def test_a_type_adapter_built_after_import_validates_and_dumps(value):
    """pydantic resolves a class's fields in ``sys.modules[cls.__module__]``, now ``loopnb``."""
    adapter = pydantic.TypeAdapter(type(value))
    assert adapter.validate_python(adapter.dump_python(value)) == value
    assert adapter.validate_json(adapter.dump_json(value)) == value


def test_the_events_of_a_run_round_trip_through_json_with_a_fresh_adapter():
    outcome = scenarios.get("mistyped_path").run()
    fresh: pydantic.TypeAdapter[Event] = pydantic.TypeAdapter(Event)
    assert {type(e) for e in outcome.events} > {EVENT_TYPES[0], EVENT_TYPES[-1]}
    for event in outcome.events:
        assert fresh.validate_json(loopnb.EVENT_ADAPTER.dump_json(event)) == event
        assert loopnb.EVENT_ADAPTER.validate_json(fresh.dump_json(event)) == event


def test_a_dataclass_field_holds_the_type_its_annotation_names():
    fields = {f.name: f.type for f in dataclasses.fields(ToolResult)}
    assert fields["producer"] == typing.get_type_hints(ToolResult)["producer"]


MAKE = """
import pickle, sys
import loopnb
from loopnb import (
    AskUser, Cancelled, ContextExceeded, Engine, Fail, FallbackExhausted, LoopDetected, LoopnbWarning,
    Message, ModelAuthError, ModelContextOverflow, ModelReply, ModelUnavailable, Retry, ScriptedModel,
    Skip, ToolCall, ToolError, ToolRecoveryExhausted, ToolResult, ToolSpec, Usage, UserInputRequired,
)

run = Engine(ScriptedModel(["It prints nothing."])).run("What does src/main.rs do?")
values = [
    ToolError("file x not found"),
    ModelUnavailable("503", status=503, retry_after=2.5),
    ModelContextOverflow("too long", status=400),
    ModelAuthError("401", status=401, env_var="OPENAI_API_KEY"),
    Cancelled("stop", run=run),
    ContextExceeded("too big", run=run),
    LoopDetected("loop", run=run),
    UserInputRequired("ask", run=run),
    ToolRecoveryExhausted("ceiling", attempts=6, run=run),
    FallbackExhausted("spent", env_var="ANTHROPIC_API_KEY", run=run),
    LoopnbWarning("observer detached"),
    loopnb.RecordingError("not JSON", path="run.jsonl", line=3),
    loopnb.RecordingWarning("torn last line"),
    Retry({"path": "src/main.rs"}, delay=0.5), Skip("no"), AskUser("which?"), Fail("stop"),
    ToolCall("read_file", {"path": "a"}, id="c1"),
    ToolResult("not found", is_error=True, producer="tool_error"),
    ModelReply(text="hi", usage=Usage(1, 2)), Message(role="user", content="task"),
    ToolSpec(name="t"), run,
    loopnb.SweepConfig("terse", scenario="mistyped_path", error_text={"read_file": "failed"}),
]
sys.stdout.buffer.write(pickle.dumps(values))
"""

SUMMARY = """
def summary(value):
    kind = type(value)
    shown = (str(value), sorted(vars(value).items())) if isinstance(value, BaseException) else value
    return f"{kind.__module__}.{kind.__qualname__} {shown!r}"
"""


def _pickled() -> bytes:
    out = subprocess.run([sys.executable, "-c", MAKE], capture_output=True, cwd=ROOT, check=True)
    return out.stdout


def _globals(data: bytes) -> set[str]:
    """Every ``module.name`` a pickle refers to (protocol 3 spells each as one GLOBAL)."""
    return {arg.replace(" ", ".") for op, arg, _ in pickletools.genops(data) if op.name == "GLOBAL"}


def test_a_pickle_made_in_one_process_loads_in_a_fresh_one(tmp_path):
    path = tmp_path / "values.pickle"
    path.write_bytes(_pickled())
    namespace: dict[str, typing.Any] = {}
    exec(SUMMARY, namespace)
    expected = [namespace["summary"](v) for v in pickle.loads(path.read_bytes())]
    load = f"import json, pickle\n{SUMMARY}\nvalues = pickle.loads(open({str(path)!r}, 'rb').read())\n"
    got = json.loads(_python(load + "print(json.dumps([summary(v) for v in values]))"))
    assert got == expected
    assert {line.split(" ", 1)[0].rsplit(".", 1)[0] for line in got} == {"loopnb"}


def test_a_pickle_names_only_public_modules():
    made = pickle.loads(_pickled())
    named = set().union(*(_globals(pickle.dumps(value, protocol=3)) for value in made))
    ours = {name.rsplit(".", 1)[0] for name in named if name.startswith("loopnb")}
    assert ours == {"loopnb"}, sorted(named)
    assert ours <= PUBLIC_MODULES
