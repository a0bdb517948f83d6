"""``python -m loopnb.cli``: the command line, as ``python -m loopnb`` runs it."""

from loopnb.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
