"""One sweep at a time in a results folder: an advisory lock on ``OUT/_sweep.lock``.

Two sweeps writing one folder would each run (and write) the other's batches, and a second one
could pass the plan's check before the first had written anything. So ``sweep`` holds an
exclusive ``flock`` on ``OUT/_sweep.lock`` from before it checks the folder until it returns; a
second sweep into the folder, from this process or another, is refused at once, naming the one
that holds it. The operating system releases the lock when its holder exits, killed or not, so a
folder is never left locked (the file itself stays, a record of the last sweep that ran there; its
leading ``_`` keeps it out of the dataset). Where there is no ``flock`` (Windows) nothing is locked.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

LOCK_FILE = "_sweep.lock"


@contextlib.contextmanager
def holding(out: Path) -> Iterator[None]:
    """``out`` (made if missing) for this sweep alone while the block runs; a ``ValueError``
    naming the sweep that holds it, when another does."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no lock
        yield
        return
    if out.exists() and not out.is_dir():
        raise ValueError(f"sweep: out {out} is a file; the results go into a folder")
    out.mkdir(parents=True, exist_ok=True)
    path = out / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ValueError(
                f"sweep: {out} is in use by another sweep ({_holder(fd)}); two sweeps writing one "
                "folder would run each other's batches. Wait for it to end, or choose another out"
            ) from None
        me = {"pid": os.getpid(), "host": socket.gethostname(), "since": datetime.now(UTC).isoformat()}
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(me) + "\n").encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


def _holder(fd: int) -> str:
    """Who holds the lock, as its holder wrote it."""
    try:
        held = json.loads(os.pread(fd, 4096, 0))
        return f"process {held['pid']} on {held['host']}, since {held['since']}"
    except (OSError, ValueError, TypeError, KeyError):
        return "it has not said which yet"
