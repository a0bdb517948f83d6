"""The committed goldens of every format loopnb reads, edited by hostile values (``hostile_tree``).

Each golden is decoded into a tree: a JSON document, the values of a JSON Lines file (or printed
one after another), the JSON members of an Inspect ``.eval`` zip, the rows and header of a Parquet
file, the cells of a LangGraph database with its msgpack and JSON blobs decoded (ext types as
``Box``es). Edited, it is written back in the golden's own encoding, so that the reader sees what a
damaged file of its format would hold; a store that cannot hold a value gets the nearest it can
(2**64 - 1 in msgpack, 2**63 - 1 in SQLite, a lone surrogate as invalid UTF-8 in both, a column
as JSON text in Parquet).
"""

from __future__ import annotations

import io
import json
import sqlite3
import struct
import zipfile
import zlib
from functools import cached_property
from pathlib import Path
from typing import Any

import msgpack  # type: ignore[import-untyped]
import pyarrow as pa
import pyarrow.parquet as pq
import zstandard

from .hostile_tree import (
    BIG,
    DEPTH,
    JSON_TEXT,
    Box,
    Codec,
    Hostile,
    JsonDoc,
    Path_,
    Values,
    boxed_text,
    child,
    embedded,
    json_text,
    nodes,
    replaced,
)

GOLDEN = Path(__file__).resolve().parents[1] / "golden"

_PACK = msgpack.Packer(use_bin_type=True, unicode_errors="surrogatepass")
MSGPACK: dict[str, bytes] = {
    "null": _PACK.pack(None),
    "2**70": _PACK.pack(2**64 - 1),
    "-2**70": _PACK.pack(-(2**63)),
    "1e308": _PACK.pack(1e308),
    "NaN": _PACK.pack(float("nan")),
    "Infinity": _PACK.pack(float("inf")),
    "-Infinity": _PACK.pack(float("-inf")),
    "1e400": _PACK.pack(float("inf")),
    '""': _PACK.pack(""),
    "[]": _PACK.pack([]),
    "{}": _PACK.pack({}),
    "lone surrogate": _PACK.pack("\ud800"),  # a str of invalid UTF-8
    "100 KB string": _PACK.pack(BIG),
    "deep list": b"\x91" * DEPTH + b"\xc0",
    "deep object": b"\x81\xa1a" * DEPTH + b"\xc0",
}
"""Every hostile value as msgpack bytes (what LangGraph's blobs hold)."""

_CELL: dict[str, Any] = {
    "null": None,
    "2**70": 2**63 - 1,
    "-2**70": -(2**63),
    "1e308": 1e308,
    "NaN": float("nan"),  # SQLite keeps it as NULL
    "Infinity": float("inf"),
    "-Infinity": float("-inf"),
    "1e400": float("inf"),
    '""': "",
    "[]": "[]",
    "{}": "{}",
    "100 KB string": BIG,
    "deep list": JSON_TEXT["deep list"],
    "deep object": JSON_TEXT["deep object"],
}
"""Every hostile value as a SQLite cell (the lone surrogate is bytes cast to TEXT, see ``_cell``)."""

_PYTHON: dict[str, Any] = {
    **_CELL,
    "2**70": 2**70,
    "-2**70": -(2**70),
    "[]": [],
    "{}": {},
    "lone surrogate": "\ud800",
}
"""Every hostile value as a Python value for a Parquet column (a column that cannot hold it is
written as JSON text)."""


class EvalZip(Codec):
    """An Inspect ``.eval`` zip: its JSON members, written back zstandard-compressed (method 93)."""

    def decode(self, path: Path) -> Any:
        members = _zip_members(path.read_bytes())
        return {name: embedded(json.loads(data)) for name, data in members.items()}

    def roots(self, doc: Any) -> list[Path_]:
        return [(name,) for name in doc]

    def write(self, doc: Any, source: Path, dest: Path) -> None:
        members = {name: json_text(value).encode() for name, value in doc.items()}
        dest.write_bytes(zstd_zip(members))


def _zip_members(raw: bytes) -> dict[str, bytes]:
    """The uncompressed members of a zip whose members are zstandard-compressed."""
    out = {}
    with zipfile.ZipFile(io.BytesIO(raw)) as zf:
        for info in zf.infolist():
            offset = info.header_offset
            name_len, extra_len = struct.unpack("<HH", raw[offset + 26 : offset + 30])
            start = offset + 30 + name_len + extra_len
            packed = raw[start : start + info.compress_size]
            out[info.filename] = zstandard.ZstdDecompressor().decompressobj().decompress(packed)
    return out


def zstd_zip(members: dict[str, bytes]) -> bytes:
    """A zip of ``members``, each compressed with zstandard as Inspect AI writes them."""
    body, central = bytearray(), bytearray()
    for name, data in members.items():
        packed = zstandard.ZstdCompressor().compress(data)
        crc, encoded = zlib.crc32(data), name.encode()
        fields = struct.pack("<HHHHHIIIHH", 63, 0, 93, 0, 0x21, crc, len(packed), len(data), len(encoded), 0)
        central += (
            b"PK\x01\x02" + struct.pack("<H", 63) + fields + struct.pack("<HHHII", 0, 0, 0, 0, len(body))
        )
        central += encoded
        body += b"PK\x03\x04" + fields + encoded + packed
    end = struct.pack(
        "<4sHHHHIIH", b"PK\x05\x06", 0, 0, len(members), len(members), len(central), len(body), 0
    )
    return bytes(body + central + end)


