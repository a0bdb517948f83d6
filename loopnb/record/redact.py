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

__all__ = [
    "DEFAULT_PATTERNS",
    "DEFAULT_REDACTOR",
    "DEFAULT_RULES",
    "REDACTED",
    "Redact",
    "Redactor",
]

REDACTED = "[REDACTED]"

Redact = Callable[[str], str]
"""A redaction hook: the JSON text of one event in, the text to write out."""

# Every pattern stops at quotes, backslashes and whitespace, so that a match never eats the JSON
# around a secret, whether it sits in a JSON value or inside an escaped string (or crosses lines).
_VALUE = r"[^\s\"'\\,;&}{\]\[]"
Trigger = str | re.Pattern[str]
"""A cheap test before a pattern runs: a lower-case word looked for in the lower-cased text, a
word with capitals looked for as is, or a regex (with a literal prefix, so that it scans fast)
searched in the lower-cased text. The assignment rule's triggers need a separator after the
word, because its words also name fields of the events themselves (``input_tokens``)."""

DEFAULT_RULES: tuple[tuple[str, tuple[Trigger, ...]], ...] = (
    # Anthropic (sk-ant-...) and OpenAI (sk-..., sk-proj-...) style API keys.
    (r"(?<![A-Za-z0-9])(?P<secret>sk-[A-Za-z0-9_\-]{16,})", ("sk-",)),
    # Authorization: Bearer <token>
    (r"(?i:bearer)\s+(?P<secret>[A-Za-z0-9._~+/=\-]{8,})", ("bearer",)),
    # api_key=..., "api_key": "...", password: ..., X_ACCESS_TOKEN=..., also inside escaped JSON.
    (
        r"(?i:api[_\-]?key|apikey|access[_\-]?key|secret|token|password|passwd)"
        r"\\?[\"']?\s*[:=]\s*\\?[\"']?(?P<secret>" + _VALUE + r"{3,})",
        tuple(
            re.compile(word + r"\\?[\"']?\s*[:=]")
            for word in ("key", "secret", "token", "password", "passwd")
        ),
    ),
    # AWS access key ids.
    (r"(?<![A-Z0-9])(?P<secret>(?:AKIA|ASIA)[0-9A-Z]{16})(?![A-Z0-9])", ("AKIA", "ASIA")),
    # GitHub tokens and Google API keys.
    (
        r"(?<![A-Za-z0-9])(?P<secret>gh[pousr]_[A-Za-z0-9]{30,})",
        (re.compile("gh[pousr]_"),),
    ),
    (r"(?<![A-Za-z0-9])(?P<secret>AIza[0-9A-Za-z_\-]{35})", ("AIza",)),
)
DEFAULT_PATTERNS: tuple[str, ...] = tuple(p for p, _ in DEFAULT_RULES)
_TRIGGERS = dict(DEFAULT_RULES)


def _found(triggers: tuple[Trigger, ...], text: str, lowered: str) -> bool:
    for t in triggers:
        if isinstance(t, str):
            if t in (lowered if t.islower() else text):
                return True
        elif t.search(lowered) is not None:
            return True
    return False


class Redactor:
    """Replaces every match of its patterns with ``replacement`` (``[REDACTED]``).

    ``Redactor()`` has the default patterns; ``Redactor([...])`` only yours;
    ``Redactor().extend(...)`` the defaults and yours. Each default pattern runs only when one of
    its trigger words occurs in the lower-cased text (a cheap test that keeps the common case, no
    secret at all, fast); your own patterns always run.
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
        self._rules = [(p, _TRIGGERS.get(p.pattern)) for p in self.patterns]

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

    def __call__(self, text: str) -> str:
        lowered = text.lower()
        for pattern, triggers in self._rules:
            if triggers is not None and not _found(triggers, text, lowered):
                continue
            if pattern.search(text) is not None:
                text = pattern.sub(self._replace, text)
        return text

    def __repr__(self) -> str:
        return f"Redactor({len(self.patterns)} patterns, replacement={self.replacement!r})"


DEFAULT_REDACTOR = Redactor()
"""The redactor a ``Recorder`` uses unless told otherwise."""
