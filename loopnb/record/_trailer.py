"""The events of a Parquet recording: their JSON lines, compressed, between the row groups and the footer.

A Parquet file is ``PAR1``, its column chunks, then its footer (the schema, the key-value metadata
and where every column chunk is), the footer's length and ``PAR1``. A reader finds the footer from
the end of the file and every chunk from the footer, so bytes between the last chunk and the
footer are skipped by every reader (Parquet keeps its page indexes and bloom filters there too).
The events' lines go there: no query over the table sees them, the footer stays small (opening
a file of a million turns reads a few kilobytes of footer, not the events' tens of megabytes), and
the recording stays one file.

The lines are zstd-compressed in parts of at most ``PART_BYTES`` each, laid end to end, ending
where the footer begins; the header in the metadata lists each part as ``[compressed bytes,
bytes, lines]`` (``event_parts``) with the CRC-32 of them all (``event_crc32``), so that a file
rewritten by another tool (which keeps the table and may keep the metadata, never these bytes) is
told apart from a recording.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from loopnb.record._errors import RecordingError

PART_BYTES = 32 * 1024 * 1024
"""The most bytes of event lines one part holds before compression."""

_CODEC = "zstd"


def compressed_parts(lines: Iterable[Sequence[str]], pa: Any) -> Iterator[tuple[bytes, int, int]]:
    """The event lines (given in chunks) in compressed parts: ``(part, bytes before, lines)``."""
    codec = pa.Codec(_CODEC)
    batch: list[bytes] = []
    size = 0

    def part() -> tuple[bytes, int, int]:
        raw = b"\n".join(batch)
        return codec.compress(raw, asbytes=True), len(raw), len(batch)

    for chunk in lines:
        for line in chunk:
            data = line.encode()
            batch.append(data)
            size += len(data) + 1
            if size >= PART_BYTES:
                yield part()
                batch, size = [], 0
    if batch:
        yield part()


def _footer(f: Any) -> tuple[int, bytes]:
    """Where the footer of the Parquet file ``f`` begins, and the footer with its length and
    ``PAR1``; a ``ValueError`` when ``f`` does not end as a Parquet file does."""
    size = f.seek(0, os.SEEK_END)
    if size < 12:
        raise ValueError("too short to be a Parquet file")
    f.seek(size - 8)
    tail = f.read(8)
    length = int.from_bytes(tail[:4], "little")
    if tail[4:] != b"PAR1" or length > size - 12:
        raise ValueError("it does not end as a Parquet file does")
    start = size - 8 - length
    f.seek(start)
    return start, f.read(length) + tail


def insert_before_footer(path: Path, parts: Sequence[bytes]) -> None:
    """Put ``parts`` into the Parquet file at ``path`` (just written) between its column chunks and
    its footer: the footer moves down, and every offset in it still points where it did."""
    with path.open("r+b") as f:
        start, footer = _footer(f)
        f.seek(start)
        for part in parts:
            f.write(part)
        f.write(footer)


def crc32(parts: Iterable[bytes]) -> int:
    """The CRC-32 of ``parts`` laid end to end."""
    value = 0
    for part in parts:
        value = zlib.crc32(part, value)
    return value


def check_parts(header: dict[str, Any], path: Path) -> list[tuple[int, int, int]]:
    """The header's ``event_parts``, checked to be ``[compressed, bytes, lines]`` counts."""
    parts = header.get("event_parts")
    crc = header.get("event_crc32")
    if (
        not isinstance(parts, list)
        or not all(
            isinstance(p, list) and len(p) == 3 and all(type(v) is int and v >= 0 for v in p) for p in parts
        )
        or type(crc) is not int
    ):
        raise RecordingError(
            "the header's event_parts must be a list of [compressed bytes, bytes, lines] counts and "
            f"event_crc32 a number, found {parts!r} and {crc!r}"[:300],
            path=path,
        )
    return [(z, raw, n) for z, raw, n in parts]


def read_parts(path: Path, parts: list[tuple[int, int, int]], crc: int) -> bytes:
    """The events' compressed parts, laid end to end as they are before the footer of the
    Parquet file at ``path``, checked against their CRC-32."""
    total = sum(z for z, _, _ in parts)
    try:
        with path.open("rb") as f:
            start, _ = _footer(f)
            if start - total < 4:
                raise ValueError("the file is shorter than its events")
            f.seek(start - total)
            data = f.read(total)
    except OSError as exc:
        raise RecordingError(f"cannot read the events: {exc.strerror or exc}", path=path) from exc
    except ValueError as exc:
        raise RecordingError(f"cannot read the events: {exc}", path=path) from exc
    if zlib.crc32(data) != crc:
        raise RecordingError(
            "the events are not where the header says (their checksum differs): the file was "
            "rewritten by a tool that kept the table but not the events loopnb keeps before the "
            "footer, or it is damaged",
            path=path,
        )
    return data


def read_lines(path: Path, parts: list[tuple[int, int, int]], crc: int, pa: Any) -> list[bytes]:
    """The events' JSON lines, read from before the footer of the Parquet file at ``path``."""
    data = read_parts(path, parts, crc)
    codec = pa.Codec(_CODEC)
    lines: list[bytes] = []
    offset = 0
    for i, (z, raw, n) in enumerate(parts):
        try:
            text = codec.decompress(data[offset : offset + z], raw, asbytes=True)
        except (ValueError, OSError, pa.ArrowException) as exc:
            raise RecordingError(f"the events' part {i} cannot be read: {exc}", path=path) from exc
        offset += z
        part = text.split(b"\n") if n else []
        if len(part) != n:
            raise RecordingError(
                f"the events' part {i} holds {len(part)} lines, the header says {n}", path=path
            )
        lines.extend(part)
    return lines
