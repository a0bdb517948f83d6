"""Writing files safely: a whole file replaced atomically (never one a live writer streams to),
and advisory locks while appending."""

from __future__ import annotations

import json
import os
import secrets
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Protocol

from loopnb.record._errors import RecordingError

_FORMAT = "loopnb.recording"
_HEAD = 1 << 20
"""How much of a JSON Lines file's first line is read to tell whether it is a recording's header."""


@contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """A fresh temporary file beside ``path``, renamed onto it when the block ends without error
    and removed otherwise: ``path`` ends up either untouched or whole. A failure to write is a
    ``RecordingError`` naming ``path``."""
    if path.is_dir():
        raise RecordingError("cannot write there: it is a folder", path=path)
    refuse_streamed(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = _fresh_file(path)
    except OSError as exc:
        raise RecordingError(f"cannot write: {exc.strerror or exc}", path=path) from exc
    try:
        yield tmp
        os.replace(tmp, path)
    except OSError as exc:
        raise RecordingError(f"cannot write: {exc.strerror or exc}", path=path) from exc
    finally:
        tmp.unlink(missing_ok=True)


def is_loopnb_recording(path: Path) -> bool:
    """Whether ``path`` is one of loopnb's own recordings: a file whose first line is a
    recording's header (JSON Lines), or a Parquet file whose footer holds one. Only its head and
    footer are read; a file that cannot be read is a ``RecordingError`` (whether it is a
    recording is unknown). Other frameworks' runs are the formats layer's (``holds_recording``)."""
    try:
        with path.open("rb") as f:
            if f.read(4) == b"PAR1":
                return _FORMAT.encode() in _parquet_footer(f)
            f.seek(0)
            first = f.readline(_HEAD)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return False
    except OSError as exc:
        raise RecordingError(
            f"cannot read it to check it is no recording: {exc.strerror or exc}", path=path
        ) from exc
    if _FORMAT.encode() not in first:
        return False
    try:
        header = json.loads(first)
    except (ValueError, RecursionError):
        return False
    return isinstance(header, dict) and header.get("format") == _FORMAT


def _parquet_footer(f: BinaryIO) -> bytes:
    """The footer of the Parquet file ``f`` (empty when it has none)."""
    size = f.seek(0, os.SEEK_END)
    if size < 12:
        return b""
    f.seek(size - 8)
    tail = f.read(8)
    length = int.from_bytes(tail[:4], "little")
    if tail[4:] != b"PAR1" or length > size - 12:
        return b""
    f.seek(size - 8 - length)
    return f.read(length)


def _fresh_file(path: Path) -> Path:
    """Create a new, empty file of a name no one else uses, beside ``path``. Made with the
    permissions any new file gets (the umask's), not ``mkstemp``'s owner-only ones: the saved
    recording keeps them."""
    while True:
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            continue
        return tmp


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive advisory lock on the folder of ``path`` while the block runs (where the OS has
    ``flock``): writers opening files there take turns. The folder, not the file, is locked, since
    every writer streaming to the file holds a shared lock on it for as long as it streams."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no lock
        yield
        return
    try:
        fd = os.open(path.parent, os.O_RDONLY)
    except OSError:  # a folder that cannot be opened for reading: no lock to take
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


class Stream(Protocol):
    """A writer streaming to a file: ``JsonlWriter``."""

    path: Path

    @property
    def closed(self) -> bool: ...

    def fileno(self) -> int: ...


_streams: weakref.WeakSet[Stream] = weakref.WeakSet()
"""The writers of this process streaming to a file."""


def claim_stream(writer: Stream) -> None:
    """Mark ``writer``'s file as streamed to until it is closed: a shared advisory lock (that every
    writer streaming to the file shares) and an entry in this process's list of streams, by which
    ``replacing`` refuses to replace the file under it."""
    _streams.add(writer)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: this process's streams only
        return
    fcntl.flock(writer.fileno(), fcntl.LOCK_SH)


def refuse_streamed(path: Path) -> None:
    """A ``RecordingError`` when a live writer (here or in another process) streams to ``path``:
    replaced, the file would be unlinked under it, and every turn it writes next lost."""
    try:
        st = path.stat()
    except OSError:
        return
    for writer in list(_streams):
        try:
            mine = not writer.closed and os.path.samestat(os.fstat(writer.fileno()), st)
        except (OSError, ValueError):
            continue
        if mine:
            raise RecordingError(
                f"cannot replace it: a live Recorder of this process streams to it (as {writer.path}), "
                "and would go on writing its turns into the replaced file, where they are lost; close "
                "that recorder first (recorder.close()), or save under another name",
                path=path,
            )
    if _locked_by_another(path):
        raise RecordingError(
            "cannot replace it: another process has a Recorder streaming to it (it holds the file "
            "locked), which would go on writing its turns into the replaced file, where they are "
            "lost; stop that recorder first, or save under another name",
            path=path,
        )


def _locked_by_another(path: Path) -> bool:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return False
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
    return False
