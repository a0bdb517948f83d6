"""A progress bar over many recordings, shown only when someone is watching.

tqdm's auto bar: a widget in a notebook, a line on a terminal's stderr. ``progress=None`` (the
default of ``load_many``) shows it only when the session is interactive (stderr is a terminal,
or the code runs in a notebook kernel) and there are at least ``PROGRESS_FROM`` files; even then
it appears only once the work has taken half a second. Piped, in a script's log or in a test, it
is silent.
"""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Any, TextIO

PROGRESS_FROM = 100
"""From this many files on, an interactive session gets a progress bar by default."""
_DELAY = 0.5
"""Seconds of work before the bar appears: a quick load never flashes one."""


def in_notebook() -> bool:
    """Whether this code runs in a Jupyter kernel (IPython is never imported here)."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    try:
        shell = ipython.get_ipython()
        return shell is not None and "IPKernelApp" in shell.config
    except Exception:  # an IPython too old or too odd to ask: no notebook bar
        return False


def wanted(progress: bool | None, n: int, file: TextIO | None = None) -> bool:
    """Whether a bar is shown for ``n`` files: ``progress`` if given, else only when interactive
    (``file``, stderr by default, is a terminal, or a notebook runs this) for ``PROGRESS_FROM``
    files or more."""
    if progress is not None:
        if not isinstance(progress, bool):
            raise TypeError(f"progress must be True, False or None (auto), got {progress!r}")
        return progress
    if n < PROGRESS_FROM:
        return False
    stream = file if file is not None else sys.stderr
    try:
        tty = bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or closed
        tty = False
    return tty or in_notebook()


class Progress:
    """Files done out of ``total``, as a tqdm bar when ``shown`` (else nothing at all).

    ``note(message)`` prints a line to ``file`` without tearing the bar; use it as a context
    manager, so that the bar goes away however the work ends.
    """

    def __init__(self, total: int, *, shown: bool, what: str = "recordings", file: TextIO | None = None):
        self.file = file if file is not None else sys.stderr
        self._bar: Any = None  # a tqdm bar (tqdm ships no annotations)
        if shown:
            from tqdm.auto import tqdm as auto

            self._bar = auto(
                total=total, desc=f"loading {what}", unit=" files", file=self.file, delay=_DELAY, leave=False
            )

    @property
    def shown(self) -> bool:
        """Whether a bar is drawn."""
        return self._bar is not None

    def advance(self) -> None:
        """One more file done."""
        if self._bar is not None:
            self._bar.update()

    def note(self, message: str) -> None:
        """Print ``message`` on its own line, above the bar when there is one."""
        if self._bar is not None:
            self._bar.write(message, file=self.file)
        else:
            print(message, file=self.file)

    def close(self) -> None:
        """Take the bar away."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
