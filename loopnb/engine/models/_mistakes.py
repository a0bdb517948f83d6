"""The slips a guessing model makes on a first try, and the schema knowledge it uses to fix them.

Three kinds, each a pure function of the intended call and a seeded ``random.Random``:

- ``typo``: swap two adjacent letters of a string argument (``src/main.rs`` -> ``src/mian.rs``);
- ``shape``: a wrong key (``file`` for ``path``), a list where a string is expected, a number
  written as a string (``"three"`` for ``3``);
- ``hallucinate``: call a plausible tool that does not exist (``open_file`` for ``read_file``).

A kind that does not apply to a call (no string argument to misspell, no argument to misshape)
returns ``None`` and the model tries the next kind.
"""

from __future__ import annotations

import difflib
import random
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

from loopnb.engine._messages import ToolCall, ToolSpec

Mistake = Literal["typo", "shape", "hallucinate"]
MISTAKES: tuple[Mistake, ...] = ("typo", "shape", "hallucinate")

# Plausible names a model reaches for instead of the real one (verb or whole-name synonyms).
_VERB_SYNONYMS = {
    "read": ("open", "load", "get", "cat"),
    "get": ("fetch", "read", "lookup"),
    "fetch": ("get", "download", "load"),
    "list": ("ls", "show", "get"),
    "search": ("find", "lookup", "query"),
    "find": ("search", "locate"),
    "write": ("save", "put", "store"),
    "run": ("exec", "execute", "call"),
    "query": ("search", "ask", "run"),
    "lookup": ("find", "get", "search"),
}
_KEY_SYNONYMS = {
    "path": ("file", "filename", "filepath"),
    "file": ("path", "filename"),
    "query": ("q", "search", "text"),
    "url": ("link", "uri"),
    "name": ("id", "title"),
    "text": ("content", "body"),
    "city": ("location", "place"),
    "pattern": ("regex", "query"),
}
_Args = dict[str, Any]
_MAX_REF_DEPTH = 8
_ENUM_TYPES = {str: "string", bool: "boolean", int: "integer", float: "number"}
_NUMBER_WORDS = (
    *("zero", "one", "two", "three", "four", "five", "six"),
    *("seven", "eight", "nine", "ten", "eleven", "twelve"),
)


def schema_properties(spec: ToolSpec | None) -> dict[str, dict[str, Any]]:
    """The ``properties`` of a tool's argument schema, local ``$ref``s followed (empty when unknown).

    Any schema a tool advertises is read without failing: a property that is not an object
    (``true``, a bare string) reads as ``{}``, "anything".
    """
    if spec is None:
        return {}
    props = spec.parameters.get("properties", {})
    if not isinstance(props, Mapping):
        return {}
    defs = spec.parameters.get("$defs", spec.parameters.get("definitions", {}))
    defs = defs if isinstance(defs, Mapping) else {}
    return {str(name): _resolve(prop, defs) for name, prop in props.items()}


def _resolve(prop: object, defs: Mapping[str, Any], depth: int = 0) -> dict[str, Any]:
    """A property's schema with a local ``$ref`` (also one inside ``anyOf``) replaced by its target."""
    if not isinstance(prop, Mapping):
        return {}
    resolved = dict(prop)
    ref = resolved.pop("$ref", None)
    if isinstance(ref, str) and depth < _MAX_REF_DEPTH:  # a self-referencing $defs ends here
        resolved = {**_resolve(defs.get(ref.rsplit("/", 1)[-1]), defs, depth + 1), **resolved}
    branches = resolved.get("anyOf")
    if isinstance(branches, list | tuple):
        resolved["anyOf"] = [_resolve(branch, defs, depth + 1) for branch in branches]
    return resolved


def required_fields(spec: ToolSpec | None) -> list[str]:
    """The required argument names of a tool, in schema order (those with a known schema)."""
    if spec is None:
        return []
    required = spec.parameters.get("required", ())
    if not isinstance(required, list | tuple):
        return []
    props = spec.parameters.get("properties", {})
    known = props if isinstance(props, Mapping) else {}
    return [name for name in required if isinstance(name, str) and name in known]


def json_type(prop: object) -> str | None:
    """The JSON type a schema property expects (``anyOf`` with null reads as the other branch)."""
    if not isinstance(prop, Mapping):
        return None
    kind = prop.get("type")
    if isinstance(kind, list | tuple):  # {"type": ["string", "null"]}
        kind = next((k for k in kind if isinstance(k, str) and k != "null"), None)
    if isinstance(kind, str):
        return kind
    branches = prop.get("anyOf", ())
    for branch in branches if isinstance(branches, list | tuple) else ():
        kind = json_type(branch)
        if kind not in (None, "null"):
            return kind
    values = prop.get("enum")
    if isinstance(values, list | tuple) and values:
        return _ENUM_TYPES.get(type(values[0]))
    return None


def _swap_letters(value: str, rng: random.Random) -> str | None:
    # Prefer the last path component: that is where people (and models) slip.
    start = max(value.rfind("/"), value.rfind("\\")) + 1
    for lo in (start, 0):
        spots = [
            i
            for i in range(lo, len(value) - 1)
            if value[i].isalpha() and value[i + 1].isalpha() and value[i] != value[i + 1]
        ]
        if spots:
            i = rng.choice(spots)
            return value[:i] + value[i + 1] + value[i] + value[i + 2 :]
    return None


