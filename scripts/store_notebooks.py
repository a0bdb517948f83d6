"""Run the notebooks top to bottom and store them with the outputs a reader should see.

    python scripts/store_notebooks.py notebooks/*.ipynb        # run, keep the static picture
    python scripts/store_notebooks.py --clear notebooks/*.ipynb  # no outputs at all

GitHub, nbviewer and the documentation site show a notebook's stored outputs, so each notebook is
committed executed, as a reader opening it should find it. What is kept is what renders without a
kernel and without a script: printed text, ``text/plain``, ``text/markdown``, plotly's JSON and the
script-free ``text/html`` picture loopnb's views carry beside their widget. Widget views and widget
state are dropped (they need the kernel that made them, and the state is most of a file's size), as
are execution timings and every other metadata key but the kernel's and the tags.

Each notebook runs twice. A cell whose outputs come out the same both times (after the sanitising
rules nbval applies, ``notebooks/nbval_sanitize.cfg``) and that are loopnb's own words (printed
text, or HTML loopnb drew) is tagged ``nbval-check-output``: nbval then checks, on every test run,
that the stored outputs still match what the code prints. Other libraries' renderings (a pandas
frame's HTML table, plotly's JSON) are kept for readers but not compared: they change when those
libraries do.
"""

from __future__ import annotations

import argparse
import configparser
import copy
import json
import os
import pathlib
import re
import sys
from typing import Any

REPO = pathlib.Path(__file__).resolve().parents[1]
KEEP_NB = ("kernelspec", "language_info")
KEEP_CELL = ("tags",)
KEEP_MIME = ("text/plain", "text/markdown", "text/html", "application/vnd.plotly.v1+json", "image/png")
CHECK = "nbval-check-output"
_KEEP_OFF = {"nbval-ignore-output", "nbval-skip", "nbval-raises-exception"}
SANITIZE = REPO / "notebooks" / "nbval_sanitize.cfg"


def sanitizers() -> list[tuple[re.Pattern[str], str]]:
    """nbval's sanitising rules for these notebooks, in file order."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(SANITIZE, encoding="utf-8")
    return [(re.compile(parser[s]["regex"]), parser[s]["replace"]) for s in parser.sections()]


def kept(output: dict[str, Any]) -> dict[str, Any] | None:
    """An output as stored: only what renders without a kernel (None when nothing does)."""
    kind = output["output_type"]
    if kind == "stream":
        return {"output_type": "stream", "name": output["name"], "text": output["text"]}
    if kind == "error":
        raise SystemExit(f"a cell raised {output['ename']}: {output['evalue']}; fix the notebook first")
    data = {k: v for k, v in output.get("data", {}).items() if k in KEEP_MIME}
    if not data or (set(data) == {"text/plain"} and "widget-view" in json.dumps(output.get("data", {}))):
        return None  # a widget with no static picture: nothing a reader without a kernel can see
    out: dict[str, Any] = {"output_type": kind, "data": data, "metadata": {}}
    if kind == "execute_result":
        out["execution_count"] = output.get("execution_count")
    return out


def coalesced(outputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Consecutive printed text to one stream joined, as nbval compares it: how a cell's printing
    is cut into chunks depends on when the kernel flushed, not on what it printed."""
    joined: list[dict[str, Any]] = []
    for out in outputs:
        last = joined[-1] if joined else None
        if last and out["output_type"] == last["output_type"] == "stream" and out["name"] == last["name"]:
            joined[-1] = {**last, "text": _text(last["text"]) + _text(out["text"])}
        else:
            joined.append(out)
    return joined


def _text(text: str | list[str]) -> str:
    return text if isinstance(text, str) else "".join(text)


def fingerprint(outputs: list[dict[str, Any]], rules: list[tuple[re.Pattern[str], str]]) -> str:
    """The outputs as nbval compares them: sanitised text, widget views left out."""
    text = json.dumps(outputs, sort_keys=True)
    for pattern, replace in rules:
        text = pattern.sub(replace, text)
    return text


def printed(outputs: list[dict[str, Any]]) -> bool:
    """Whether the outputs are all printed text (the notebook's own words, drawn once)."""
    return all(out["output_type"] == "stream" for out in outputs)


def execute(nb: Any) -> Any:
    """The notebook run top to bottom in a fresh kernel that imports this checkout's loopnb."""
    import nbclient

    ran = copy.deepcopy(nb)
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), saved) if p)
    try:
        nbclient.NotebookClient(
            ran, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(REPO / "notebooks")}}
        ).execute()
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved
    return ran


def store(path: pathlib.Path, *, clear: bool) -> None:
    """Run ``path`` twice (unless ``clear``) and write it back with its outputs as stored."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    nb.metadata = {k: v for k, v in nb.metadata.items() if k in KEEP_NB}
    runs = [] if clear else [execute(nb), execute(nb)]
    rules = sanitizers()
    count = 0
    for i, cell in enumerate(nb.cells):
        tags = [t for t in cell.metadata.get("tags", []) if t != CHECK]
        cell.metadata = {"tags": tags} if tags else {}
        if cell.cell_type != "code":
            continue
        cell.outputs, cell.execution_count = [], None
        if clear:
            continue
        first, second = (coalesced([o for o in map(kept, run.cells[i].outputs) if o]) for run in runs)
        count += 1
        cell.execution_count = count
        for out in first:
            if out["output_type"] == "execute_result":
                out["execution_count"] = count
        cell.outputs = [nbformat.from_dict(o) for o in first]
        if (
            _KEEP_OFF.isdisjoint(tags)
            and "clear_output" not in cell.source  # nbval sees outputs a clear_output cleared
            and first
            and printed(first)
            and fingerprint(first, rules) == fingerprint(second, rules)
        ):
            cell.metadata["tags"] = [*tags, CHECK]
    nbformat.write(nb, path)
    size = path.stat().st_size
    print(f"{'cleared' if clear else 'stored'} {path.name} ({size:,} bytes)")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="+", type=pathlib.Path)
    parser.add_argument("--clear", action="store_true", help="store no outputs at all")
    args = parser.parse_args(argv)
    for path in args.notebooks:
        store(path, clear=args.clear)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
