"""Which framework wrote a file, told from its first bytes (no parsing of the whole, no imports).

Each sniffer answers for one format (its reader's ``FORMAT`` names it) and looks only for what
that format always has near its start; the readers check the rest and say what is wrong when a
file sniffed right is damaged.
"""

from __future__ import annotations

import re
from pathlib import Path

from loopnb.foreign._formats import HEAD_BYTES

_SQLITE = b"SQLite format 3\x00"
_ZIP = b"PK\x03\x04"


def _opening(head: bytes) -> bytes:
    """``head`` without a byte-order mark and leading white space."""
    return head.removeprefix(b"\xef\xbb\xbf").lstrip()


def pydantic_ai(head: bytes, path: Path) -> bool:
    """A JSON list of messages, each ``{"parts": [...], ..., "kind": "request" | "response"}``;
    or one whose first part's ``content`` (a long prompt) runs past the head: pydantic-ai writes
    ``parts`` first and a prompt part's ``content`` first."""
    start = _opening(head)
    return start.startswith(b"[") and (
        (
            re.search(rb'"kind"\s*:\s*"(request|response)"', start) is not None
            and re.search(rb'"part_kind"\s*:', start) is not None
        )
        or re.match(rb'\[\s*\{\s*"parts"\s*:\s*\[\s*\{\s*"content"\s*:', start) is not None
    )


def inspect(head: bytes, path: Path) -> bool:
    """An Inspect AI log: a ``.eval`` zip (its members ``header.json``, ``samples/...``,
    ``_journal/start.json``), or a ``.json`` log object with ``eval`` and ``version`` keys."""
    if head.startswith(_ZIP):
        return b"_journal/" in head or b"header.json" in head or b"samples/" in head
    start = _opening(head)
    return (
        start.startswith(b"{")
        and re.search(rb'"eval"\s*:\s*\{', start) is not None
        and re.search(rb'"(version|status)"\s*:', start) is not None
        and b'"task"' in start
    )


def openai_agents(head: bytes, path: Path) -> bool:
    """OpenAI Agents SDK exports: objects with ``"object": "trace"`` or ``"trace.span"``, one a
    line or in a JSON list."""
    start = _opening(head)
    return start[:1] in (b"{", b"[") and re.search(rb'"object"\s*:\s*"trace(\.span)?"', start) is not None


def otlp(head: bytes, path: Path) -> bool:
    """OTLP/JSON (``resourceSpans``, either JSON encoding), or a list of SDK ``span.to_json()``
    dicts (``context`` with ``trace_id``, ``kind`` ``SpanKind.*``)."""
    start = _opening(head)
    if start.startswith(b"{") and re.search(rb'"resource_?[sS]pans"\s*:', start):
        return True
    return (
        start[:1] in (b"[", b"{")
        and re.search(rb'"trace_id"\s*:', start) is not None
        and re.search(rb'"kind"\s*:\s*"SpanKind\.', start) is not None
    )


def langgraph(head: bytes, path: Path) -> bool:
    """A SQLite database holding LangGraph's ``checkpoints`` table, named in its first pages or,
    for a WAL database a running graph holds open (``SqliteSaver`` turns WAL on), in its ``-wal``
    file's: until SQLite checkpoints the WAL, the main file may hold no table at all."""
    if not head.startswith(_SQLITE):
        return False
    if b"checkpoints" in head:
        return True
    try:
        with open(path.with_name(path.name + "-wal"), "rb") as wal:
            return b"checkpoints" in wal.read(HEAD_BYTES)
    except OSError:  # no WAL beside it
        return False
