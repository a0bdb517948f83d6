"""mkdocs hook: each notebook of ``notebooks/`` as a page, with the outputs it was committed with.

Nothing is executed: a markdown cell is the page's markdown, a code cell a Python block, and each
stored output the first of its forms a static page can show (an HTML picture, SVG, PNG or JPEG,
markdown, else its text). An HTML output carrying a ``<script>`` (a widget's loader) is shown by
its other forms: the site loads no script from another host, and a live widget needs a kernel. A
plotly figure is drawn by plotly.js, published with the site from the plotly package loopnb
depends on, on the pages that have one. The ``.ipynb`` itself is published beside its page.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "notebooks"
SECTION = "Notebooks"
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
PLOTLY = "application/vnd.plotly.v1+json"
PLOTLY_JS = "javascripts/plotly.min.js"
DRAW = """<script>
document.querySelectorAll(".nb-plotly[data-figure]").forEach(function (box) {
  var figure = JSON.parse(box.dataset.figure);
  Plotly.newPlot(box, figure.data, figure.layout, {responsive: true, displaylogo: false});
});
</script>"""
"""Draws each figure of a page, once plotly.js (``PLOTLY_JS``, from this site) has loaded."""


def notebooks() -> list[Path]:
    return sorted(FOLDER.glob("*.ipynb"))


def _text(value: str | list[str]) -> str:
    return value if isinstance(value, str) else "".join(value)


def _fenced(text: str, lang: str = "text") -> str:
    """``text`` as a fenced block whose fence no line of it can close."""
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}{lang}\n{text.rstrip()}\n{fence}"


def _raw_html(markup: str) -> str:
    """HTML as a block markdown leaves alone (``markdown="0"``: no markdown inside it)."""
    return f'<div class="nb-output" markdown="0">\n{markup.strip()}\n</div>'


def output(out: dict[str, Any]) -> str:
    """The markdown of one stored output ("" when it has nothing a static page can show)."""
    kind = out.get("output_type")
    if kind == "stream":
        return _fenced(ANSI.sub("", _text(out.get("text", ""))))
    if kind == "error":
        return _fenced(
            ANSI.sub("", "\n".join(out.get("traceback", [])) or f"{out['ename']}: {out['evalue']}")
        )
    data = out.get("data", {})
    page = _text(data.get("text/html", ""))
    if page and "<script" not in page.lower():
        return _raw_html(page)
    if "image/svg+xml" in data:
        return _raw_html(_text(data["image/svg+xml"]))
    for mime in ("image/png", "image/jpeg"):
        if mime in data:
            return (
                f'<img class="nb-output" alt="a figure" src="data:{mime};base64,{_text(data[mime]).strip()}">'
            )
    if "text/markdown" in data:
        return _text(data["text/markdown"])
    if "application/vnd.jupyter.widget-view+json" in data:
        return "*A live widget: it shows when the notebook runs in Jupyter.*"
    if PLOTLY in data:  # its JSON in an attribute, escaped: DRAW reads it back
        figure = html.escape(json.dumps(data[PLOTLY]), quote=True)
        return f'<div class="nb-output nb-plotly" markdown="0" data-figure="{figure}"></div>'
    if "text/plain" in data:
        return _fenced(_text(data["text/plain"]))
    return ""


def _where(path: Path, stored: bool) -> str:
    """The line below a notebook's title: where to get it, and whether its outputs are shown."""
    shown = (
        "Its outputs are those it was saved with."
        if stored
        else "It is saved without its outputs: run it to see what each cell shows."
    )
    return (
        f"*A notebook: [download {html.escape(path.name)}]({path.name}) and run it with"
        f' `pip install -e ".[notebook]"` and `jupyter lab notebooks/`. {shown}*'
    )


def page(path: Path) -> str:
    """The markdown of one notebook's page."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    stored = any(cell.get("outputs") for cell in nb["cells"])
    parts = []
    for i, cell in enumerate(nb["cells"]):
        source = _text(cell.get("source", ""))
        if cell["cell_type"] == "markdown":
            parts.append(source)
            if i == 0:  # below the title
                parts.append(_where(path, stored))
        elif cell["cell_type"] == "code" and source.strip():
            parts.append(_fenced(source, "python"))
            parts += [shown for out in cell.get("outputs", []) if (shown := output(out))]
    if _has_figures(nb):  # the page is notebooks/<name>.html: plotly.js is one folder up
        parts += [f'<script src="../{PLOTLY_JS}"></script>', DRAW]
    return "\n\n".join(parts) + "\n"


def _has_figures(nb: dict[str, Any]) -> bool:
    return any(PLOTLY in out.get("data", {}) for cell in nb["cells"] for out in cell.get("outputs", []))


def on_config(config: MkDocsConfig, **kwargs: Any) -> MkDocsConfig:
    nav = config.nav if config.nav is not None else []
    nav.append({SECTION: [f"notebooks/{nb.stem}.md" for nb in notebooks()]})
    config.nav = nav
    return config


@event_priority(50)  # before the other plugins look at the files
def on_files(files: Files, config: MkDocsConfig, **kwargs: Any) -> Files:
    figures = False
    for nb in notebooks():
        files.append(File.generated(config, f"notebooks/{nb.stem}.md", content=page(nb)))
        files.append(File.generated(config, f"notebooks/{nb.name}", abs_src_path=str(nb)))
        figures = figures or _has_figures(json.loads(nb.read_text(encoding="utf-8")))
    if figures:
        from plotly.offline import get_plotlyjs  # the plotly.js of the plotly that drew the figures

        files.append(File.generated(config, PLOTLY_JS, content=get_plotlyjs()))
    return files
