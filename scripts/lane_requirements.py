"""Print pip requirements for a CI lane, taken from pyproject.toml so that the lanes cannot drift from it.

Usage: ``python scripts/lane_requirements.py [--lowest] NAME...``. Each NAME is looked up in the
project's dependencies, then in its ``parquet`` and ``test`` extras. Without ``--lowest`` the
requirement is printed as declared (``pandas>=2.2``); with it, pinned to the release line of its
lower bound (``pandas==2.2.*``, ``pytest==8.0.*``), so that pip installs the oldest version the
project claims to support. One requirement a line, for ``pip install -r /dev/stdin``.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
EXTRAS = ("parquet", "test")
LOWER_BOUND = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*>=\s*([0-9]+(?:\.[0-9]+)*)$")


def declared() -> dict[str, str]:
    """Every requirement of the dependencies and the lanes' extras, by lower-cased name."""
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    found: dict[str, str] = {}
    for extra in reversed(EXTRAS):
        found.update(_by_name(project["optional-dependencies"][extra]))
    found.update(_by_name(project["dependencies"]))
    return found


def _by_name(requirements: list[str]) -> dict[str, str]:
    return {re.split(r"[<>=!~\[ ;]", r, maxsplit=1)[0].lower(): r for r in requirements}


def lowest(requirement: str) -> str:
    """``name>=X.Y`` as ``name==X.Y.*`` (``name>=X`` as ``name==X.0.*``)."""
    match = LOWER_BOUND.match(requirement)
    if match is None:
        raise SystemExit(
            f"lane_requirements: {requirement!r} in {PYPROJECT.name} is not of the form 'name>=version'; "
            "a lowest-versions lane needs a plain lower bound"
        )
    name, version = match.groups()
    if "." not in version:
        version += ".0"
    return f"{name}=={version}.*"


def main(argv: list[str]) -> int:
    pin = argv[:1] == ["--lowest"]
    names = argv[1:] if pin else argv
    if not names:
        raise SystemExit(__doc__)
    known = declared()
    missing = [n for n in names if n.lower() not in known]
    if missing:
        raise SystemExit(
            f"lane_requirements: {', '.join(missing)} not in {PYPROJECT.name}'s dependencies "
            f"or its {' / '.join(EXTRAS)} extras"
        )
    for name in names:
        requirement = known[name.lower()]
        print(lowest(requirement) if pin else requirement)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
