"""What a format is: the ``Format`` protocol, and ``ForeignFormat``, the one each reader of another
framework's runs defines as its module's ``FORMAT``.

A format is any object with a ``name``, a ``what`` (the words an error listing the formats uses),
the ``suffixes`` its files usually have, ``sniff(head, path)`` (do a file's first bytes look like
it) and ``read(path, *, errors)``; one that can be written also has ``write(recording, path)``.
``_registry`` lists them and ``_load`` reads files with them.

``Unread`` is what a reader of another framework's file does with an item it cannot read: skip it
with a ``RecordingWarning`` and list it in ``meta["unread"]`` (``errors="warn"``), or raise.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, Literal, NoReturn, Protocol, runtime_checkable

from loopnb.record import RecordingError, RecordingWarning

if TYPE_CHECKING:
    from loopnb.record import Recording
    from loopnb.record._disagree import Mark

HEAD_BYTES = 1 << 16
"""How much of a file the sniffers look at."""

Errors = Literal["warn", "raise"]
"""What a reader does with an item (a span, a message, a checkpoint) it cannot read: skip it with
a ``RecordingWarning`` (``"warn"``), or raise ``RecordingError`` (``"raise"``)."""


@runtime_checkable
class Format(Protocol):
    """A format ``loopnb.load`` reads: register your own with ``loopnb.register_format(fmt)``.

    ``sniff`` looks only at what the format always has near its start (``head`` is a file's first
    64 KiB) and never raises; ``read`` raises ``RecordingError`` naming the path for a file it
    cannot read. ``errors`` is ``"warn"`` (``load``'s default: skip an item that cannot be read
    with a ``RecordingWarning``, listing it in ``meta["unread"]``) or ``"raise"``; a reader that
    cannot skip items keeps its rules either way (loopnb's own JSON Lines and Parquet do).
    Optional members: ``write(recording, path)`` where the format can be written (``loopnb
    convert`` picks it by suffix), and ``marks`` (what each status the reader writes in
    ``source_status`` means, for ``audit(rec).disagreements()``).
    """

    @property
    def name(self) -> str:
        """The name ``load(path, format=...)`` takes (``"otlp"``), unique among the formats."""
        ...

    @property
    def what(self) -> str:
        """What its files are, in a few words (an error listing the formats shows them)."""
        ...

    @property
    def suffixes(self) -> tuple[str, ...]:
        """The suffixes its files usually have (``(".json",)``): ``load_many`` looks into a
        folder's files of these suffixes."""
        ...

    def sniff(self, head: bytes, path: Path) -> bool:
        """Whether ``head``, the first bytes of the file at ``path``, is this format."""
        ...

    def read(self, path: Path, *, errors: Errors) -> Recording:
        """The recording in the file at ``path``."""
        ...


def checked_errors(errors: str) -> None:
    """A ``ValueError`` unless ``errors`` is one of ``Errors``."""
    if errors not in ("warn", "raise"):
        raise ValueError(f"errors must be 'warn' or 'raise', got {errors!r}")


WARNED = 10
"""How many skipped items of one file are each a warning of their own; the rest are counted in one."""

SKIPPED = "skipped, the rest is read (meta['unread'] lists it)"
"""What a warning of a skipped item says was done, unless the reader says more."""


class Unread:
    """What a reader could not read of one file (or of objects in memory), item by item.

    ``skip`` is called once per span, message, event, sample or checkpoint that cannot be read:
    with ``errors="raise"`` it raises that item's ``RecordingError``; with ``"warn"`` it lists the
    item in ``items``, which the recording keeps as ``meta["unread"]`` (``{"where": ..., "why":
    ...}`` each), and ``meta()`` warns of each (a ``RecordingWarning`` naming the file, the item
    and why) once the file is read. The reader goes on without the item: the turn it belonged to
    keeps what could be read. A file of which nothing could be read is a ``RecordingError``
    (``nothing_read``), with no warnings beside it.

    Args:
        errors: ``"warn"`` or ``"raise"``.
        path: The file read (``None`` for objects in memory).
    """

    __slots__ = ("_left", "_seen", "errors", "items", "path")

    def __init__(self, errors: Errors = "raise", path: Path | None = None) -> None:
        checked_errors(errors)
        self.errors = errors
        self.path = path
        self.items: list[dict[str, str]] = []
        self._left: list[str] = []
        self._seen: set[tuple[str, str]] = set()

    def skip(
        self, where: str, why: str | Exception, *, error: Exception | None = None, left: str = SKIPPED
    ) -> None:
        """Skip the item ``where`` (``"message 3"``, ``"span 1f2e 'chat'"``) that cannot be read
        for ``why``: a text, or the error the reader made of it (its text, less a leading
        ``where``, is the why). With ``"raise"``, ``error`` is raised (default: ``why``'s error,
        or a ``RecordingError`` saying where and why). ``left``: what the warning says was done."""
        if isinstance(why, Exception):
            text = getattr(why, "reason", None) or str(why)
            if text.startswith(where) and text != where:
                text = text[len(where) :].lstrip(":, ")
        else:
            text = why
        if self.errors == "raise":
            self._raise(where, text, error or why)
        if (where, text) not in self._seen:  # the same damage met again (a value read twice) is one
            self._seen.add((where, text))
            self.items.append({"where": where, "why": text})
            self._left.append(left)

    def _raise(self, where: str, text: str, why: str | Exception) -> NoReturn:
        if not isinstance(why, Exception):
            raise RecordingError(f"{where}: {text}", path=self.path)
        if isinstance(why, RecordingError) and why.path is None and self.path is not None:
            raise RecordingError(why.reason, path=self.path, line=why.line) from why
        raise why

    def meta(self) -> list[dict[str, str]]:
        """``items``, for ``meta["unread"]``, once each has been warned of (past ``WARNED`` of
        them, one warning counts the rest)."""
        named = "" if self.path is None else f"{self.path}: "
        for item, left in zip(self.items[:WARNED], self._left, strict=False):
            warnings.warn(
                f"{named}{item['where']}: {item['why']}; {left}", RecordingWarning, stacklevel=_outside()
            )
        more = len(self.items) - WARNED
        if more > 0:
            warnings.warn(
                f"{named}{more} more items could not be read and were skipped (meta['unread'] lists "
                "every one)",
                RecordingWarning,
                stacklevel=_outside(),
            )
        return self.items

    def nothing_read(self, what: str) -> RecordingError:
        """The error for a file none of whose ``what`` (``"messages"``, ``"spans"``) could be
        read: the one item's where and why, or how many were skipped and the first's."""
        if len(self.items) == 1:
            return RecordingError(f"{self.items[0]['where']}: {self.items[0]['why']}", path=self.path)
        first = self.items[0] if self.items else {"where": "", "why": "nothing"}
        return RecordingError(
            f"nothing readable: none of its {what} could be read ({len(self.items)} skipped; the "
            f"first, {first['where']}: {first['why']})",
            path=self.path,
        )


def _outside() -> int:
    """The ``stacklevel`` of the first frame outside loopnb: a warning points at the user's call."""
    frame: FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and str(frame.f_globals.get("__name__", "")).startswith("loopnb."):
        frame = frame.f_back
        level += 1
    return level


@dataclass(frozen=True, slots=True, repr=False)
class ForeignFormat:
    """Another framework's format as one of loopnb's readers reads it (a ``Format``).

    ``reader`` reads a file (``reader(path, unread)``: an item it cannot read goes to
    ``unread.skip``), ``in_memory`` (if any) the framework's objects in memory (it takes
    ``errors=`` too), and ``marks`` says what each status the reader writes means.
    """

    name: str
    what: str
    suffixes: tuple[str, ...]
    sniff: Callable[[bytes, Path], bool]
    reader: Callable[[Path, Unread], Recording]
    in_memory: Callable[..., Recording] | None = None
    marks: Mapping[str, Mark] = field(default_factory=dict)

    def read(self, path: Path, *, errors: Errors = "warn") -> Recording:
        """The recording in the file at ``path``."""
        path = Path(path)
        return self.reader(path, Unread(errors, path))

    def from_memory(self, *args: Any, **kwargs: Any) -> Recording:
        """The recording of the framework's objects in memory (``from_pydantic_ai`` and its kin)."""
        if self.in_memory is None:
            raise TypeError(f"loopnb reads {self.name} from files only")
        return self.in_memory(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<format {self.name!r}: {self.what}>"
