"""Secrets never land in files: the redaction applied to every line before it is written.

A redactor is any callable ``(text) -> text``. It receives the JSON text of one event and must
return JSON text (a replacement containing no quote or backslash keeps it valid; the recorder
checks every line a redactor changed). ``Redactor`` is the built-in one: a list of regular
expressions; a pattern with a group named ``secret`` replaces only that group, else the whole
match. The defaults cover OpenAI- and Anthropic-style keys, bearer tokens, AWS access key ids,
GitHub and Google API tokens, and ``api_key=...`` / ``"password": "..."``-style assignments::

    Recorder("run.jsonl", redact=Redactor().extend(r"corp-[0-9a-f]{32}"))

In-memory frames keep exactly what the model read; only files and exports are redacted.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import NamedTuple

__all__ = [
    "DEFAULT_PATTERNS",
    "DEFAULT_REDACTOR",
    "DEFAULT_RULES",
    "REDACTED",
    "Redact",
    "Redactor",
    "Rule",
]

REDACTED = "[REDACTED]"

Redact = Callable[[str], str]
"""A redaction hook: the JSON text of one event in, the text to write out."""

# Every pattern stops at quotes, backslashes and whitespace, so that a match never eats the JSON
# around a secret, whether it sits in a JSON value or inside an escaped string (or crosses lines).
_VALUE = r"[^\s\"'\\,;&}{\]\[]"
_SEPARATOR = r"\\?[\"']?\s*[:=]"


class Rule(NamedTuple):
    """A default pattern and the cheap test that must pass before it runs.

    ``triggers`` are ``(gate, regex)`` pairs: the pattern runs only when one regex is found, and a
    regex is only searched for when its ``gate`` (a single character; ``""`` for none) is in the
    text, a ``memchr`` far cheaper than any scan for a word (``"bearer" in text`` costs as much
    as the regex search: both walk the text). With ``fold``, both are looked for in
    the case-folded text, where every case-insensitive match of the pattern shows in lower case
    (``str.casefold`` also maps the long s and the Kelvin sign, which the regex engine takes for
    ``s`` and ``k``); else in the text as it is. Each trigger is a necessary condition of a match,
    so skipping the pattern when none is found never changes the result.
    """

    pattern: str
    triggers: tuple[tuple[str, str], ...]
    fold: bool = False


DEFAULT_RULES: tuple[Rule, ...] = (
    # Anthropic (sk-ant-...) and OpenAI (sk-..., sk-proj-...) style API keys.
    Rule(r"(?<![A-Za-z0-9])(?P<secret>sk-[A-Za-z0-9_\-]{16,})", (("-", "sk-"),)),
    # Authorization: Bearer <token>
    Rule(r"(?i:bearer)\s+(?P<secret>[A-Za-z0-9._~+/=\-]{8,})", (("", "bearer"),), fold=True),
    # api_key=..., "api_key": "...", password: ..., X_ACCESS_TOKEN=..., also inside escaped JSON.
    # A word alone would not do as a trigger: "token" also names fields of the events themselves
    # (input_tokens), so each word is looked for with its separator after it. "key" and "token"
    # share one scan, from the "k" both have: a scan of a turn's text is most of the screen's cost.
    Rule(
        r"(?i:api[_\-]?key|apikey|access[_\-]?key|secret|token|password|passwd)"
        + _SEPARATOR
        + r"\s*\\?[\"']?(?P<secret>"
        + _VALUE
        + r"{3,})",
        (
            ("", "k(?:ey|(?<=tok)en)" + _SEPARATOR),
            ("", "secret" + _SEPARATOR),
            ("w", "passw(?:or)?d" + _SEPARATOR),
        ),
        fold=True,
    ),
    # AWS access key ids.
    Rule(r"(?<![A-Z0-9])(?P<secret>(?:AKIA|ASIA)[0-9A-Z]{16})(?![A-Z0-9])", (("A", "A(?:KIA|SIA)"),)),
    # GitHub tokens and Google API keys.
    Rule(r"(?<![A-Za-z0-9])(?P<secret>gh[pousr]_[A-Za-z0-9]{30,})", (("", "gh[pousr]_"),)),
    Rule(r"(?<![A-Za-z0-9])(?P<secret>AIza[0-9A-Za-z_\-]{35})", (("A", "AIza"),)),
)
DEFAULT_PATTERNS: tuple[str, ...] = tuple(rule.pattern for rule in DEFAULT_RULES)

_Triggers = tuple[tuple[str, re.Pattern[str]], ...]
_PLAIN_FLAGS = re.compile("").flags
_TRIGGERS: dict[str, tuple[_Triggers, bool]] = {
    rule.pattern: (tuple((gate, re.compile(regex)) for gate, regex in rule.triggers), rule.fold)
    for rule in DEFAULT_RULES
}


def _triggers_of(pattern: re.Pattern[str]) -> tuple[_Triggers | None, bool]:
    # A default pattern compiled with other flags (re.I, say) matches more: it always runs.
    if pattern.flags != _PLAIN_FLAGS:
        return None, False
    return _TRIGGERS.get(pattern.pattern, (None, False))


class Redactor:
    """Replaces every match of its patterns with ``replacement`` (``[REDACTED]``).

    ``Redactor()`` has the default patterns; ``Redactor([...])`` only yours;
    ``Redactor().extend(...)`` the defaults and yours. Each default pattern runs only when one of
    its triggers is found (see ``Rule``: a cheap test that keeps the common case, no secret at
    all, fast); your own patterns always run. The result is always that of running every
    pattern in turn.
    """

    def __init__(
        self,
        patterns: Iterable[str | re.Pattern[str]] = DEFAULT_PATTERNS,
        *,
        replacement: str = REDACTED,
    ) -> None:
        self.patterns: tuple[re.Pattern[str], ...] = tuple(
            p if isinstance(p, re.Pattern) else re.compile(p) for p in patterns
        )
        self.replacement = replacement
        self._rules = [(p, *_triggers_of(p)) for p in self.patterns]
        # Every trigger of every rule in one flat list, for the quick look at the whole text; only
        # when all the patterns have triggers can a miss skip them all.
        self._screen: list[tuple[str, re.Pattern[str], bool]] | None = None
        if all(triggers is not None for _, triggers, _ in self._rules):
            self._screen = [
                (gate, trigger, fold) for _, triggers, fold in self._rules for gate, trigger in triggers or ()
            ]

    def extend(self, *patterns: str | re.Pattern[str]) -> Redactor:
        """A new redactor with these patterns added to this one's."""
        return Redactor((*self.patterns, *patterns), replacement=self.replacement)

    def _replace(self, match: re.Match[str]) -> str:
        if "secret" not in match.re.groupindex:
            return self.replacement
        start, end = match.span("secret")
        whole_start = match.start()
        text = match.group(0)
        return text[: start - whole_start] + self.replacement + text[end - whole_start :]

    def _any_trigger(self, text: str, screen: list[tuple[str, re.Pattern[str], bool]]) -> bool:
        folded = text.casefold()
        for gate, trigger, fold in screen:
            haystack = folded if fold else text
            if (not gate or gate in haystack) and trigger.search(haystack) is not None:
                return True
        return False

    def __call__(self, text: str) -> str:
        screen = self._screen
        if screen is not None and not self._any_trigger(text, screen):
            return text  # the common case: no trigger at all, so no pattern can match
        folded = None
        for pattern, triggers, fold in self._rules:
            if triggers is not None:
                if fold:
                    if folded is None:
                        folded = text.casefold()
                    haystack = folded
                else:
                    haystack = text
                for gate, trigger in triggers:
                    if (not gate or gate in haystack) and trigger.search(haystack) is not None:
                        break
                else:
                    continue
            if pattern.search(text) is not None:
                text = pattern.sub(self._replace, text)
                folded = None  # the next triggers look at the text as it is now
        return text

    def __repr__(self) -> str:
        return f"Redactor({len(self.patterns)} patterns, replacement={self.replacement!r})"


DEFAULT_REDACTOR = Redactor()
"""The redactor a ``Recorder`` uses unless told otherwise."""
