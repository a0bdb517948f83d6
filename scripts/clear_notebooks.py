"""Clear notebooks for committing: outputs, execution counts and widget state go; tags stay.

    python scripts/clear_notebooks.py notebooks/*.ipynb
"""

from __future__ import annotations

import json
import pathlib
import sys

KEEP_NB = ("kernelspec", "language_info")
KEEP_CELL = ("tags",)


def clear(path: pathlib.Path) -> bool:
    """Clear one notebook in place; True when it changed."""
    text = path.read_text(encoding="utf-8")
    nb = json.loads(text)
    nb["metadata"] = {k: v for k, v in nb.get("metadata", {}).items() if k in KEEP_NB}
    for cell in nb["cells"]:
        cell["metadata"] = {k: v for k, v in cell.get("metadata", {}).items() if k in KEEP_CELL}
        if cell["cell_type"] == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
    new = json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
    if new != text:
        path.write_text(new, encoding="utf-8")
        return True
    return False


def main(argv: list[str]) -> int:
    for name in argv:
        if clear(pathlib.Path(name)):
            print(f"cleared {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
