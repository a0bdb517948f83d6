"""Every committed golden of every format loopnb reads, damaged at random: it loads or it says why.

Each example takes a golden (loopnb's JSON Lines and Parquet, pydantic-ai, Inspect ``.json`` and
``.eval``, OpenAI Agents, OTLP in each of its encodings, a LangGraph database), replaces one to three
of its nodes by a hostile value (null, 2**70, 1e308, NaN, Infinity, the text ``1e400``, ``""``,
``[]``, ``{}``, a lone surrogate, a 100 KB string, nesting 5,000 deep: ``golden_mutations.KINDS``),
writes it back in the golden's own encoding and loads it, detected or with ``format=`` forced. Then
``load()`` and the ``turns`` and ``events`` frames either succeed or raise ``RecordingError`` naming
the file (a ``RecordingWarning`` is fine), within 5 s of CPU and 256 MB of Python memory.

2,100 examples in all by default (CI), derandomized so that CI is reproducible;
``LOOPNB_HYPOTHESIS=nightly`` runs five times as many, ``quick`` a tenth.
"""

from __future__ import annotations

import contextlib
import os
import signal
import tracemalloc
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

import loopnb
from loopnb.record import RecordingError, RecordingWarning

from .golden_mutations import GOLDENS, Golden, unlisted
from .hostile_tree import KINDS

_SCALE = {"ci": 1.0, "nightly": 5.0, "quick": 0.1}
_PROFILE = os.environ.get("LOOPNB_HYPOTHESIS", "ci")
if _PROFILE not in _SCALE:
    raise ValueError(f"LOOPNB_HYPOTHESIS={_PROFILE!r}: expected one of {sorted(_SCALE)}")
EXAMPLES = {
    "loopnb-jsonl": 300,
    "loopnb-parquet": 200,
    "pydantic-ai": 300,
    "inspect": 300,
    "openai-agents": 300,
    "otlp": 400,
    "langgraph": 300,
}
"""Examples per format (CI); the formats with more goldens get more."""
CPU_SECONDS = 5.0
PEAK_BYTES = 256 * 2**20


@dataclass(frozen=True)
class Example:
    """A golden, the edits made to it (node index, hostile value), and whether ``load`` is told
    the format or detects it."""

    golden: Golden
    edits: list[tuple[int, str]]
    forced: bool

    def __repr__(self) -> str:
        edits = ", ".join(f"{self.golden.paths[i]!r} -> {kind}" for i, kind in self.edits)
        return f"Example({self.golden.name}, [{edits}], forced={self.forced})"


def examples(goldens: list[Golden]) -> st.SearchStrategy[Example]:
    def of(golden: Golden) -> st.SearchStrategy[Example]:
        edit = st.tuples(st.integers(0, len(golden.paths) - 1), st.sampled_from(KINDS))
        return st.builds(Example, st.just(golden), st.lists(edit, min_size=1, max_size=3), st.booleans())

    return st.sampled_from(goldens).flatmap(of)


class Overran(Exception):
    """The CPU budget of one load ran out."""


@contextlib.contextmanager
def cpu_budget(seconds: float) -> Iterator[None]:
    """Raise ``Overran`` inside the block once it has used ``seconds`` of CPU. A profiling timer,
    so that pytest-timeout's real-time alarm is left alone and a loaded machine does not count."""

    def overran(signum: int, frame: FrameType | None) -> None:
        raise Overran(f"more than {seconds} s of CPU")

    previous = signal.signal(signal.SIGPROF, overran)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


def load_checked(path: Path, format: str | None) -> None:
    """Load ``path`` and build both frames; a ``RecordingError`` must name the file."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RecordingWarning)
        try:
            recording = loopnb.load(path, format=format)
            recording.turns  # noqa: B018  (building the frames is the point)
            recording.events  # noqa: B018
        except RecordingError as exc:
            assert exc.path == str(path), f"the error does not name the file: {exc}"


def check(example: Example, folder: Path) -> None:
    path = example.golden.write(example.edits, folder)
    format = example.golden.format if example.forced else None
    tracemalloc.start()
    try:
        with cpu_budget(CPU_SECONDS):
            load_checked(path, format)
        peak = tracemalloc.get_traced_memory()[1]
    except Overran:
        raise AssertionError(f"loading took more than {CPU_SECONDS} s of CPU") from None
    finally:
        tracemalloc.stop()
    assert peak < PEAK_BYTES, f"loading took {peak / 2**20:.0f} MB at its peak"


@pytest.mark.parametrize("name", list(GOLDENS))
def test_a_damaged_golden_loads_or_raises_recording_error(name: str, tmp_path: Path) -> None:
    @settings(
        max_examples=max(1, round(EXAMPLES[name] * _SCALE[_PROFILE])),
        derandomize=True,
        database=None,
        deadline=None,  # the CPU budget bounds an example, whatever the machine's load
    )
    @given(example=examples(GOLDENS[name]))
    def damaged(example: Example) -> None:
        note(repr(example))  # the edited nodes by path, when an example fails
        check(example, tmp_path)

    damaged()


def test_every_golden_is_fuzzed() -> None:
    assert unlisted() == []
    assert set(EXAMPLES) == set(GOLDENS)
    assert sum(EXAMPLES.values()) >= 2_000


@pytest.mark.parametrize("golden", [g for goldens in GOLDENS.values() for g in goldens], ids=repr)
def test_an_unedited_golden_writes_back_the_same_recording(golden: Golden, tmp_path: Path) -> None:
    """The harness is faithful: decoding a golden and writing it back changes nothing a reader sees."""
    original, written = loopnb.load(golden.path), loopnb.load(golden.write([], tmp_path))
    assert written.turns.equals(original.turns)
    assert written.events.equals(original.events)
