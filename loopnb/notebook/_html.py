"""HTML by type: a string is either ``Html``, markup that is safe as it is, or text, escaped wherever it goes.

``Html`` is markupsafe's ``Markup``: ``Html('<b>{}</b>').format(text)``, ``Html(', ').join(parts)``
and ``html + text`` escape every plain ``str`` they are given and keep every ``Html`` as it is, so
untrusted text (anything from models, tools, recordings, other frameworks' files) cannot reach the
page unescaped by a forgotten call: the panes, the report and the comparison page are built of
``Html`` templates only, and a text must be escaped to become one. ipywidgets' ``HTML`` sets
``innerHTML``, where ``<img onerror>`` runs even though ``<script>`` does not.

Escaping also redacts, as every export is redacted: whatever becomes HTML may be saved. A notebook
keeps each output's static picture, and every pane's value when its front end saves widget state
(JupyterLab's "save widget state", nbclient's ``store_widget_state``), which the kernel cannot
tell from showing it. So the panes, live or replayed, show a key as ``[REDACTED]``; the views'
Python state (``view.state``, ``view.model``) and the frames keep exactly what the model read.
Control characters show as their pictures (``CONTROL_PICTURES``) rather than vanish. ``esc`` is
the same escaping with a cut (``esc(text, limit)``), for a text that may be of any length.

Only templates and this package's own constants (style sheets, fonts, colours) are declared
``Html(...)`` as they stand; everything known only at drawing time is filled into a template.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import Any

from markupsafe import Markup

from loopnb.record import _redact

CONTROL_PICTURES = {c: 0x2400 + c for c in range(32) if chr(c) not in "\t\n\r"} | {0x7F: 0x2421}
"""``str.translate`` table: control characters as their visible pictures (NUL as ␀), because
browsers drop a NUL from HTML and draw nothing for the others."""

_new = str.__new__
_format = str.format
_join = str.join


class Html(Markup):
    """Markup that is safe as it stands; a plain ``str`` combined with it is escaped (``escape``).

    ``format`` fills the template as markupsafe's does, each argument escaped by its type (an
    ``Html`` kept, a number formatted, anything else escaped as text), with one difference: its
    fields name arguments only (``{}``, ``{0}``, ``{name}``, with a format spec), never an
    attribute or an item (``{0.name}``, ``{0[k]}``), because an argument is escaped before it is
    filled in. That lets C's ``str.format`` do the filling: markupsafe's runs ``string.Formatter``
    in Python, some twenty times an f-string, and the live view redraws its timeline's 160 marks
    ten times a second. ``join`` is markupsafe's too, done the same way.
    """

    __slots__ = ()

    @classmethod
    def escape(cls, s: Any, /) -> Html:
        """``s`` as HTML: itself if it is markup (``__html__``), else its text redacted and escaped."""
        if type(s) is cls:
            return s
        if hasattr(s, "__html__"):
            return _new(cls, s.__html__())
        return _new(cls, _escaped(str(s)))

    def format(self, *args: Any, **kwargs: Any) -> Html:
        """The template filled in, every argument escaped by its type (see the class)."""
        if not _AS_IS.issuperset(map(type, args)):  # a test in C: most fields are markup or numbers
            args = tuple(map(_field, args))
        if kwargs and not _AS_IS.issuperset(map(type, kwargs.values())):
            kwargs = {name: _field(value) for name, value in kwargs.items()}
        return _new(Html, _format(self, *args, **kwargs))

    def join(self, parts: Iterable[Any], /) -> Html:
        """The parts, each escaped by its type, with this markup between them."""
        return _new(Html, _join(self, [p if p.__class__ is Html else Html.escape(p) for p in parts]))


_AS_IS = frozenset({Html, int, float})
"""What fills a field as it is, checked first by exact type (the common case, and the fast one)."""


def _field(value: Any) -> Any:
    """A template's argument as it may be filled in: markup and numbers as they are, else escaped."""
    if type(value) is Html or isinstance(value, (int, float)):  # a bool, numpy's float64: numbers
        return value
    return Html.escape(value)


def _escaped(text: str, limit: int | None = None) -> str:
    """Text made safe for HTML (element bodies and quoted attributes): redacted by the default
    redactor, then cut to ``limit`` (saying how much it left out), control characters as their
    pictures, ``& < > " '`` escaped."""
    s = _redact.DEFAULT_REDACTOR(text)  # looked up at each call: whoever sets the default sets it here
    if limit is not None and len(s) > limit:
        s = f"{s[: limit - 1]}… ({len(s) - limit + 1:,} more characters)"
    if not s.isprintable():  # a control character, maybe (a quick test: translating is slower)
        s = s.translate(CONTROL_PICTURES)
    return html.escape(s, quote=True)


def esc(text: object, limit: int | None = None) -> Html:
    """Untrusted text as ``Html``, optionally cut to ``limit`` characters.

    Secrets are redacted before the cut, so that a cut never leaves part of a key to be
    recognised. Markup given here is taken as text (its tags shown), as any other text is.
    """
    return _new(Html, _escaped(str(text), limit))
