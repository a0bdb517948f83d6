"""Hostile values in a document's tree, for the readers' fuzz (``test_fuzz_goldens.py``).

A document is a tree of dicts, lists and scalars; a string holding a JSON object or list is
decoded in turn into a ``Box`` (an OTLP attribute, a tool call's arguments). An edit replaces one
node by a ``Hostile`` value (``KINDS``), which each store renders as the nearest thing it can hold:
as JSON text here (``NaN`` and ``1e400`` as such, ``"\\ud800"`` as an escape, nesting 5,000 deep as
raw text that no encoder is asked to build). ``golden_mutations`` has the binary stores.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

DEPTH = 5_000
BIG = "x" * 100_000

JSON_TEXT: dict[str, str] = {
    "null": "null",
    "2**70": str(2**70),
    "-2**70": str(-(2**70)),
    "1e308": "1e+308",
    "NaN": "NaN",
    "Infinity": "Infinity",
    "-Infinity": "-Infinity",
    "1e400": "1e400",
    '""': '""',
    "[]": "[]",
    "{}": "{}",
    "lone surrogate": '"\\ud800"',
    "100 KB string": f'"{BIG}"',
    "deep list": "[" * DEPTH + "]" * DEPTH,
    "deep object": '{"a":' * DEPTH + "null" + "}" * DEPTH,
}
"""Every hostile value by name, as the JSON text a reader is given."""

KINDS: tuple[str, ...] = tuple(JSON_TEXT)


@dataclass(frozen=True, slots=True)
class Hostile:
    """A hostile value placed in a tree, rendered by the encoder of the store it lands in."""

    kind: str


@dataclass(frozen=True, slots=True)
class Box:
    """A node whose one child is stored encoded: ``tag`` ``"json"`` or ``"json-compact"`` (JSON
    text in a string or a blob), ``"msgpack"`` (a blob) or an msgpack ext type's code."""

    tag: str | int
    value: Any


Path_ = tuple[Any, ...]


def child(node: Any, key: Any) -> Any:
    return node.value if isinstance(node, Box) else node[key]


def nodes(node: Any, path: Path_) -> Iterator[Path_]:
    yield path
    if isinstance(node, Box):
        yield from nodes(node.value, (*path, "<box>"))
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from nodes(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from nodes(value, (*path, i))


def replaced(node: Any, path: Path_, value: Any) -> Any:
    """``node`` with the node at ``path`` replaced by ``value``; only the nodes on the path are
    copied (an unchanged line or member stays the very same object). A path that an earlier
    edit removed is left alone."""
    if not path:
        return value
    key, rest = path[0], path[1:]
    if isinstance(node, Box):
        return Box(node.tag, replaced(node.value, rest, value))
    if isinstance(node, dict) and key in node:
        return {**node, key: replaced(node[key], rest, value)}
    if isinstance(node, list) and isinstance(key, int) and key < len(node):
        copy = list(node)
        copy[key] = replaced(node[key], rest, value)
        return copy
    return node


def embedded(node: Any) -> Any:
    """``node`` with every string that holds a JSON object or list decoded into a ``Box``."""
    if isinstance(node, dict):
        return {k: embedded(v) for k, v in node.items()}
    if isinstance(node, list):
        return [embedded(v) for v in node]
    if isinstance(node, Box):
        return Box(node.tag, embedded(node.value))
    if isinstance(node, str) and node[:1] in "{[" and node[-1:] in "}]":
        try:
            inner = json.loads(node)
        except ValueError:
            return node
        if isinstance(inner, dict | list) and inner:
            compact = json.dumps(inner, separators=(",", ":")) == node
            return Box("json-compact" if compact else "json", embedded(inner))
    return node


def json_text(node: Any, indent: int | None = None, *, compact: bool = False) -> str:
    """``node`` as JSON text, a hostile value as ``JSON_TEXT`` says, a ``Box`` as a string of
    its child's JSON text."""
    raw: list[str] = []

    def default(value: Any) -> Any:
        if isinstance(value, Hostile):
            raw.append(JSON_TEXT[value.kind])
        elif isinstance(value, Box):
            return boxed_text(value)
        elif isinstance(value, bytes):
            return value.decode("utf-8", "replace")
        elif isinstance(value, datetime):
            return value.isoformat()
        else:
            raise TypeError(f"no JSON for {type(value).__name__}")
        return f"\x00raw{len(raw) - 1}\x00"

    separators = (",", ":") if compact else None
    text = json.dumps(node, indent=indent, separators=separators, default=default)
    return re.sub(r'"\\u0000raw(\d+)\\u0000"', lambda m: raw[int(m[1])], text)


def boxed_text(box: Box) -> str:
    """The JSON text a ``"json"`` box stands for, spaced as the golden's was."""
    return json_text(box.value, compact=box.tag == "json-compact")


class Codec:
    """How one kind of golden is decoded into a tree and written back."""

    def decode(self, path: Path) -> Any:
        raise NotImplementedError

    def roots(self, doc: Any) -> list[Path_]:
        """The nodes that edits may replace, each with everything under it."""
        return [()]

    def write(self, doc: Any, source: Path, dest: Path) -> None:
        raise NotImplementedError


class JsonDoc(Codec):
    """One JSON document (pydantic-ai, Inspect ``.json``, an OTLP export, Agents traces)."""

    def decode(self, path: Path) -> Any:
        return embedded(json.loads(path.read_bytes()))

    def write(self, doc: Any, source: Path, dest: Path) -> None:
        dest.write_text(json_text(doc))


class Values(Codec):
    """JSON values one after another: one a line (``indent=None``), or printed in turn."""

    def __init__(self, indent: int | None = None) -> None:
        self.indent = indent

    def decode(self, path: Path) -> Any:
        text, decoder, out, pos = path.read_text(), json.JSONDecoder(), [], 0
        while (pos := len(text) - len(text[pos:].lstrip())) < len(text):
            value, pos = decoder.raw_decode(text, pos)
            out.append(embedded(value))
        return out

    def roots(self, doc: Any) -> list[Path_]:
        return [(i,) for i in range(len(doc))]

    def write(self, doc: Any, source: Path, dest: Path) -> None:
        dest.write_text("\n".join(json_text(value, self.indent) for value in doc) + "\n")