class ParquetFile(Codec):
    """loopnb's own Parquet: the header in the schema's metadata and every row's cells (a cell
    holding JSON decoded)."""

    def decode(self, path: Path) -> Any:
        table = pq.read_table(path)
        header = json.loads(table.schema.metadata[b"loopnb"])
        return {"meta": embedded(header), "rows": [embedded(row) for row in table.to_pylist()]}

    def roots(self, doc: Any) -> list[Path_]:
        return [("meta",)] + [("rows", i, col) for i, row in enumerate(doc["rows"]) for col in row]

    def write(self, doc: Any, source: Path, dest: Path) -> None:
        schema = pq.read_schema(source)
        columns = [_column([row[f.name] for row in doc["rows"]], f.type) for f in schema]
        table = pa.table(dict(zip(schema.names, columns, strict=True)))
        meta = {**(schema.metadata or {}), b"loopnb": json_text(doc["meta"]).encode()}
        pq.write_table(table.replace_schema_metadata(meta), dest)


def _python(value: Any) -> Any:
    if isinstance(value, Hostile):
        return _PYTHON[value.kind]
    if isinstance(value, Box):
        return boxed_text(value)
    if isinstance(value, dict | list):
        return json.loads(json_text(value))
    return value


def _column(values: list[Any], type_: pa.DataType) -> pa.Array:
    """``values`` as a column of ``type_``, else of the type pyarrow infers for them (a scalar
    type), else as JSON text."""
    cells = [_python(v) for v in values]
    for attempt in (type_, None):
        try:
            array = pa.array(cells, type=attempt)
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            continue
        if attempt is not None or pa.types.is_primitive(array.type) or pa.types.is_string(array.type):
            return array
    return pa.array([None if v is None else json_text(v) for v in values], type=pa.large_string())


class LangGraphDb(Codec):
    """A LangGraph SQLite database: every cell of ``checkpoints`` and ``writes``, msgpack and
    JSON blobs decoded (ext types as ``Box``es)."""

    def decode(self, path: Path) -> Any:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            doc = {}
            for table in ("checkpoints", "writes"):
                cursor = conn.execute(f"SELECT * FROM {table}")
                names = [d[0] for d in cursor.description]
                doc[table] = [_decoded_row(dict(zip(names, row, strict=True))) for row in cursor]
            schema = {t: conn.execute(f"PRAGMA table_info({t})").fetchall() for t in doc}
        finally:
            conn.close()
        return {"tables": doc, "schema": schema}

    def roots(self, doc: Any) -> list[Path_]:
        tables = doc["tables"]
        return [
            ("tables", t, i, col) for t, rows in tables.items() for i, row in enumerate(rows) for col in row
        ]

    def write(self, doc: Any, source: Path, dest: Path) -> None:
        conn = sqlite3.connect(dest)
        try:
            for table, rows in doc["tables"].items():
                columns = [(c[1], c[2]) for c in doc["schema"][table]]
                conn.execute(f"CREATE TABLE {table} ({', '.join(f'{n} {t}' for n, t in columns)})")
                for row in rows:
                    cells = [_cell(row[name]) for name, _ in columns]
                    marks = ", ".join(sql for sql, _ in cells)
                    conn.execute(f"INSERT INTO {table} VALUES ({marks})", [v for _, v in cells])
            conn.commit()
        finally:
            conn.close()


def _decoded_row(row: dict[str, Any]) -> dict[str, Any]:
    for column in ("checkpoint", "value", "metadata"):
        blob = row.get(column)
        if not isinstance(blob, bytes) or not blob:
            continue
        kind = row.get("type") if column != "metadata" else "json"
        if kind == "msgpack":
            row[column] = Box("msgpack", embedded(_unpacked(blob)))
        elif kind == "json":
            row[column] = Box("json", embedded(json.loads(blob)))
    return row


def _unpacked(blob: bytes) -> Any:
    def ext(code: int, data: bytes) -> Box:
        return Box(code, _unpacked(data))

    return msgpack.unpackb(blob, ext_hook=ext, raw=False, strict_map_key=False)


def packed(node: Any) -> bytes:
    """``node`` as msgpack, a hostile value as ``MSGPACK`` says, a ``Box`` as an ext type."""
    if isinstance(node, Hostile):
        return MSGPACK[node.kind]
    if isinstance(node, Box) and isinstance(node.tag, int):
        return bytes(_PACK.pack(msgpack.ExtType(node.tag, packed(node.value))))
    if isinstance(node, Box):
        return bytes(_PACK.pack(boxed_text(node)))
    if isinstance(node, dict):
        return _PACK.pack_map_header(len(node)) + b"".join(packed(k) + packed(v) for k, v in node.items())
    if isinstance(node, list):
        return _PACK.pack_array_header(len(node)) + b"".join(packed(v) for v in node)
    return bytes(_PACK.pack(node))


