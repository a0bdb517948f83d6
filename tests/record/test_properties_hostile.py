"""A hostile world, as a property: models, tools, hooks, done-checks, recovery strategies and
observers that raise every kind of exception and hand back values that cannot be printed or
encoded. Whatever they do, nothing but a ``LoopError`` escapes ``run()``, no run hangs, the
recorder is never detached, every recording (streamed, and saved as JSON Lines and Parquet)
reloads with the same turns, and no secret of the seeded corpus reaches a file.

2,000 examples by default (CI); ``LOOPNB_HYPOTHESIS=nightly`` runs 10,000.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from loopnb import (
    AskUser,
    Engine,
    Fail,
    FakeClock,
    LoopError,
    ModelReply,
    ModelUnavailable,
    Retry,
    Skip,
    ToolCall,
    ToolError,
    ToolResult,
    Usage,
    load,
    tool,
)
from loopnb.engine._errors import LoopnbWarning
from loopnb.record import Recorder
from loopnb.record._errors import RecordingWarning
from loopnb.record._lines import dump_event, parse_event
from loopnb.record._recording import Recording

from .secrets_corpus import CORPUS

_PROFILES = {"ci": 2_000, "nightly": 10_000, "quick": 100}
_PROFILE = os.environ.get("LOOPNB_HYPOTHESIS", "ci")
if _PROFILE not in _PROFILES:
    raise ValueError(f"LOOPNB_HYPOTHESIS={_PROFILE!r}: expected one of {sorted(_PROFILES)}")
EXAMPLES = _PROFILES[_PROFILE]

SECRETS = [entry.secret for entry in CORPUS[:6]]


class Custom(BaseException):
    """A BaseException of the user's own."""


class Unprintable:
    """A value whose ``__str__`` and ``__repr__`` raise."""

    def __str__(self) -> str:
        raise RuntimeError("no str")

    __repr__ = __str__


class Token:
    """Stands for an ``Unprintable`` in a drawn example (hypothesis prints its examples);
    ``_real`` turns it into one before the engine sees it."""

    def __repr__(self) -> str:
        return "Token()"


