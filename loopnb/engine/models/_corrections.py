"""How ``FallibleModel`` reads an error text: the corrected call it draws from it, if any.

The rules, first match wins, are the middle rows of the table in ``fallible``'s docstring: a
name the text says is unknown, a ``Did you mean`` suggestion, an argument the text names, a
value it quotes back, names it offers instead. A text that names only what the model meant
gives a reason to give up; a text that says nothing actionable gives ``None``.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from typing import Any

from loopnb.engine._messages import ToolCall, ToolSpec
from loopnb.engine.models import _mistakes as slips
from loopnb.engine.models._tokens import PATH_TOKEN, quoted

_CLOSE_ENOUGH = 0.6  # difflib's own default cutoff for a close match

_NOT_AVAILABLE = re.compile(r"tool '(?P<name>[^']*)' is not available")
_NOT_FOUND = re.compile(
    r"Tool not found: (?P<name>.*?)\. Available: (?P<available>.*?)"
    r"(?: Did you mean '(?P<suggestion>[^']*)'\?)?\s*$",
    re.DOTALL,
)
_DID_YOU_MEAN = re.compile(r"[Dd]id you mean:?\s*['\"`]?(?P<value>[^'\"`?\s]+)['\"`]?\s*\?")
_ARGUMENT_WORDS = (
    "invalid",
    "argument",
    "field",
    "required",
    "missing",
    "expected",
    "should be",
    "unexpected",
    "validation",
)


def fix(intended: ToolCall, call: ToolCall, text: str, specs: dict[str, ToolSpec]) -> ToolCall | str | None:
    """A corrected call, a reason to give up, or None when the text says nothing actionable."""
    advertised = list(specs)
    if match := _NOT_AVAILABLE.search(text):
        return _rename(call, _closest(match["name"], advertised), specs, text)
    if match := _NOT_FOUND.search(text):
        names = [n.strip().removesuffix("...") for n in match["available"].split(",")]
        names = [n for n in names if n and n != call.name]
        best = match["suggestion"] or _closest(match["name"], names)
        return _rename(call, best, specs, text)
    args = call.arguments if isinstance(call.arguments, dict) else {}
    if match := _DID_YOU_MEAN.search(text):
        key = _named_value(args, text) or _closest_key(args, match["value"])
        if key is not None and args[key] != match["value"]:
            return ToolCall(call.name, {**args, key: match["value"]})
    spec = specs.get(call.name)
    fields = [k for k in {*slips.schema_properties(spec), *args} if _mentions(text, k)]
    if fields and any(word in text.lower() for word in _ARGUMENT_WORDS):
        fitted = slips.fit_arguments(args, spec, fields)
        if fitted != args:
            return ToolCall(call.name, fitted)
    key = _named_value(args, text)
    if key is not None:
        meant = intended.arguments.get(key) if isinstance(intended.arguments, dict) else None
        if meant is not None and meant != args[key]:
            return ToolCall(call.name, {**args, key: meant})
    if (offered := _offered_instead(args, text)) is not None:
        return ToolCall(call.name, offered)
    if key is not None:
        return text  # it asked for what it meant, and that does not exist: route around
    return None


def _rename(call: ToolCall, name: str | None, specs: dict[str, ToolSpec], text: str) -> ToolCall | str:
    if not name or name == call.name:
        return text
    args = call.arguments if isinstance(call.arguments, dict) else {}
    return ToolCall(name, slips.fit_arguments(args, specs.get(name)))


def _closest(name: str, names: Sequence[str]) -> str | None:
    best = difflib.get_close_matches(name, names, n=1, cutoff=0.0)
    return best[0] if best else None


def _closest_key(args: dict[str, Any], value: str) -> str | None:
    keys = [k for k, v in args.items() if isinstance(v, str)]
    if not keys:
        return None
    return max(keys, key=lambda k: difflib.SequenceMatcher(None, args[k], value).ratio())


def _named_value(args: dict[str, Any], text: str) -> str | None:
    """The argument whose (string) value the error text quotes back."""
    for key, value in args.items():
        if isinstance(value, str) and len(value) >= 3 and value in text:
            return key
    return None


def _offered_instead(args: dict[str, Any], text: str) -> dict[str, Any] | None:
    """The arguments with a sent value swapped for the closest one the text lists instead.

    ``no such file; files: src/main.rs, README.md`` offers names without saying which: the
    model takes the listed one closest to what it sent, if any is close at all.
    """
    sent = {k: v for k, v in args.items() if isinstance(v, str) and len(v) >= 2}
    offered = [t for t in dict.fromkeys([*PATH_TOKEN.findall(text), *quoted(text)]) if t not in sent.values()]
    best: tuple[float, str, str] | None = None
    for key, value in sent.items():
        for token in offered:
            ratio = difflib.SequenceMatcher(None, value, token).ratio()
            if ratio >= _CLOSE_ENOUGH and (best is None or ratio > best[0]):
                best = (ratio, key, token)
    return None if best is None else {**args, best[1]: best[2]}


def _mentions(text: str, word: str) -> bool:
    return re.search(rf"(?<![\w/.-]){re.escape(word)}(?![\w/-])", text) is not None
