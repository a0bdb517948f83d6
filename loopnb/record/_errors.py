"""What can go wrong with a recording file.

The tree::

    Exception
    └── RecordingError      a file cannot be read as a recording (path, line, what is wrong)
    UserWarning
    └── LoopnbWarning
        └── RecordingWarning  a file was read, but something was tolerated (a torn last line)
"""

from __future__ import annotations

import functools
from pathlib import Path

from loopnb.engine import LoopnbWarning


class RecordingError(Exception):
    """A recording cannot be read (or written): missing, empty, damaged, or an unknown version.

    Raised by: ``load``, ``load_many``, ``Recorder`` (appending to a file that is not a
    recording). The message names the path, the line (1-based, when there is one) and the fault.
    """

    def __init__(self, message: str, *, path: str | Path | None = None, line: int | None = None):
        where = ""
        if path is not None:
            where = f"{path}"
            if line is not None:
                where += f", line {line}"
            where += ": "
        super().__init__(where + message)
        self.path = None if path is None else str(path)
        self.line = line
        self.reason = message

    def __reduce__(self) -> tuple[object, ...]:
        # a partial of the public class, not a private helper: the pickle names no private path
        return (functools.partial(RecordingError, path=self.path, line=self.line), (self.reason,))


class RecordingWarning(LoopnbWarning):
    """A recording loaded with something tolerated, e.g. a torn last line from a killed writer.

    The message names the path and the line that was left out.
    """
