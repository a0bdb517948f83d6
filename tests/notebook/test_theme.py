"""The view follows JupyterLab's theme and reads in both: every text against its background, measured.

The HTML panes are walked element by element (``html.parser``): each text's colour and the
background behind it come from the inline styles around it, with each ``var(--jp-*)`` resolved
to JupyterLab 4's light value, its dark value, or its fallback (no theme at all), on both of the
backgrounds a notebook puts behind an output. Every text must reach WCAG AA (4.5:1). The SVG
panes colour text by class (``SVG_STYLE``): their pairs are read from the style sheet itself.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from loopnb._palette import ACCENT, GLYPH, IDLE, INK, ON_ACCENT, PALE, PALETTE, SHAPE
from loopnb.notebook import LiveView, ViewModel
from loopnb.notebook._layout import CODE_FONT, DARK, FALLBACK, LIGHT
from loopnb.notebook._markup import board_html, inspector_html, status_html, summary_html
from loopnb.notebook._state import BreakerView, ViewState, at_turn
from loopnb.notebook._svg import SVG_STYLE
from tests.notebook import scenarios as S
from tests.notebook.conftest import run_events

AA = 4.5
THEMES = {"light": LIGHT, "dark": DARK, "none": {}}
"""Where the view is shown: JupyterLab light, JupyterLab dark, a page without JupyterLab's CSS."""
Colour = tuple[float, float, float, float]


def rgba(value: str) -> Colour:
    value = value.strip()
    if value.startswith("rgba("):
        r, g, b, a = (float(x) for x in value[5:-1].split(","))
        return r, g, b, a
    assert re.fullmatch(r"#[0-9a-fA-F]{3}|#[0-9a-fA-F]{6}", value), f"not a colour the test reads: {value!r}"
    digits = value[1:] if len(value) == 7 else "".join(c * 2 for c in value[1:])
    return int(digits[0:2], 16), int(digits[2:4], 16), int(digits[4:6], 16), 1.0


def over(top: Colour, below: Colour) -> Colour:
    """``top`` drawn on the opaque ``below``."""
    a = top[3]
    return (*(a * t + (1 - a) * b for t, b in zip(top[:3], below[:3], strict=True)), 1.0)  # type: ignore[return-value]


def luminance(c: Colour) -> float:
    def channel(v: float) -> float:
        v /= 255
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

    return 0.2126 * channel(c[0]) + 0.7152 * channel(c[1]) + 0.0722 * channel(c[2])


