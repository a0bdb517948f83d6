"""Secrets never land in files: the redaction applied to every line before it is written.

A redactor is any callable ``(text) -> text``. It receives the JSON text of one or more events
(one a line) and must return JSON text, line for line (a replacement containing no quote,
backslash or newline keeps it valid; the recorder checks that every line a redactor changed is
still a valid event). ``Redactor`` is the built-in one: a list of regular expressions; a pattern
with a group named ``secret`` replaces only that group, else the whole match. The defaults cover
OpenAI and Anthropic keys; GitHub, GitLab, Slack, Stripe, Google, Hugging Face, npm, PyPI,
Shopify, DigitalOcean, Linear and Groq tokens; AWS access key ids; JSON Web Tokens; private keys
(PEM); ``Bearer`` and ``Basic`` authorization; passwords in URLs; and ``api_key=...`` /
``"password": "..."`` / ``SECRET_KEY=...``-style assignments, whose value is replaced whole (a
quoted one to its closing quote, punctuation and spaces included). They find a secret wherever
it stands: in JSON escaped inside a string at any depth (a tool's JSON result), right after a
control character or an ANSI sequence (``\\u001b[K``), or URL-encoded (``token%3D...``,
``Bearer%20...``). They keep ordinary text, paths, hashes, UUIDs and numbers as they are, and a
JSON number, ``null`` or boolean is never replaced (the line would not be JSON). They do not
catch a secret with nothing to recognise it by: a bare AWS secret key (40 characters of
base64), a password in prose ("the password is ..."), a key spelt with ``\\u`` escapes. Add
your own formats::

    Recorder("run.jsonl", redact=Redactor().extend(r"corp-[0-9a-f]{32}"))

In-memory frames keep exactly what the model read; only files and exports are redacted.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import NamedTuple

REDACTED = "[REDACTED]"

Redact = Callable[[str], str]
"""A redaction hook: the JSON text of one event in, the text to write out."""


def _token(prefix: str, body: str, word: str = "A-Za-z0-9") -> str:
    """A token: ``prefix`` (a fixed-width regex, literal first), then ``body``; not inside a word
    (of ``word`` characters), but maybe right after anything that stands for a character that
    is not one: a JSON escape at any depth (a token starting a line of a model's reply is
    "\\nsk-..." in the serialised text, one after a vertical tab "\\u000bsk-..."), an ANSI
    control sequence ("\\u001b[32msk-...", "\\u001b[Ksk-...") or a URL-encoded character
    ("Bearer%20sk-..."). The prefix comes first and the boundary is looked at behind it, so that
    the regex engine finds candidates by the prefix's first character (a lookbehind first made
    the search some thirty times slower)."""
    boundary = (
        rf"(?:(?<![{word}]{prefix})|(?<=\\[nrtbfv]{prefix})|(?<=\\u[0-9a-fA-F]{{4}}{prefix})"
        rf"|(?<=%[0-9A-Fa-f]{{2}}{prefix})|(?<=[\[0-9;][A-Za-z]{prefix}))"
    )
    return f"(?P<secret>{prefix}{boundary}{body})"


# A space in an assignment or a header, as it is or URL-encoded.
_SP = r"(?:[ \t]|%20)"
# After the name: its closing quote, as it is (a JSON key: "kq"), escaped at any depth of JSON
# inside a string ("kb": a key of JSON at that depth if its value's quote is as deep, "kv"), or
# URL-encoded; then ":", "=" or "=>", maybe URL-encoded too.
_KEY_END = r"(?:(?P<kq>\")|(?P<kb>\\+)[\"']?|'|%2[27])?"
_ASSIGN = _SP + r"*(?:[:=]|%3[AaDd])>?" + _SP + "*"
# The cheap test for a name followed by its separator, in the case-folded text.
_SEPARATOR = r"(?:\\*[\"']?|%2[27])" + _SP + r"*(?:[:=]|%3[AaDd])"
# A quoted value runs to its closing quote, so that a password holding ", ; & { } [ ]" or spaces
# is replaced whole. At the value's depth of JSON inside strings, its quote is written after
# "qb" backslashes (none, 1, 3, 7...) and one of its own backslashes as twice as many plus two
# (a "pair": 2, 4, 8...): a double quote ("dq") after pairs and qb closes it, after pairs and
# 2 qb + 1 it is part of the value, after any other run it closes a string around the value (the
# value is then taken as unquoted). Any other backslash run is taken whole with the character it
# escapes, but no escaped line break: a value is on one line.
_PAIR = r"\\(?P=qb)\\(?P=qb)"
_QUOTED = (
    r"(?:(?!(?P=q))(?:[^\\\"\n]|\\++[^\\\"\nnr]|(?(dq)(?:" + _PAIR + r")*+\\(?P=qb)(?P=qb)\"|(?!))"
    r"|(?:" + _PAIR + r")++(?=(?P=q))))+(?=(?P=q))"
)
# An unquoted value stops at quotes, backslashes and whitespace, so that a match never eats the
# JSON around a secret, whether it sits in a JSON value or inside an escaped string (or crosses
# lines); a \uXXXX escape (a non-ASCII character of JSON inside a string) is taken whole. It
# holds "& ; , { } [ ]" (and "%26", an encoded "&"), except where one starts the next field of a
# query or a mapping ("&page=2", ", user: bob") or closes what holds the value ("}" at its end).
_PUNCT = r"(?:[&;,{}\[\]]|%26)"
_UNQUOTED = (
    r"(?:[^\s\"'\\&;,{}\[\]%]|%(?!26)|\\+u[0-9a-fA-F]{4}|"
    + _PUNCT
    + r"(?![{}\[\]]*(?:[\s\"'\\]|\Z))(?!"
    + _SP
    + r"*[A-Za-z_][\w.\-]*(?:[=:]|%3[AaDd])))"
)
# What stands between two strings of JSON: a bare double quote after a name that is not a JSON
# key (one inside a string, "password: ") is that string's end, not a value's opening, when all
# that follows up to the next quote is this.
_STRUCTURE = r"(?:[\s,:{}\[\]0-9.eE+\-]|\\+[tnr]|true|false|null)"
# The opening quote of a closed value ("q"): a JSON key's value's is a bare double quote
# ("dq"); another's may be escaped ("qb" backslashes: as many as after the name, "kv", for a JSON
# key's value at a depth), a single quote, or URL-encoded. A double quote after a name that is
# no key of JSON must not open only structure.
_OPEN = (
    r"(?P<q>(?P<qb>(?(kq)|(?P<kv>(?(kb)(?P=kb)(?!\\)|(?!)))?\\*+))(?:(?P<dq>\")|(?(kq)(?!)|'))"
    r"|(?(kq)(?!)|%2[27]))(?(dq)(?(kq)|(?(kv)|(?!" + _STRUCTURE + r"*+(?P=q)))))"
)
# The value: quoted and closed, or unquoted, maybe after an unclosed quote ("uq"; then not
# starting with punctuation, the next field of JSON). A JSON key's value ("kq") is a closed
# string, or nothing to redact (a number, null, true, false: the replacement would not be JSON);
# a backslash is only ever taken with its quote, so that a replacement never splits an escape
# ("token:\nabc" is left alone).
_VALUE = (
    f"(?:{_OPEN}|(?(kq)(?!)|(?P<uq>\\\\*[\"']|%2[27])?))(?!(?:null|true|false)\\b)"
    f"(?P<secret>(?(q){_QUOTED}|(?(uq)(?!{_PUNCT})){_UNQUOTED}{{3,}}))"
)


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


_K = "k(?:(?:ey|(?<=tok)en)" + _SEPARATOR + "|_(?:live|test|prod)_)"
"""The scan for "key" and "token" followed by a separator, and for Stripe's keys (sk_live_...):
one scan from the "k" they all have (a scan of a turn's text is most of the screen's cost). A
word alone would not do: "token" also names fields of the events themselves (input_tokens)."""
_DASH = r"-(?<=[kabposrti]-)(?:(?<=sk-)|(?<=xox[abposr]-)|(?<=xapp-)|(?<=glpat-)|(?<=pypi-))|-----BEGIN"
"""The scan for the tokens with a "-" (OpenAI, Anthropic, Slack, GitLab, PyPI, private keys): one
look at each "-", of which the events hold few, and a closer one only after a letter that ends a
prefix."""
_US = (
    r"_(?<=[pousrtfma1ik]_)(?:(?<=gh[pousr]_|gsk_|npm_)|(?<=hf_)|(?<=shp(?:at|ca|pa|ss)_)"
    r"|(?<=do[opr]_v1_)|(?<=lin_api_)|(?<=github_pat_))"
)
"""The scan for the tokens with a "_" (GitHub, Hugging Face, npm, Shopify, DigitalOcean, Linear,
Groq): one look at each "_", and a closer one only after a character that ends a prefix (the
prefixes of one width in one look)."""
_B = "b(?:earer|as(?:i\u0307?|\u0131)c)"
"""The scan for the "Bearer" and "Basic" of an Authorization header, in the case-folded text
(under re.I an "i" also matches "\u0130" and "\u0131", which case-fold to "i\u0307" and
"\u0131")."""
_A = "A(?:KIA|SIA|BIA|CCA|Iza)"
"""The scan for AWS access key ids and Google API keys."""

DEFAULT_RULES: tuple[Rule, ...] = (
    # Anthropic (sk-ant-...) and OpenAI (sk-..., sk-proj-...) API keys.
    Rule(_token("sk-", r"[A-Za-z0-9_\-]{16,}"), (("-", _DASH),)),
    # Slack (xoxb-..., xapp-...) and GitLab (glpat-...) tokens.
    Rule(_token("xox[abposr]-", r"[A-Za-z0-9\-]{10,}"), (("-", _DASH),)),
    Rule(_token("xapp-", r"[A-Za-z0-9\-]{10,}"), (("-", _DASH),)),
    Rule(_token("glpat-", r"[A-Za-z0-9_\-]{20,}"), (("-", _DASH),)),
    # PyPI upload tokens (a macaroon: pypi-AgEIcHlwaS5vcmc...).
    Rule(_token("pypi-", r"AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}"), (("-", _DASH),)),
    # PEM private keys: the base64 body (first: an assignment would take only "-----BEGIN").
    Rule(
        r"-----BEGIN[A-Z ]{0,40}PRIVATE KEY[A-Z ]{0,10}-----(?P<secret>(?:[A-Za-z0-9+/=\r\n]|\\+[nr])+)",
        (("-", _DASH),),
    ),
    # Stripe secret and restricted keys (sk_live_..., rk_test_...).
    Rule(_token("[rs]k_(?:live|test|prod)_", "[A-Za-z0-9]{10,}"), (("", _K),), fold=True),
    # Authorization: Bearer <token>
    Rule(
        r"[bB](?i:earer)(?:\s|%20|\+|\\+[tnr]|\\+u00(?:0[9bc]|20|a0))+"
        r"(?P<secret>(?:[A-Za-z0-9._~+/=\-]|%[0-9A-Fa-f]{2}){8,})",
        (("", _B),),
        fold=True,
    ),
    # Authorization: Basic <base64 of user:password>
    Rule(
        # (the literal first: the pattern only looks at the header as it is usually written)
        r"uthorization(?<=[Aa]uthorization)"
        + _SEPARATOR
        + _SP
        + r"*(?:\\*[\"']|%2[27])?[Bb]asic(?:[ \t]|%20|\+)+"
        r"(?P<secret>(?:[A-Za-z0-9+/]|%2[BbFf]){6,}(?:=|%3[Dd]){0,2})",
        (("", _B),),
        fold=True,
    ),
    # api_key=..., "api_key": "...", password: ..., X_ACCESS_TOKEN=..., SECRET_KEY=..., also
    # inside escaped JSON (at any depth); never a JSON number or literal.
    Rule(
        # The names factored by their first letter: each place in the text is tried faster.
        r"(?i:a(?:pi|ccess)[_\-]?key|secret(?:[_\-]?key)?|token|p(?:assw(?:or)?d|rivate[_\-]?key))"
        + _KEY_END
        + _ASSIGN
        + _VALUE,
        (
            ("", _K),
            ("", "secret" + _SEPARATOR),
            ("w", "passw(?:or)?d" + _SEPARATOR),
        ),
        fold=True,
    ),
    # Passwords in URLs: scheme://user:password@host.
    Rule(r"://[^\s:/@\"'\\]*:(?P<secret>[^\s/@\"'\\]{3,})@", (("@", "://"),)),
    # AWS access key ids (of users, sessions, bearer tokens, certificates).
    Rule(_token("(?:AKIA|ASIA|ABIA|ACCA)", "[0-9A-Z]{16}(?![A-Z0-9])", word="A-Z0-9"), (("A", _A),)),
    # GitHub tokens (ghp_..., gho_..., github_pat_...).
    Rule(_token("gh[pousr]_", "[A-Za-z0-9]{30,}"), (("", _US),)),
    Rule(_token("github_pat_", "[A-Za-z0-9_]{30,}"), (("", _US),)),
    # Hugging Face, npm, Shopify, DigitalOcean, Linear and Groq tokens.
    Rule(_token("hf_", "[A-Za-z0-9]{30,}"), (("", _US),)),
    Rule(_token("npm_", "[A-Za-z0-9]{36,}"), (("", _US),)),
    Rule(_token("shp(?:at|ca|pa|ss)_", "[a-fA-F0-9]{32,}"), (("", _US),)),
    Rule(_token("do[opr]_v1_", "[a-f0-9]{64,}"), (("", _US),)),
    Rule(_token("lin_api_", "[A-Za-z0-9]{40,}"), (("", _US),)),
    Rule(_token("gsk_", "[A-Za-z0-9]{52,}"), (("", _US),)),
    # Google API keys.
    Rule(_token("AIza", r"[0-9A-Za-z_\-]{35}"), (("A", _A),)),
    # JSON Web Tokens (header.payload.signature), wherever they appear without a "Bearer".
    Rule(_token("eyJ", r"[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*"), (("J", "eyJ"),)),
)
DEFAULT_PATTERNS: tuple[str, ...] = tuple(rule.pattern for rule in DEFAULT_RULES)
"""The regular expressions of the default rules, one a rule: what ``Redactor()`` finds and masks."""

_Triggers = tuple[tuple[str, re.Pattern[str]], ...]
_Screen = list[tuple[str, Callable[[str], "re.Match[str] | None"]]]
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
        # Every trigger of every rule, each once (rules share scans), for the quick look at the
        # whole text (a rule runs only when one of its own fires): the bound ``search`` of those
        # on the text as it is, then of those on the case-folded text (folded only if need be).
        # Only when all the patterns have triggers can a miss skip them all.
        self._screen: tuple[_Screen, _Screen] | None = None
        if all(triggers is not None for _, triggers, _ in self._rules):
            screen = dict.fromkeys(
                (gate, trigger, fold) for _, triggers, fold in self._rules for gate, trigger in triggers or ()
            )
            # A trigger with a gate adds nothing to the same one without.
            kept = [(g, t, f) for g, t, f in screen if not g or ("", t, f) not in screen]
            self._screen = (
                [(g, t.search) for g, t, f in kept if not f],
                [(g, t.search) for g, t, f in kept if f],
            )

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

    def _any_trigger(self, text: str, screen: tuple[_Screen, _Screen]) -> bool:
        plain, folded = screen
        for gate, search in plain:
            if gate in text and search(text) is not None:  # "" is in every text
                return True
        if folded:
            text = text.casefold()
            for gate, search in folded:
                if gate in text and search(text) is not None:
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
