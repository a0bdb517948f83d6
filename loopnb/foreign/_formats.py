"""What a format is: the ``Format`` protocol, and ``ForeignFormat``, the one each reader of another
framework's runs defines as its module's ``FORMAT``.

A format is any object with a ``name``, a ``what`` (the words an error listing the formats uses),
the ``suffixes`` its files usually have, ``sniff(head, path)`` (do a file's first bytes look like
it) and ``read(path, *, errors)``; one that can be written also has ``write(recording, path)``.
``_registry`` lists them and ``_load`` reads files with them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

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
    with a ``RecordingWarning``) or ``"raise"``; a reader that cannot skip items keeps its rules
    either way (loopnb's readers do, for now). Optional members: ``write(recording, path)`` where
    the format can be written (``loopnb convert`` picks it by suffix), and ``marks`` (what each
    status the reader writes in ``source_status`` means, for ``audit(rec).disagreements()``).
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


@dataclass(frozen=True, slots=True, repr=False)
class ForeignFormat:
    """Another framework's format as one of loopnb's readers reads it (a ``Format``).

    ``reader`` reads a file, ``in_memory`` (if any) the framework's objects in memory, and
    ``marks`` says what each status the reader writes means. The readers do not look at
    ``errors`` yet: each keeps its own rules (most raise ``RecordingError`` on the first item
    they cannot read) until skipping an item with a warning comes to them all.
    """

    name: str
    what: str
    suffixes: tuple[str, ...]
    sniff: Callable[[bytes, Path], bool]
    reader: Callable[[Path], Recording]
    in_memory: Callable[..., Recording] | None = None
    marks: Mapping[str, Mark] = field(default_factory=dict)

    def read(self, path: Path, *, errors: Errors = "warn") -> Recording:
        """The recording in the file at ``path``."""
        checked_errors(errors)
        return self.reader(Path(path))

    def from_memory(self, *args: Any, **kwargs: Any) -> Recording:
        """The recording of the framework's objects in memory (``from_pydantic_ai`` and its kin)."""
        if self.in_memory is None:
            raise TypeError(f"loopnb reads {self.name} from files only")
        return self.in_memory(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<format {self.name!r}: {self.what}>"
