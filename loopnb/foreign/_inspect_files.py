"""Inspect AI log files as plain dicts: a ``.json`` log, or the members of an ``.eval`` zip.

An ``.eval`` log is a zip whose members are JSON, compressed with zstandard (zip method 93, which
``zipfile`` reads only from Python 3.14): the members are located through ``zipfile``'s central
directory and their raw bytes decompressed here (stored and deflated members are read by
``zipfile`` itself; no other method is read, as ``zipfile`` unpacks a bzip2 or LZMA chunk whole).
Only ``header.json`` (or ``_journal/start.json`` for a log still being written) and the
``samples/`` members are read; nothing is ever executed or unpickled.

A member is decompressed a chunk at a time and refused as soon as it passes the size the zip
declares for it, so memory grows with what a member truly holds, never with what a hostile one
unpacks to (a megabyte of zstandard can unpack to tens of gigabytes). JSON nested past Python's
recursion limit is a ``RecordingError`` naming the file or member; a sample member that cannot be
read goes to ``Unread.skip`` (the other samples are read).
"""

from __future__ import annotations

import json
import struct
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from loopnb.foreign._formats import Unread
from loopnb.foreign._transcript import too_deep
from loopnb.record import RecordingError

ZSTD = 93
"""The zip compression method of zstandard."""

_LOCAL_HEADER = struct.Struct("<4s22xHH")
"""A zip local file header: its signature, then (after 22 bytes) the name's and the extra
field's lengths; the member's data follows them."""

_ZIPFILE_READS = frozenset({zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED})
"""The methods whose members ``zipfile`` reads here: it unpacks these a bounded chunk at a time."""

_CHUNK = 1 << 20
"""How many bytes of a member are decompressed at a time."""


def _zstandard() -> Any:
    try:
        import zstandard
    except ImportError as exc:
        raise ImportError(
            "reading an Inspect AI .eval log needs zstandard: pip install 'loopnb[foreign]'"
        ) from exc
    return zstandard


def _loads(data: bytes, path: Path, where: str) -> Any:
    try:
        return json.loads(data)
    except RecursionError as exc:
        raise RecordingError(f"{too_deep(where)}; expected an Inspect AI log", path=path) from exc
    except (ValueError, UnicodeDecodeError) as exc:
        line = getattr(exc, "lineno", None)
        at = f" (line {line}, column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
        raise RecordingError(
            f"{where}{at} is not JSON: {exc}; expected an Inspect AI log", path=path
        ) from exc


def read_json_log(path: Path) -> tuple[dict[str, Any], list[str]]:
    """The log object of a ``.json`` log, and where each sample is in the file."""
    data = path.read_bytes()
    try:
        log = json.loads(data)
    except RecursionError as exc:
        raise RecordingError(f"{too_deep('the log')}; expected an Inspect AI log", path=path) from exc
    except (ValueError, UnicodeDecodeError) as exc:
        line = exc.lineno if isinstance(exc, json.JSONDecodeError) else None
        raise RecordingError(
            f"not JSON ({exc}); expected an Inspect AI log object", path=path, line=line
        ) from exc
    if not isinstance(log, dict):
        raise RecordingError(f"an Inspect AI log is a JSON object, found a {type(log).__name__}", path=path)
    samples = log.get("samples")
    return log, [f"samples[{i}]" for i in range(len(samples))] if isinstance(samples, list) else []


def _bounded(read: Callable[[int], bytes], size: int, where: str, path: Path) -> bytes:
    """All that ``read`` gives, a chunk at a time, refused once it passes ``size`` bytes."""
    chunks: list[bytes] = []
    total = 0
    while chunk := read(min(_CHUNK, size + 1 - total)):
        total += len(chunk)
        if total > size:
            raise RecordingError(
                f"{where} unpacks to more than the {size} bytes the zip declares for it; the zip is"
                " damaged (or built to exhaust memory)",
                path=path,
            )
        chunks.append(chunk)
    return b"".join(chunks)


def _member(zf: zipfile.ZipFile, raw: Any, info: zipfile.ZipInfo, path: Path) -> bytes:
    """The uncompressed bytes of ``info``, its size and CRC checked."""
    where = f"member {info.filename}"
    if info.flag_bits & 0x1:
        raise RecordingError(f"{where} is encrypted; an Inspect AI log never is", path=path)
    if info.compress_type not in _ZIPFILE_READS | {ZSTD}:
        raise RecordingError(
            f"{where} is compressed with zip method {info.compress_type}; an Inspect AI log's members"
            " are zstandard, deflated or stored",
            path=path,
        )
    if info.compress_type != ZSTD:
        try:  # zf.read() would inflate all the compressed bytes at once, whatever they unpack to
            with zf.open(info) as member:
                return _bounded(member.read, info.file_size, where, path)
        except (zipfile.BadZipFile, NotImplementedError, zlib.error, EOFError) as exc:
            raise RecordingError(f"{where} cannot be read: {exc}", path=path) from exc
    raw.seek(info.header_offset)
    head = raw.read(_LOCAL_HEADER.size)
    if len(head) < _LOCAL_HEADER.size or head[:4] != b"PK\x03\x04":
        raise RecordingError(
            f"{where}: no local header at byte {info.header_offset}; the zip is damaged", path=path
        )
    _, name_len, extra_len = _LOCAL_HEADER.unpack(head)
    raw.seek(info.header_offset + _LOCAL_HEADER.size + name_len + extra_len)
    packed = raw.read(info.compress_size)
    if len(packed) != info.compress_size:
        raise RecordingError(f"{where} is cut short ({len(packed)} of {info.compress_size} bytes)", path=path)
    zstandard = _zstandard()
    try:
        with zstandard.ZstdDecompressor().stream_reader(packed) as reader:
            data = _bounded(reader.read, info.file_size, where, path)
    except zstandard.ZstdError as exc:
        raise RecordingError(f"{where} is not valid zstandard data: {exc}", path=path) from exc
    if len(data) != info.file_size or zlib.crc32(data) != info.CRC:
        raise RecordingError(f"{where} does not match its CRC or size; the zip is damaged", path=path)
    return data


def read_eval_log(path: Path, unread: Unread | None = None) -> tuple[dict[str, Any], list[str]]:
    """The log object of an ``.eval`` log (its header, with ``samples`` from its sample members),
    and the member each sample came from; a member that cannot be read goes to ``unread`` (by
    default, raised)."""
    unread = unread or Unread(path=path)
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise RecordingError(
            f"not a readable zip archive ({exc}); expected an Inspect AI .eval log", path=path
        ) from exc
    with zf, path.open("rb") as raw:
        infos = {info.filename: info for info in zf.infolist()}
        head = infos.get("header.json") or infos.get("_journal/start.json")
        if head is None:
            raise RecordingError(
                "no header.json or _journal/start.json member; expected an Inspect AI .eval log", path=path
            )
        log = _loads(_member(zf, raw, head, path), path, f"member {head.filename}")
        if not isinstance(log, dict):
            raise RecordingError(f"member {head.filename} is not a JSON object", path=path)
        samples, members = [], []
        for name, info in infos.items():
            if name.startswith("samples/") and name.endswith(".json"):
                try:
                    sample = _loads(_member(zf, raw, info, path), path, f"member {name}")
                    if not isinstance(sample, dict):
                        raise RecordingError(f"member {name} is not a JSON object (a sample)", path=path)
                except RecordingError as exc:
                    unread.skip(f"member {name}", exc)
                    continue
                samples.append(sample)
                members.append(f"member {name}")
    return {**log, "samples": samples}, members
