"""``python -m loopnb``: the ``loopnb`` command line, for when the script is not on ``PATH``."""

from loopnb.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
