"""Hostile Inspect AI logs, built from the committed goldens: each is a ``RecordingError`` naming
the file and the member or sample, read in bounded memory, never a raw Python error."""

from __future__ import annotations

import json
import struct
import tracemalloc
import zipfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import zstandard

from loopnb import RecordingError, load
from loopnb.foreign._inspect import from_inspect
from loopnb.foreign._inspect_files import ZSTD

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "foreign" / "inspect"
EVAL, JSON = GOLDEN / "notes.eval", GOLDEN / "notes.json"
SAMPLE = "samples/recover_epoch_1.json"
BOMB = 128 << 20
"""What a bomb unpacks to: far past the bound the tests hold reading to."""
BOUND = 16 << 20
"""The most reading a hostile member may take from the heap (it unpacks to 8x more; ~0.2 MB is taken)."""
DEEP = 100_000


Member = tuple[int, bytes, int, int]
"""A zip member as stored: compression method, its compressed bytes, declared size, CRC."""


def _members(path: Path) -> dict[str, Member]:
    """Every member of an ``.eval`` as stored (its data read past the local header)."""
    out: dict[str, Member] = {}
    raw = path.read_bytes()
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            name_len, extra_len = struct.unpack_from("<HH", raw, info.header_offset + 26)
            start = info.header_offset + 30 + name_len + extra_len
            packed = raw[start : start + info.compress_size]
            out[info.filename] = (info.compress_type, packed, info.file_size, info.CRC)
    return out


def _zip(path: Path, members: dict[str, Member]) -> Path:
    """A zip of ``members`` written byte by byte (``zipfile`` in 3.11 writes no zstandard)."""
    body, central = b"", b""
    for name, (method, packed, size, crc) in members.items():
        encoded = name.encode()
        fields = (20, 0, method, 0, 0x21, crc, len(packed), size, len(encoded))
        central += struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, *fields, 0, 0, 0, 0, 0, len(body))
        central += encoded
        body += struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", *fields, 0) + encoded + packed
    end = struct.pack(
        "<4sHHHHIIH", b"PK\x05\x06", 0, 0, len(members), len(members), len(central), len(body), 0
    )
    path.write_bytes(body + central + end)
    return path


def _unpacked(member: Member) -> bytes:
    data: bytes = zstandard.ZstdDecompressor().decompressobj().decompress(member[1])
    return data


def _zeros(compressor: Any, total: int) -> bytes:
    """``total`` zero bytes compressed, fed a megabyte at a time (never held whole)."""
    chunk = bytes(1 << 20)
    return b"".join(compressor.compress(chunk) for _ in range(total >> 20)) + compressor.flush()


@pytest.fixture(scope="module")
def bombs() -> dict[int, bytes]:
    """A member's data that unpacks to ``BOMB`` zero bytes, by zip method."""
    return {
        ZSTD: _zeros(zstandard.ZstdCompressor().compressobj(), BOMB),
        zipfile.ZIP_DEFLATED: _zeros(zlib.compressobj(9, zlib.DEFLATED, -15), BOMB),
    }