def _cell(value: Any) -> tuple[str, Any]:
    """A SQLite cell: the SQL that stores it and its parameter."""
    if isinstance(value, Hostile):
        if value.kind == "lone surrogate":
            return "CAST(? AS TEXT)", "\ud800".encode("utf-8", "surrogatepass")
        return "?", _CELL[value.kind]
    if isinstance(value, Box):
        return "?", packed(value.value) if value.tag == "msgpack" else boxed_text(value).encode()
    if isinstance(value, dict | list):
        return "?", json_text(value)
    return "?", value


class Golden:
    """A committed golden file, the format ``loopnb.load`` reads it as, and its tree."""

    def __init__(self, relative: str, format: str, codec: Codec) -> None:
        self.path = GOLDEN / relative
        self.name = relative
        self.format = format
        self.codec = codec

    def __repr__(self) -> str:
        return f"Golden({self.name!r})"

    @cached_property
    def doc(self) -> Any:
        return self.codec.decode(self.path)

    @cached_property
    def paths(self) -> list[Path_]:
        """Every node edits may replace, in document order."""
        out: list[Path_] = []
        for root in self.codec.roots(self.doc):
            node = self.doc
            for key in root:
                node = child(node, key)
            out.extend(nodes(node, root))
        return out

    def edited(self, edits: list[tuple[int, str]]) -> Any:
        """The tree with node ``paths[i]`` replaced by hostile value ``kind``, for each edit."""
        doc = self.doc
        for index, kind in edits:
            doc = replaced(doc, self.paths[index], Hostile(kind))
        return doc

    def write(self, edits: list[tuple[int, str]], folder: Path) -> Path:
        """The golden with ``edits`` applied, written into ``folder`` under its own file name."""
        dest = folder / self.path.name
        dest.unlink(missing_ok=True)
        self.codec.write(self.edited(edits), self.path, dest)
        return dest


def _goldens() -> dict[str, list[Golden]]:
    lines, doc = Values(), JsonDoc()
    own = [
        Golden(f"{v}/{p.name}", "loopnb", lines)
        for v in ("v1", "v2")
        for p in sorted((GOLDEN / v).glob("*.jsonl"))
    ]
    parquet = [
        Golden(f"parquet-v1-layout/{p.name}", "loopnb", ParquetFile())
        for p in sorted((GOLDEN / "parquet-v1-layout").glob("*.parquet"))
    ]
    foreign = "foreign"
    return {
        "loopnb-jsonl": own,
        "loopnb-parquet": parquet,
        "pydantic-ai": [
            Golden(f"{foreign}/pydantic-ai/{p.name}", "pydantic-ai", doc)
            for p in sorted((GOLDEN / foreign / "pydantic-ai").glob("*.json"))
        ],
        "inspect": [
            Golden(f"{foreign}/inspect/notes.json", "inspect", doc),
            Golden(f"{foreign}/inspect/notes.eval", "inspect", EvalZip()),
        ],
        "openai-agents": [
            Golden(f"{foreign}/openai-agents/chat.jsonl", "openai-agents", lines),
            Golden(f"{foreign}/openai-agents/responses.json", "openai-agents", doc),
        ],
        "otlp": [
            Golden(f"{foreign}/otlp/pydantic_ai.otlp.json", "otlp", doc),
            Golden(f"{foreign}/otlp/pydantic_ai.pb.json", "otlp", doc),
            Golden(f"{foreign}/otlp/pydantic_ai_v2.spans.jsonl", "otlp", lines),
            Golden(f"{foreign}/otlp/openinference.otlp.jsonl", "otlp", lines),
            Golden(f"{foreign}/otlp/legacy_genai.console.txt", "otlp", Values(indent=4)),
            Golden(f"{foreign}/otlp/adk.otlp.json", "otlp", doc),
            Golden(f"{foreign}/otlp/langchain.otlp.json", "otlp", doc),
            Golden(f"{foreign}/otlp/agno.otlp.json", "otlp", doc),
            Golden(f"{foreign}/otlp/crewai.otlp.json", "otlp", doc),
            Golden(f"{foreign}/otlp/llamaindex.otlp.json", "otlp", doc),
            Golden(f"{foreign}/otlp/smolagents.otlp.json", "otlp", doc),
            Golden(f"{foreign}/otlp/strands_default.otlp.json", "otlp", doc),
            Golden(f"{foreign}/otlp/strands_latest.otlp.json", "otlp", doc),
        ],
        "langgraph": [Golden(f"{foreign}/langgraph/threads.sqlite", "langgraph", LangGraphDb())],
    }


GOLDENS: dict[str, list[Golden]] = _goldens()
"""Every committed golden loopnb reads, by format."""


def unlisted() -> list[Path]:
    """Golden files no entry of ``GOLDENS`` covers (the test that every one is fuzzed)."""
    covered = {g.path for goldens in GOLDENS.values() for g in goldens}
    found = {p for p in GOLDEN.rglob("*") if p.is_file() and p.suffix != ".py"}
    return sorted(found - covered)
