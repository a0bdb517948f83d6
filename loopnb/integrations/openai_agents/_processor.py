"""``JsonlProcessor``: every finished span and trace of the OpenAI Agents SDK, one JSON a line.

openai-agents-python#164 asks for a way to keep traces locally; the SDK's processors send them
to OpenAI's servers or the console. This one appends each ``Span.export()`` as the span ends and
each ``Trace.export()`` as the trace ends, flushing every line, so a run killed midway still
leaves whole lines for the spans that finished (``loopnb.load`` skips a torn last line).
"""

from __future__ import annotations

import json
import os
import threading
import warnings
from pathlib import Path
from typing import IO, Any

from loopnb.engine import LoopnbWarning

try:
    from agents.tracing import Span, Trace, TracingProcessor
except ImportError as exc:  # pragma: no cover - the package is an optional dependency
    raise ImportError(
        "loopnb.integrations.openai_agents needs the OpenAI Agents SDK: pip install openai-agents"
    ) from exc


def _plain(value: Any) -> Any:
    """A JSON stand-in for what ``json`` cannot write (a custom span's data may hold anything)."""
    model_dump = getattr(value, "model_dump", None)
    if callable(model_dump):
        return model_dump(mode="json")
    return repr(value)


class JsonlProcessor(TracingProcessor):
    """A tracing processor that appends each finished span's and trace's ``export()`` to a
    JSON Lines file (created with its folder; appended to when it exists). Thread-safe.

    Args:
        path: The file to write.

    Example:
        ``agents.set_trace_processors([JsonlProcessor("traces.jsonl")])``, run agents, then
        ``loopnb.load("traces.jsonl")``: one run per trace.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._file: IO[str] | None = None

    def __repr__(self) -> str:
        return f"JsonlProcessor({str(self.path)!r})"

    def on_trace_start(self, trace: Trace) -> None:
        """Nothing: a trace is written when it ends."""

    def on_trace_end(self, trace: Trace) -> None:
        """Append the trace's export."""
        self._write(trace.export(), f"trace {trace.trace_id}")

    def on_span_start(self, span: Span[Any]) -> None:
        """Nothing: a span is written when it ends, with its output and error."""

    def on_span_end(self, span: Span[Any]) -> None:
        """Append the span's export."""
        self._write(span.export(), f"span {span.span_id}")

    def force_flush(self) -> None:
        """Flush the file (every line is already flushed as it is written)."""
        with self._lock:
            if self._file is not None:
                self._file.flush()

    def shutdown(self) -> None:
        """Close the file; a later span opens it again."""
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def _write(self, item: dict[str, Any] | None, what: str) -> None:
        if item is None:  # a disabled span or trace exports nothing
            return
        try:
            line = json.dumps(item, ensure_ascii=False, separators=(",", ":"), default=_plain)
        except (TypeError, ValueError) as exc:
            warnings.warn(
                f"JsonlProcessor({str(self.path)!r}): {what} left out: {exc}", LoopnbWarning, stacklevel=2
            )
            return
        with self._lock:
            if self._file is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._file = self.path.open("a", encoding="utf-8")
            self._file.write(line + "\n")
            self._file.flush()
