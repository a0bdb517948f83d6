"""loopnb's own recordings as formats like the others: JSON Lines and Parquet.

Both wrap the recording layer's readers and writers (``loopnb.record``): a file whose first line
is a recording's header is JSON Lines, a file that starts with Parquet's magic is Parquet. Their
readers raise on damage whatever ``errors`` says (a torn last line of a JSON Lines file loads
with a ``RecordingWarning``): loopnb's own format keeps its rules.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from loopnb.foreign._formats import checked_errors
from loopnb.record._recording import read_jsonl_recording, write_recording

if TYPE_CHECKING:
    from loopnb.foreign._formats import Errors
    from loopnb.record import Recording

_HEADER = b'"loopnb.recording"'


class JsonLines:
    """loopnb's own JSON Lines recording: a versioned header line, then one event a line."""

    name = "jsonl"
    what = "loopnb's own recordings, JSON Lines"
    suffixes = (".jsonl",)

    def sniff(self, head: bytes, path: Path) -> bool:
        """Whether the first line is a recording's header: a JSON object naming the format (a
        Parquet file's first "line" may run into its footer, which holds the same header)."""
        first = head.split(b"\n", 1)[0]
        return first.removeprefix(b"\xef\xbb\xbf").lstrip().startswith(b"{") and _HEADER in first

    def read(self, path: Path, *, errors: Errors = "warn") -> Recording:
        """The recording in ``path`` (a torn last line warns, any other damage raises)."""
        checked_errors(errors)
        return read_jsonl_recording(Path(path))

    def write(self, recording: Recording, path: Path) -> Path:
        """Write ``recording`` to ``path`` as JSON Lines, redacted (``Recording.save``)."""
        return write_recording(recording, Path(path), "jsonl")

    def __repr__(self) -> str:
        return f"<format {self.name!r}: {self.what}>"


class Parquet:
    """loopnb's own Parquet recording: the turns as rows, the events kept beside them (needs pyarrow)."""

    name = "parquet"
    what = "loopnb's own recordings, Parquet (with pyarrow)"
    suffixes = (".parquet",)

    def sniff(self, head: bytes, path: Path) -> bool:
        """Whether the file starts with Parquet's magic."""
        return head[:4] == b"PAR1"

    def read(self, path: Path, *, errors: Errors = "warn") -> Recording:
        """The recording in ``path`` (any damage raises)."""
        from loopnb.record._parquet import read_parquet  # pyarrow, on first use

        checked_errors(errors)
        return read_parquet(Path(path))

    def write(self, recording: Recording, path: Path) -> Path:
        """Write ``recording`` to ``path`` as Parquet, redacted (``Recording.save``)."""
        return write_recording(recording, Path(path), "parquet")

    def __repr__(self) -> str:
        return f"<format {self.name!r}: {self.what}>"


OWN = (JsonLines(), Parquet())
"""loopnb's own formats, in the order ``load`` tries them."""