def contrast(fg: Colour, bg: Colour) -> float:
    """WCAG's contrast ratio of ``fg`` drawn on the opaque ``bg``."""
    hi, lo = sorted((luminance(over(fg, bg)), luminance(bg)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def resolve(value: str, theme: dict[str, str]) -> str:
    """A CSS colour with its ``var(--jp-*, fallback)`` as ``theme`` defines it."""
    found = re.fullmatch(r"var\(--jp-([\w-]+), ([^)]+)\)", value.strip())
    if found is None:
        return value
    return theme.get(found[1], found[2])


def test_the_contrast_arithmetic():
    assert contrast(rgba("#000"), rgba("#fff")) == pytest.approx(21.0)
    assert contrast(rgba("#777777"), rgba("#ffffff")) == pytest.approx(4.48, abs=0.01)
    assert contrast(rgba("rgba(0,0,0,.54)"), rgba("#ffffff")) == pytest.approx(4.59, abs=0.01)


def test_fallbacks_are_the_light_theme_on_white():
    """Without JupyterLab's CSS (nbviewer, the report) the panes look as in the light theme."""
    white = rgba("#ffffff")
    for name, value in LIGHT.items():
        assert over(rgba(value), white) == pytest.approx(over(rgba(FALLBACK[name]), white), abs=0.6), name
    assert set(LIGHT) == set(DARK) == set(FALLBACK)


# -- the HTML panes, walked ------------------------------------------------------------------------


class Texts(HTMLParser):
    """Every text of an HTML fragment with the colour and background its inline styles give it."""

    VOID = frozenset({"br", "meta", "img", "hr", "input"})

    def __init__(self, theme: dict[str, str], page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.theme = theme
        self.stack: list[tuple[str, Colour, Colour]] = [
            ("page", rgba(resolve(TEXT_DEFAULT, theme)), rgba(page))
        ]
        self.texts: list[tuple[str, float]] = []
        self.svg = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.VOID:
            return
        _, fg, bg = self.stack[-1]
        style = dict(attrs).get("style") or ""
        for declaration in style.split(";"):
            prop, _, value = declaration.partition(":")
            prop, value = prop.strip(), resolve(value, self.theme)
            if prop == "color" and value != "inherit":
                fg = rgba(value)
            elif prop in ("background", "background-color"):
                bg = over(rgba(value), bg)
        self.svg += tag == "svg"
        self.stack.append((tag, fg, bg))

    def handle_endtag(self, tag: str) -> None:
        if tag in self.VOID:
            return
        assert self.stack[-1][0] == tag, (tag, self.stack[-1][0])
        self.svg -= tag == "svg"
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        if data.strip(GRAPHICS + " ") and not self.svg:
            _, fg, bg = self.stack[-1]
            self.texts.append((data.strip(), contrast(fg, bg)))


GRAPHICS = "".join(GLYPH.values())
"""A channel's mark as a character (the summary's strip) is a picture beside a word, not text."""
TEXT_DEFAULT = "var(--jp-ui-font-color1, #212121)"
"""What a notebook's output text is before the view colours it (each pane sets it anyway)."""


def pane_html() -> list[str]:
    """Every HTML pane the view draws, over runs that show every kind of line."""
    out = []
    for scenario in (S.demo(), S.exhausted(), S.gave_up(), S.payload(), S.breaker()[:2]):
        state = ViewModel.fold(run_events(scenario)[0])
        out += [summary_html(state), board_html(state), status_html(state, "stopping")]
        out += [inspector_html(t) for t in state.turns]
        out += [status_html(at_turn(state, 1), replay=True), status_html(state, paused=2)]
    out.append(inspector_html(None))
    out.append(status_html(ViewState()))
    breakers = (BreakerView("b", "tool", "half_open", 1, 10.0), BreakerView("c", "tool", "open", 2, 5.0, 1.0))
    out.append(board_html(ViewState(breakers=breakers)))
    return out


@pytest.fixture(scope="module")
def panes() -> list[str]:
    return pane_html()


@pytest.mark.parametrize("theme", THEMES)
def test_every_html_text_reads_in_every_theme(panes, theme):
    values = THEMES[theme]
    worst = []
    for page in ("layout-color0", "layout-color1"):  # the notebook's background, or a panel's
        for markup in panes:
            walk = Texts(values, values.get(page, FALLBACK[page]))
            walk.feed(markup)
            walk.close()
            assert len(walk.stack) == 1, "unbalanced markup"
            worst += [(ratio, text, page) for text, ratio in walk.texts]
    assert len(worst) > 500  # the walk reached the texts
    worst.sort()
    assert worst[0][0] >= AA, worst[:5]


def test_the_inspectors_code_blocks_stay_monospace(panes):
    """Voila's widgets inherit the page's font, even in a ``pre``: the font is set on each."""
    blocks = [m for p in panes for m in re.findall(r"<(?:pre|code)\b[^>]*>", p)]
    assert len(blocks) > 50
    for tag in blocks:
        assert f"font-family:{CODE_FONT}" in tag, tag
    assert CODE_FONT.startswith("var(--jp-code-font-family, ui-monospace,") and CODE_FONT.endswith(
        "monospace)"
    )


def test_no_colour_outside_the_palette_and_the_theme(panes):
    allowed = {c.lower() for c in (*PALETTE.values(), *PALE.values(), INK, ACCENT, ON_ACCENT)}
    allowed.add(IDLE.lower())
    for markup in panes:
        for colour in re.findall(r"#[0-9a-fA-F]{6}\b|#[0-9a-fA-F]{3}\b", re.sub(r"var\([^)]*\)", "", markup)):
            assert colour.lower() in allowed, colour


def test_text_on_a_channel_stands_on_its_pale_fill_in_ink():
    """A chip stays pale in a dark theme, so its ink is fixed; the accent pill is white on blue."""
    for channel in PALETTE:
        assert contrast(rgba(INK), rgba(PALE[channel])) >= 12
    assert contrast(rgba(ON_ACCENT), rgba(ACCENT)) >= AA
    chip = re.search(
        r'<span class="loopnb-chip" data-channel="soft" style="([^"]*)"',
        inspector_html(ViewModel.fold(run_events(S.typo())[0]).turns[0]),
    )
    assert chip and f"background:{PALE['soft']};color:{INK}" in chip[1]
    assert set(GLYPH) == set(SHAPE) == set(PALETTE)


# -- the SVG panes' style sheet --------------------------------------------------------------------


def svg_rules() -> dict[str, str]:
    return dict(re.findall(r"([^{}]+)\{([^{}]*)\}", SVG_STYLE))


def paint(rule: str, prop: str = "fill") -> str:
    found = re.search(rf"(?:^|;){prop}:([^;]+)", svg_rules()[rule])
    assert found, (rule, prop)
    return found[1]


@pytest.mark.parametrize("theme", THEMES)
def test_svg_text_reads_in_every_theme(theme):
    values = THEMES[theme]

    def colour(value: str) -> Colour:
        return rgba(resolve(value, values))

    page = colour(paint(".loopnb-svg .halo", "stroke"))  # the halo is the page behind the text
    box = colour(paint(".loopnb-svg .node"))
    pairs = {
        "text on the page": (paint(".loopnb-svg text"), page),
        "small text on the page": (paint(".loopnb-svg .small"), page),
        "a step's words": (paint(".loopnb-svg text"), box),
        "a lit step's words": (paint(".loopnb-svg .lit text"), None),
    }
    ratios = {}
    for what, (fg, bg) in pairs.items():
        if bg is None:  # a lit step: the channel's pale fill
            ratios[what] = min(contrast(colour(fg), rgba(p)) for p in PALE.values())
        else:
            ratios[what] = contrast(colour(fg), bg)
    assert min(ratios.values()) >= AA, ratios
    assert page == colour(f"var(--jp-layout-color0, {FALLBACK['layout-color0']})")


def test_the_svg_panes_take_the_one_palette():
    for channel, colour in PALETTE.items():
        assert paint(f".loopnb-svg .k-{channel}") == colour
    assert "#" not in re.sub(r"\.k-\w+\{fill:#\w+\}|var\([^)]*\)|#9aa0a6|#222222", "", SVG_STYLE)


# -- Voila: nothing asks the network ---------------------------------------------------------------


def test_the_control_buttons_are_text_not_font_icons():
    """An ipywidgets icon is a Font Awesome name: Voila's page asks a CDN for that font."""

    class Controls:
        def pause(self) -> None: ...
        def step(self) -> None: ...
        def resume(self) -> None: ...
        def stop(self) -> None: ...

    view = LiveView(controls=Controls())
    try:
        assert list(view.buttons) == ["Pause", "Step", "Resume", "Stop"]
        for name, button in view.buttons.items():
            assert button.icon == "" and button.description.endswith(f" {name}")
            assert not button.description[0].isalnum()  # a glyph from the page's own font
    finally:
        view.close()
    style = view._style.value
    assert "http" not in style and "@import" not in style and "url(" not in style


# -- the audit figures --------------------------------------------------------------------------------


def test_audit_figures_take_the_palette_and_a_pattern_each():
    from loopnb.analysis import Audit, audit
    from loopnb.analysis._figures import PATTERN
    from loopnb.record import Recorder

    recorder = Recorder()
    for scenario in (S.demo(), S.exhausted(), S.gave_up()):
        scenario[0].subscribe(recorder)
        run_events(scenario)
    a = audit(recorder)
    channels = {"ok", "soft", "hard"}
    seen = set()
    for name in Audit.FIGURES:
        for bar in a.figure(name).data:
            colours = bar.marker.color if isinstance(bar.marker.color, tuple) else (bar.marker.color,)
            shapes = bar.marker.pattern.shape
            shapes = shapes if isinstance(shapes, tuple) else (shapes,) * len(colours)
            for colour, shape in zip(colours, shapes, strict=True):
                channel = next((c for c in channels if PALETTE[c] == colour), None)
                if channel is None:  # a streak left unfinished: greyed, dotted
                    assert (colour, shape) == (IDLE, "."), (name, bar.name, colour)
                else:
                    assert shape == PATTERN[channel], (name, bar.name)
                    seen.add(channel)
    assert seen == channels
    assert len(set(PATTERN.values())) == 3  # the channels told apart without colour