def _peak(read: Callable[[], object]) -> tuple[int, BaseException | None]:
    """The most ``read`` took from the heap at once, and what it raised."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        try:
            read()
        except Exception as exc:  # returned for the test to judge
            return tracemalloc.get_traced_memory()[1], exc
        return tracemalloc.get_traced_memory()[1], None
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("method", [ZSTD, zipfile.ZIP_DEFLATED], ids=["zstandard", "deflate"])
@pytest.mark.parametrize("member", [SAMPLE, "header.json"])
def test_a_member_that_unpacks_past_its_declared_size_is_refused_in_bounded_memory(
    tmp_path, bombs, method, member
):
    members = _members(EVAL)
    members[member] = (method, bombs[method], 100, members[member][3])
    bomb = _zip(tmp_path / "bomb.eval", members)
    peak, raised = _peak(lambda: load(bomb, errors="raise"))
    assert peak < BOUND, f"reading took {peak >> 20} MB"
    assert isinstance(raised, RecordingError), raised
    assert str(raised).startswith(f"{bomb}: member {member} ")
    if method == ZSTD:  # zipfile stops a deflated member at its declared size and checks its CRC
        assert "unpacks to more than the 100 bytes the zip declares for it" in str(raised)


@pytest.mark.parametrize("method", [zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA], ids=["bzip2", "lzma"])
def test_a_member_in_a_method_zipfile_unpacks_whole_is_refused(tmp_path, method):
    """zipfile unpacks a bzip2 or LZMA chunk at once (a 4 kB bzip2 chunk can hold gigabytes), and
    Inspect writes neither: such a member is refused before it is unpacked."""
    path = tmp_path / "other.eval"
    with zipfile.ZipFile(path, "w") as dst:
        for name, data in _plain().items():
            dst.writestr(name, data, compress_type=method if name == SAMPLE else zipfile.ZIP_DEFLATED)
    with pytest.raises(
        RecordingError,
        match=rf"other\.eval: member {SAMPLE} is compressed with zip method {method}; an Inspect AI"
        " log's members are zstandard, deflated or stored",
    ):
        load(path, errors="raise")


def _plain() -> dict[str, bytes]:
    """Every member of a golden ``.eval``, unpacked."""
    return {name: _unpacked(member) for name, member in _members(EVAL).items()}


def test_a_member_that_unpacks_to_its_declared_size_reads_as_before(tmp_path):
    """The bound is the declared size itself: a member that fills it exactly is whole."""
    members = _members(EVAL)
    data = _unpacked(members[SAMPLE])
    packed = zstandard.ZstdCompressor().compress(data)
    members[SAMPLE] = (ZSTD, packed, len(data), zlib.crc32(data))
    assert load(_zip(tmp_path / "same.eval", members)).turns.equals(load(EVAL).turns)


def _deep() -> str:
    return "[" * DEEP + "]" * DEEP


def test_a_json_log_nested_past_the_recursion_limit_is_named(tmp_path):
    log = json.loads(JSON.read_text())
    log["samples"][0]["metadata"] = "@deep@"
    path = tmp_path / "deep.json"
    path.write_text(json.dumps(log).replace('"@deep@"', _deep()))
    with pytest.raises(RecordingError, match=r"deep\.json: the log is nested deeper than loopnb reads"):
        load(path)


@pytest.mark.parametrize("member", [SAMPLE, "header.json"])
def test_an_eval_member_nested_past_the_recursion_limit_is_named(tmp_path, member):
    members = _members(EVAL)
    data = _unpacked(members[member])
    data = data.replace(b'"metadata":{', b'"metadata":{"deep":' + _deep().encode() + b",", 1)
    members[member] = (ZSTD, zstandard.ZstdCompressor().compress(data), len(data), zlib.crc32(data))
    path = _zip(tmp_path / "deep.eval", members)
    with pytest.raises(
        RecordingError, match=rf"deep\.eval: member {member} is nested deeper than loopnb reads"
    ):
        load(path, errors="raise")


def _nested() -> list[Any]:
    deep: list[Any] = ["x"]
    for _ in range(DEEP):
        deep = [deep]
    return deep


def _model_event(sample: dict[str, Any]) -> dict[str, Any]:
    return next(e for e in sample["events"] if e.get("event") == "model" and e.get("output"))


def _edits() -> Iterator[tuple[Callable[[dict[str, Any]], None], str]]:
    sample = r"samples\[0\] \(sample 'recover', epoch 1\), "
    yield (
        lambda s: _model_event(s)["output"]["choices"][0]["message"].update(content=_nested()),
        sample + "a value is nested deeper than loopnb reads",
    )
    yield lambda s: s.update(uuid=_nested()), sample + "a value is nested deeper than loopnb reads"
    yield lambda s: s.update(id=_nested()), "a value of the log is nested deeper than loopnb reads"


@pytest.mark.parametrize(("edit", "message"), list(_edits()), ids=["content", "uuid", "id"])
def test_a_value_nested_past_the_recursion_limit_in_memory_is_named(edit, message):
    log = json.loads(JSON.read_text())
    edit(log["samples"][0])
    with pytest.raises(RecordingError, match=message):
        from_inspect(log, errors="raise")


@pytest.mark.parametrize(
    ("count", "shown"),
    [
        ('"many"', "'many'"),
        ('{"n": 1}', r"\{'n': 1\}"),
        ("1e400", "inf"),
        ("2.5", "2.5"),
        ("true", "True"),
        ("-1", "-1"),
        (str(2**63), str(2**63)),
        (str(10**400), "an int of 1329 bits"),
    ],
    ids=["string", "object", "1e400", "float", "bool", "negative", "2**63", "huge"],
)
def test_a_token_count_that_is_no_count_is_named(tmp_path, count, shown):
    log = json.loads(JSON.read_text())
    _model_event(log["samples"][0])["output"]["usage"]["input_tokens"] = "@count@"
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps(log).replace('"@count@"', count))
    with pytest.raises(
        RecordingError,
        match=rf"tokens\.json: samples\[0\] \(sample 'recover', epoch 1\), events\[\d+\]\.output\.usage"
        rf"\.input_tokens: expected a number of tokens, found {shown}: a count is a whole number from 0 to"
        r" 2\*\*63 - 1",
    ):
        load(path, errors="raise")


def test_the_largest_token_count_reads():
    log = json.loads(JSON.read_text())
    _model_event(log["samples"][0])["output"]["usage"]["input_tokens"] = 2**63 - 1
    assert (from_inspect(log).turns["input_tokens"] == 2**63 - 1).sum() == 1