class UnprintableError(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no str")

    __repr__ = __str__


class UnprintableToolError(ToolError):
    def __str__(self) -> str:
        raise RuntimeError("no str")


KINDS = [
    ValueError,
    RuntimeError,
    ToolError,
    UnprintableError,
    UnprintableToolError,
    SystemExit,
    GeneratorExit,
    Custom,
    asyncio.CancelledError,
    ModelUnavailable,
]

# Lone surrogates as surrogateescape makes them (low ones: two never pair up), and a high one
# only at the very end of a text, where nothing can follow it.
LOW = st.characters(min_codepoint=0xDC00, max_codepoint=0xDFFF)
TEXT = st.builds(
    lambda parts, high: "".join(parts) + high,
    st.lists(
        st.one_of(
            st.text(max_size=6),
            LOW,
            st.sampled_from(SECRETS).map(lambda secret: f" {secret} "),  # a token stands apart
            st.just("\\udcff"),
            st.just('"\\\n'),
        ),
        max_size=4,
    ),
    st.sampled_from(["", "\ud800"]),
)


class Huge:
    """An int past 4300 digits, as drawn: hypothesis prints its examples, which no such int allows;
    ``_real`` turns it into the int before the engine sees it."""

    def __init__(self, offset: int) -> None:
        self.value = (10**4300 + abs(offset)) * (-1 if offset < 0 else 1)

    def __repr__(self) -> str:
        return f"Huge(10**4300 + {self.value % 1000})"


def _real(value: Any) -> Any:
    """``value`` with every ``Huge`` turned into its int."""
    if isinstance(value, Huge):
        return value.value
    if isinstance(value, Token):
        return Unprintable()
    if isinstance(value, list):
        return [_real(v) for v in value]
    if isinstance(value, dict):
        return {k: _real(v) for k, v in value.items()}
    if isinstance(value, ToolCall):
        return ToolCall(value.name, _real(value.arguments))
    if isinstance(value, Retry) and value.corrected_input is not None:
        return dataclasses.replace(value, corrected_input=_real(value.corrected_input))
    if isinstance(value, ModelReply) and isinstance(value.text, Token):
        return dataclasses.replace(value, text=Unprintable())  # type: ignore[arg-type]
    return value


HUGE = st.builds(Huge, st.integers(-100, 100))
VALUE = st.one_of(
    TEXT,
    HUGE,
    st.integers(-(2**70), 2**70),
    st.floats(),
    st.none(),
    st.builds(Token),
    st.lists(TEXT, max_size=2),
    st.dictionaries(TEXT, st.one_of(TEXT, HUGE, st.builds(Token)), max_size=2),
)
RAISE = st.tuples(st.just("raise"), st.sampled_from(KINDS), TEXT)
TOOL_STEP = st.one_of(
    st.tuples(st.just("return"), VALUE),
    st.tuples(st.just("result"), st.one_of(TEXT, HUGE, st.builds(Token)), st.booleans()),
    RAISE,
)
ARGUMENTS = st.one_of(
    st.dictionaries(st.just("x"), VALUE, max_size=1),
    TEXT,
    st.just([1, 2]),
    st.none(),
    st.just({1: "one"}),
)
CALL = st.builds(
    lambda name, args: ToolCall(name, args), st.sampled_from(["act", "act", "missing"]), ARGUMENTS
)
MODEL_STEP = st.one_of(
    st.lists(CALL, min_size=1, max_size=2),
    TEXT,
    RAISE,
    st.sampled_from(
        [
            ModelReply(text=5),  # type: ignore[arg-type]
            ModelReply(tool_calls=("act",)),  # type: ignore[arg-type]
            ModelReply(text="x", usage=Usage(input_tokens=10**5000)),
            ModelReply(text="x", usage=Usage(1, 2)),
        ]
    ),
)
VERDICT = st.one_of(
    st.none(),
    st.booleans(),
    TEXT,
    st.builds(Token),
    st.tuples(st.just("raise"), st.sampled_from(KINDS)),
)
DECISION = st.one_of(
    st.builds(
        Retry,
        corrected_input=st.one_of(st.none(), st.dictionaries(st.just("x"), VALUE, max_size=1)),
        delay=st.sampled_from([0.0, 1.0, 60.0, 61.0, 1e300, float("inf"), float("nan")]),
        note=st.one_of(st.none(), TEXT),
    ),
    st.builds(Skip, note=st.one_of(st.none(), TEXT)),
    st.builds(AskUser),
    st.builds(Fail, note=st.one_of(st.none(), TEXT)),
    st.builds(Token),
    st.tuples(st.just("raise"), st.sampled_from(KINDS)),
)


def _act(step: Any) -> Any:
    if isinstance(step, tuple) and step and step[0] == "raise":
        raise step[1](*step[2:3])
    return step


class HostileModel:
    """Hands back its script's replies as they are (no normalising) or raises its exceptions;
    past the end, a failure no retry fixes, so the run ends."""

    name = "hostile"

    def __init__(self, script: list[Any]) -> None:
        self.script = iter(script)

    async def complete(self, messages: Any, tools: Any) -> ModelReply:
        step = next(self.script, None)
        if step is None:
            raise ModelUnavailable("script exhausted", retry_after=float("inf"))
        if isinstance(step, str):
            return ModelReply(text=step)
        if isinstance(step, list):
            return ModelReply(tool_calls=tuple(_real(step)))
        return _act(step)  # type: ignore[no-any-return]


def _cycle(items: list[Any]) -> Any:
    state = {"n": 0}

    def next_item() -> Any:
        item = items[state["n"] % len(items)]
        state["n"] += 1
        return _real(_act(item))

    return next_item


class HostileObserver:
    """Raises on the n-th event it sees; its repr raises too."""

    def __init__(self, at: int, kind: type[BaseException]) -> None:
        self.at, self.kind, self.seen = at, kind, 0

    def __call__(self, event: object) -> None:
        self.seen += 1
        if self.seen == self.at:
            raise self.kind("observer failed")

    def __repr__(self) -> str:
        raise RuntimeError("no repr")


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
)
@given(
    script=st.lists(MODEL_STEP, max_size=4),
    tool_steps=st.lists(TOOL_STEP, min_size=1, max_size=3),
    hook=st.one_of(st.none(), st.lists(VERDICT, min_size=1, max_size=2)),
    done=st.one_of(st.none(), st.lists(VERDICT, min_size=1, max_size=2)),
    decisions=st.one_of(st.none(), st.lists(DECISION, min_size=1, max_size=3)),
    observer=st.one_of(st.none(), st.tuples(st.integers(1, 12), st.sampled_from(KINDS))),
)
def test_nothing_escapes_nothing_is_lost_nothing_leaks(script, tool_steps, hook, done, decisions, observer):
    behave = _cycle(tool_steps)

    @tool
    def act(x: Any = None) -> Any:
        """Does what the test says."""
        step = behave()
        if step[0] == "result":
            return ToolResult(_real(step[1]), is_error=step[2])
        return _real(step[1])

    options: dict[str, Any] = {}
    if hook is not None:
        verdicts = _cycle(hook)
        options["hooks"] = [lambda call, ctx: verdicts()]
    if done is not None:
        options["done"] = (lambda answers: lambda text: answers())(_cycle(done))
    if decisions is not None:
        answers = _cycle(decisions)

        class Strategy:
            def decide(self, failure: Any, attempt: int, max_attempts: int) -> Any:
                return answers()

        options["recovery"] = Strategy()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        recorder = Recorder(folder / "streamed.jsonl")
        seen: list[Any] = []
        observers: list[Any] = [seen.append, recorder]
        if observer is not None:
            observers.insert(0, HostileObserver(*observer))
        clock = FakeClock()
        engine = Engine(HostileModel(script), [act], observers=observers, clock=clock, max_turns=6, **options)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with contextlib.suppress(LoopError):  # the only thing allowed to escape
                engine.run("task")
            recorder.close()
        for w in caught:
            assert not issubclass(w.category, RecordingWarning), str(w.message)[:2000]
            if issubclass(w.category, LoopnbWarning):
                assert "Recorder" not in str(w.message), str(w.message)
        assert len(recorder) == len(seen)  # the recorder saw every event: never detached
        assert seen[-1].kind == "run_finished"
        _assert_recorded(recorder, folder)


def _assert_recorded(recorder: Recorder, folder: Path) -> None:
    """Each file reads back the events as written (redacted, by the rules of ``lines``) and the
    recorder's turns; no secret is in a file, its lines or its turns."""
    objects, lines = recorder.exported_events()
    written = [parse_event(line) for line in lines]
    turns = Recording.from_events(objects, meta={}).turns
    saved = [recorder.save(folder / "saved.jsonl"), recorder.save(folder / "saved.parquet")]
    for path in [folder / "streamed.jsonl", *saved]:
        loaded = load(path)
        assert loaded.event_objects == written, path.name
        if not loaded.turns.equals(turns):  # the cheap check; the thorough one says where they differ
            pd.testing.assert_frame_equal(loaded.turns, turns, obj=path.name)
        texts = [path.read_bytes(), "\n".join(map(dump_event, loaded.event_objects)).encode()]
        texts.append("\n".join(loaded.turns["reply_text"].dropna()).encode())  # the turns' only free text
        for secret in SECRETS:
            assert not any(secret.encode() in text for text in texts), (path.name, secret)
