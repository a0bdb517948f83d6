"""How the notebook layer draws the data objects of the layers below (see ``loopnb._drawing``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from loopnb.notebook._compare_page import comparison_html as _html
from loopnb.notebook._compare_page import comparison_page as _page
from loopnb.notebook._compare_view import CompareView
from loopnb.notebook._report import to_html, write_page

if TYPE_CHECKING:
    from loopnb.analysis import Comparison
    from loopnb.record import Recording


def recording_page(recording: Recording, path: str | Path) -> Path:
    """``Recording.to_html``: the static HTML report."""
    return to_html(recording, path)


def comparison_page(comparison: Comparison, path: str | Path, title: str | None) -> Path:
    """``Comparison.to_html``: the comparison as one offline page, written whole or not at all."""
    return write_page(path, lambda: _page(comparison, title), "give the comparison page its own name")


def comparison_view(comparison: Comparison) -> CompareView:
    """``Comparison.view()``: the widget."""
    return CompareView(comparison)


def comparison_html(comparison: Comparison) -> str:
    """``Comparison._repr_html_``: the static picture a notebook keeps."""
    return _html(comparison)
