"""Writing files safely: a whole file replaced atomically, and an advisory lock while appending."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from loopnb.record._errors import RecordingError


@contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """A fresh temporary file beside ``path``, renamed onto it when the block ends without error
    and removed otherwise: ``path`` ends up either untouched or whole. A failure to write is a
    ``RecordingError`` naming ``path``."""
    if path.is_dir():
        raise RecordingError("cannot save a recording there: it is a folder", path=path)
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
def locked(file: BinaryIO) -> Iterator[None]:
    """An exclusive advisory lock on ``file`` while the block runs (where the OS has ``flock``)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no lock
        yield
        return
    fcntl.flock(file.fileno(), fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(file.fileno(), fcntl.LOCK_UN)