def mistype(call: ToolCall, rng: random.Random) -> ToolCall | None:
    """Misspell one string argument by swapping two adjacent letters."""
    if not isinstance(call.arguments, dict):
        return None
    keys = [k for k, v in call.arguments.items() if isinstance(v, str) and len(v) >= 2]
    rng.shuffle(keys)
    for key in keys:
        slipped = _swap_letters(call.arguments[key], rng)
        if slipped is not None:
            return ToolCall(call.name, {**call.arguments, key: slipped})
    return None


def _wrong_key(args: dict[str, Any], spec: ToolSpec | None, rng: random.Random) -> _Args | None:
    props = schema_properties(spec)
    required = [k for k in required_fields(spec) if k in args]
    keys = required or list(args)
    if not keys:
        return None
    key = rng.choice(keys)
    options = [k for k in _KEY_SYNONYMS.get(key, ("input", "value")) if k not in props]
    if not options:
        return None
    wrong = rng.choice(options)
    return {(wrong if k == key else k): v for k, v in args.items()}


def _listed(args: dict[str, Any], spec: ToolSpec | None, rng: random.Random) -> _Args | None:
    keys = [k for k, v in args.items() if isinstance(v, str)]
    if not keys:
        return None
    key = rng.choice(keys)
    return {**args, key: [args[key]]}


def _spelled(args: dict[str, Any], spec: ToolSpec | None, rng: random.Random) -> _Args | None:
    keys = [k for k, v in args.items() if isinstance(v, int | float) and not isinstance(v, bool)]
    if not keys:
        return None
    key = rng.choice(keys)
    value = args[key]
    words = _NUMBER_WORDS[value] if isinstance(value, int) and 0 <= value < 13 else None
    return {**args, key: words or f"about {value}"}


_SHAPES: tuple[Callable[[_Args, ToolSpec | None, random.Random], _Args | None], ...] = (
    _wrong_key,
    _listed,
    _spelled,
)


def misshape(call: ToolCall, spec: ToolSpec | None, rng: random.Random) -> ToolCall | None:
    """Guess the argument shape wrong: a wrong key, a list for a string, a number in words."""
    if not isinstance(call.arguments, dict) or not call.arguments:
        return None
    shapes = list(_SHAPES)
    rng.shuffle(shapes)
    for shape in shapes:
        args = shape(dict(call.arguments), spec, rng)
        if args is not None:
            return ToolCall(call.name, args)
    return None


def hallucinate(call: ToolCall, advertised: Iterable[str], rng: random.Random) -> ToolCall | None:
    """Call a plausible synonym of the intended tool that is not among the advertised names.

    The synonym keeps the rest of the name (``open_file`` for ``read_file``, ``search_tool`` for
    ``search``): the kind of near miss a model makes when it half-remembers an interface.
    """
    taken = set(advertised) | {call.name}
    verb, sep, rest = call.name.partition("_")
    if sep:
        candidates = [f"{alt}_{rest}" for alt in _VERB_SYNONYMS.get(verb.lower(), ())]
        candidates += [f"{call.name}s", f"get_{call.name}"]
    else:
        candidates = [f"{call.name}_tool", f"{call.name}s", f"run_{call.name}", f"do_{call.name}"]
    options = [name for name in candidates if name not in taken]
    if not options:
        return None
    return ToolCall(rng.choice(options[:4]), call.arguments)


def _words_to_number(text: str) -> int | None:
    word = text.strip().lower().removeprefix("about ").strip()
    if word in _NUMBER_WORDS:
        return _NUMBER_WORDS.index(word)
    try:
        return int(float(word))
    except ValueError:
        return None


def coerce(value: Any, prop: Mapping[str, Any]) -> Any:
    """Bend a value towards the type a schema property expects (what a model does on a re-read)."""
    kind = json_type(prop)
    if isinstance(value, list | tuple) and kind not in ("array", None):
        value = value[0] if value else ""
    if kind == "string" and not isinstance(value, str):
        return str(value)
    if kind in ("integer", "number") and isinstance(value, str):
        number = _words_to_number(value)
        return value if number is None else number
    if kind == "boolean" and isinstance(value, str):
        return value.strip().lower() in ("true", "yes", "1")
    if kind == "array" and not isinstance(value, list | tuple):
        return [value]
    return _closest_choice(value, prop.get("enum"))


def _closest_choice(value: Any, choices: object) -> Any:
    """A string outside a schema's ``enum`` becomes the closest string choice it offers."""
    if not isinstance(value, str) or not isinstance(choices, list | tuple) or value in choices:
        return value
    best = difflib.get_close_matches(value, [c for c in choices if isinstance(c, str)], n=1, cutoff=0.0)
    return best[0] if best else value


def fit_arguments(
    args: Mapping[str, Any], spec: ToolSpec | None, fields: Iterable[str] | None = None
) -> dict[str, Any]:
    """Rebuild arguments to fit a tool's schema.

    Keys the schema does not know move onto required fields that are missing; values are coerced
    to the schema's types. With ``fields``, only those fields (names from an error text) are fixed.
    """
    props = schema_properties(spec)
    if not props:
        return dict(args)
    named = set(props) if fields is None else set(fields)
    fixed = {k: v for k, v in args.items() if k in props}
    strays = [k for k in args if k not in props]
    for name in required_fields(spec):
        if name in fixed or not strays:
            continue
        if fields is not None and name not in named and not named & set(strays):
            continue
        fixed[name] = args[strays.pop(0)]
        named.add(name)
    for name in list(fixed):
        if name in named:
            fixed[name] = coerce(fixed[name], props[name])
    return {name: fixed[name] for name in props if name in fixed}  # in the schema's order
