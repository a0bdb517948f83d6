"""Say which installed versions differ from those of the last green CI run, so a red run names what moved.

Usage: ``python scripts/ci_versions.py FREEZE`` compares ``FREEZE`` (the output of ``pip freeze`` of CI's
main lane) with ``.ci/versions-green.txt`` and prints one line per package that moved, was added or
went away; ``python scripts/ci_versions.py --write FREEZE`` makes ``FREEZE`` the new record (do that after a
green run, and commit it). Always exits 0: a moved version is information, not a failure.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

RECORD = Path(__file__).resolve().parents[1] / ".ci" / "versions-green.txt"
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)$")


def pins(text: str) -> dict[str, str]:
    """``name -> version`` for each ``name==version`` line (editable installs and comments left out)."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        match = _PIN.match(line.strip())
        if match:
            found[match.group(1).lower().replace("_", "-")] = match.group(2)
    return found


def moves(green: dict[str, str], now: dict[str, str]) -> list[str]:
    """One line per difference between the green run's versions and today's, sorted by package."""
    lines = []
    for name in sorted(green.keys() | now.keys()):
        before, after = green.get(name), now.get(name)
        if before == after:
            continue
        if before is None:
            lines.append(f"  {name}: new, {after}")
        elif after is None:
            lines.append(f"  {name}: {before}, no longer installed")
        else:
            lines.append(f"  {name}: {before} -> {after}")
    return lines


def main(argv: list[str]) -> int:
    write = argv[:1] == ["--write"]
    paths = argv[1:] if write else argv
    if len(paths) != 1:
        raise SystemExit(__doc__)
    freeze = Path(paths[0]).read_text(encoding="utf-8")
    if write:
        lines = sorted(f"{name}=={version}" for name, version in pins(freeze).items())
        RECORD.write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"ci_versions: {len(lines)} versions written to {RECORD}")
        return 0
    if not RECORD.exists():
        print(f"ci_versions: no record of a green run ({RECORD.name}); nothing to compare")
        return 0
    changed = moves(pins(RECORD.read_text(encoding="utf-8")), pins(freeze))
    if changed:
        print(f"ci_versions: {len(changed)} packages differ from the last green run ({RECORD.name}):")
        print("\n".join(changed))
    else:
        print("ci_versions: every package is at the version of the last green run")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
