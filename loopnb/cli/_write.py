"""Writing recordings for ``loopnb demo``: each run the recorder observed as its own file.

The commands that read recordings (``loopnb audit``, ``convert``, ``compare``) sit above the
formats layer, in ``loopnb.cli._commands``.
"""

from __future__ import annotations

import re
from pathlib import Path

from loopnb.record import Recorder


def write_recordings(recorder: Recorder, folder: str | Path, *, suffix: str = ".jsonl") -> list[Path]:
    """Save each run the recorder observed as its own file, ``<folder>/<run_id><suffix>``.

    Runs are taken from what is exported (redacted), and each file name is made of the run id's
    letters, digits, ``.``, ``_`` and ``-`` (anything else becomes ``_``, and a name already taken
    gets ``-2``, ``-3``...): a run id can neither leak a secret into a name nor point outside
    ``folder``.
    """
    from loopnb.record._jsonl import make_header, write_jsonl

    if suffix not in (".jsonl", ".parquet"):
        raise ValueError(f"suffix must be .jsonl or .parquet, got {suffix!r}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    objects, lines = recorder.exported_events()
    runs: dict[str, list[int]] = {}
    for i, e in enumerate(objects):
        runs.setdefault(e.run_id, []).append(i)
    header = make_header(redacted=recorder.redact is not None)
    written: list[Path] = []
    for run_id, mine in runs.items():
        path = _file_for(folder, run_id, suffix, taken=written)
        if suffix == ".parquet":
            from loopnb.record._parquet import write_parquet

            write_parquet(path, header, [objects[i] for i in mine], [lines[i] for i in mine])
        else:
            write_jsonl(path, header, [lines[i] for i in mine])
        written.append(path)
    return written


def _file_for(folder: Path, run_id: str, suffix: str, *, taken: list[Path]) -> Path:
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", run_id).lstrip(".") or "run"
    path, n = folder / f"{stem}{suffix}", 2
    while path in taken:
        path, n = folder / f"{stem}-{n}{suffix}", n + 1
    return path
