"""The version of loopnb, importable from every layer (``loopnb.__version__`` is this)."""

__version__ = "0.1.0"
"""The installed loopnb's version, as ``pip`` and ``pyproject.toml`` give it."""
