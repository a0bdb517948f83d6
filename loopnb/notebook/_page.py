"""A standalone page (the report, a comparison's page): its document, its policy, its style sheets.

One file that opens offline: a Content-Security-Policy forbids it to fetch anything or run a
script, and its style sheets take the notebook's theme variables, JupyterLab's dark values in a
dark browser. The style sheets are this package's own constants, declared ``Html`` (a style sheet
is never escaped: it is not HTML text); the title is text, escaped where it is filled in.
"""

from __future__ import annotations

from loopnb._palette import ACCENT, INK, PALETTE
from loopnb.notebook._html import Html
from loopnb.notebook._layout import CODE_BG, CODE_FONT, DARK, LIGHT, LINE, MUTED, PAGE, TEXT, UI_FONT
from loopnb.notebook._svg import SVG_STYLE

CSP = Html("default-src 'none'; style-src 'unsafe-inline'; img-src data:")
"""What the page may load: styles of its own, images inlined as data, nothing from anywhere."""


def css_variables(values: dict[str, str]) -> str:
    """A theme (``LIGHT``, ``DARK``) as the CSS declarations of its variables, for a page's ``:root``."""
    return ";".join(f"--jp-{name}:{value}" for name, value in values.items())


REPORT_STYLE = (
    Html(  # our own constants: a style sheet is never escaped (it is not HTML text)
        f":root{{{css_variables(LIGHT)};color-scheme:light dark}}"
        # a dark browser: JupyterLab's dark theme
        f"@media (prefers-color-scheme:dark){{:root{{{css_variables(DARK)}}}}}"
        f"""
body{{font-family:{UI_FONT};margin:24px auto;padding:0 16px;color:{TEXT};background:{PAGE};
max-width:1240px;font-size:14px;line-height:1.4}}
a{{color:inherit}}
h1{{font-size:22px;margin:0 0 6px}} h2{{font-size:17px;margin:36px 0 8px;border-top:2px solid {LINE};
padding-top:14px;overflow-wrap:anywhere}} h3{{font-size:15px;margin:22px 0 6px}}
code{{font-family:{CODE_FONT};font-size:12px}}
.runs{{margin:0;padding-left:20px}} .status{{margin:4px 0 12px}} .task{{color:{MUTED}}}
.word{{display:inline-flex;align-items:center;gap:0;padding:0 7px;border-radius:9px;color:{INK};
font-weight:600;white-space:nowrap;border:1px solid}}
.panes{{display:flex;flex-wrap:wrap;gap:12px 28px;align-items:flex-start;margin:8px 0}}
.loopnb-board{{flex:1 1 420px;min-width:0}}
.loopnb-board h3{{font-size:13px;margin:12px 0 4px}} .loopnb-board table{{border-collapse:collapse}}
.loopnb-board td,.loopnb-board th{{padding:2px 10px 2px 0;text-align:left;vertical-align:top}}
.loopnb-board th{{white-space:nowrap}} .loopnb-board td:first-child{{overflow-wrap:anywhere}}
svg.loopnb-icon{{display:inline-block;vertical-align:-1px}}
table.loopnb-turns{{border-collapse:collapse;width:100%;font-size:13px}}
table.loopnb-turns th{{text-align:left;white-space:nowrap;border-bottom:2px solid {LINE};padding:4px 8px;
position:sticky;top:0;background:{PAGE}}}
table.loopnb-turns td{{border-bottom:1px solid {LINE};padding:5px 8px;vertical-align:top;
overflow-wrap:break-word}}
table.loopnb-turns td.wide{{overflow-wrap:anywhere;min-width:14em}}
table.loopnb-turns td.n{{white-space:nowrap;text-align:right}}
table.loopnb-turns tr:target td:first-child{{box-shadow:inset 4px 0 0 {ACCENT}}}
tr.loopnb-turn{{scroll-margin-top:40px}}
.item{{font-size:12px;color:{MUTED};margin-top:4px}} .item.error{{color:{TEXT};font-weight:600}}
pre{{white-space:pre-wrap;overflow-wrap:anywhere;margin:2px 0 6px;padding:4px 6px;background:{CODE_BG};
color:{TEXT};font-family:{CODE_FONT};border-radius:4px;max-height:18em;overflow:auto;font-size:12px}}
pre.error{{border-left:3px solid {PALETTE["hard"]}}}
.reply{{font-style:italic;margin-top:3px}} .muted{{color:{MUTED}}}
@media print{{pre{{max-height:none}} table.loopnb-turns th{{position:static}}}}
"""
    )
    + SVG_STYLE
)
"""The report's style sheet (``to_html``)."""

COMPARE_STYLE = (
    Html(  # our own constants: a style sheet is never escaped (it is not HTML text)
        f":root{{{css_variables(LIGHT)};color-scheme:light dark}}"
        f"@media (prefers-color-scheme:dark){{:root{{{css_variables(DARK)}}}}}"
        f"body{{font-family:{UI_FONT};margin:24px auto;padding:0 16px;color:{TEXT};background:{PAGE};"
        "max-width:1240px;font-size:14px;line-height:1.4}"
        f"h1{{font-size:22px;margin:0 0 6px}}h3{{font-size:15px;margin:22px 0 6px}}"
        f"code{{font-family:{CODE_FONT};font-size:12px}}"
        "pre{max-height:18em;overflow:auto}"
    )
    + SVG_STYLE
)
"""A comparison's page's style sheet (``Comparison.to_html``)."""


def page(title: str, style: Html, body: Html) -> str:
    """The whole document, as a plain string (what leaves for a file)."""
    return str(
        Html(
            "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            '<meta http-equiv="Content-Security-Policy" content="{csp}">'
            "<title>{title}</title><style>{style}</style></head><body>"
            "<h1>{title}</h1>{body}</body></html>\n"
        ).format(csp=CSP, title=title, style=style, body=body)
    )
