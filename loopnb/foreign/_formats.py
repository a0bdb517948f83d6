"""The formats ``loopnb.load`` reads besides its own, and the readers of objects in memory.

``loopnb.load(path)`` detects the format from the file's content (``format=`` forces one) and
hands it to the reader here; ``from_pydantic_ai``, ``from_inspect``, ``from_otel`` and
``from_openai_agents`` read objects in memory. Each reader writes the source's facts down as
loopnb events (``RunWriter``), tags every turn ok/soft/hard with the table's producers, and keeps
what the source itself said in ``source_status`` (``"<format>:<what it said>"``), so that
``audit(rec).disagreements()`` can show where the two differ. No reader imports its framework
until it is used, and none ever unpickles.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopnb.record._errors import RecordingError

if TYPE_CHECKING:
    from loopnb.record._recording import Recording


@dataclass(frozen=True, slots=True)
class Format:
    """A format ``load`` reads: its name, what it is, and the module whose ``read(path)`` reads it
    (``_sniff.SNIFFERS`` tells it from a file's first bytes)."""

    name: str
    what: str
    module: str


FORMATS: tuple[Format, ...] = (
    Format("loopnb", "loopnb's own recordings (JSON Lines or Parquet)", ""),
    Format(
        "pydantic-ai",
        "a pydantic-ai message history (ModelMessagesTypeAdapter JSON)",
        "loopnb.foreign._pydantic_ai",
    ),
    Format("inspect", "an Inspect AI log (.eval or .json)", "loopnb.foreign._inspect"),
    Format(
        "openai-agents",
        "OpenAI Agents SDK spans and traces (JSON Lines or a JSON list)",
        "loopnb.foreign._openai_agents",
    ),
    Format(
        "otlp",
        "OpenTelemetry spans (OTLP/JSON, protobuf JSON, or SDK span.to_json() dicts)",
        "loopnb.foreign._otlp",
    ),
    Format("langgraph", "a LangGraph SQLite checkpointer database", "loopnb.foreign._langgraph"),
)
"""Every format ``loopnb.load`` reads, loopnb's own first."""

FORMAT_NAMES: tuple[str, ...] = tuple(f.name for f in FORMATS)

HEAD_BYTES = 1 << 16
"""How much of a file the sniffers look at."""


def _module(fmt: Format) -> Any:
    return importlib.import_module(fmt.module)


def _known() -> str:
    return "; ".join(f"{f.name} ({f.what})" for f in FORMATS)


def format_of(path: Path, head: bytes) -> str | None:
    """The foreign format whose sniffer recognises ``head`` (a file's first bytes), or ``None``."""
    from loopnb.foreign._sniff import SNIFFERS

    return next((name for name, sniff in SNIFFERS.items() if sniff(head, path)), None)


def read(path: Path, format: str) -> Recording:
    """The recording in ``path``, read as ``format`` (a name of ``FORMATS`` other than loopnb)."""
    fmt = next((f for f in FORMATS[1:] if f.name == format), None)
    if fmt is None:
        raise RecordingError(f"unknown format {format!r}: loopnb reads {_known()}", path=path)
    recording: Recording = _module(fmt).read(path)
    return recording


def unrecognised(path: Path, why: str) -> RecordingError:
    """The error for a file no reader recognises: what was wrong, and every format loopnb reads."""
    return RecordingError(f"{why}; loopnb reads {_known()} (pass format= to force one)", path=path)


def _reader(module: str, name: str) -> Callable[..., Recording]:
    def call(*args: Any, **kwargs: Any) -> Recording:
        recording: Recording = getattr(importlib.import_module(module), name)(*args, **kwargs)
        return recording

    return call


def from_pydantic_ai(messages: Any, **kwargs: Any) -> Recording:
    """A recording of a pydantic-ai run's messages (``result.all_messages()``, the list
    ``capture_run_messages()`` holds after a failure, or their JSON)."""
    return _reader("loopnb.foreign._pydantic_ai", "from_pydantic_ai")(messages, **kwargs)


def from_inspect(log: Any, **kwargs: Any) -> Recording:
    """A recording of an Inspect AI ``EvalLog`` (one run per sample)."""
    return _reader("loopnb.foreign._inspect", "from_inspect")(log, **kwargs)


def from_otel(spans: Any, **kwargs: Any) -> Recording:
    """A recording of OpenTelemetry SDK spans (``ReadableSpan``s, e.g. an in-memory exporter's)."""
    return _reader("loopnb.foreign._otlp", "from_otel")(spans, **kwargs)


def from_openai_agents(spans: Any, **kwargs: Any) -> Recording:
    """A recording of OpenAI Agents SDK spans and traces (objects, or their ``export()`` dicts)."""
    return _reader("loopnb.foreign._openai_agents", "from_openai_agents")(spans, **kwargs)
