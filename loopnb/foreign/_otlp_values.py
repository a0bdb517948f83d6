"""OTLP's values, as every encoding of a span writes them: ids, ``AnyValue`` attributes, 64-bit
integers and times, status codes.

A value of the wrong shape raises ``Bad`` saying what was expected and what was found; the
span's decoder (``_otlp_spans``) adds where the span is, as a ``RecordingError``.
"""

from __future__ import annotations

import base64
import binascii
import re
from pathlib import Path
from typing import Any

from loopnb.record import RecordingError

STATUS_NAMES = ("UNSET", "OK", "ERROR")
"""OTel's status codes, by their number."""


def hex_id(value: Any, size: int, where: str, path: Path | None) -> tuple[str | None, str]:
    """A trace or span id as lowercase hex, and whether it was written as hex or base64."""
    if value is None or value == "":
        return None, ""
    if not isinstance(value, str):
        raise RecordingError(f"{where}: an id should be a string, found {value!r}", path=path)
    text = value[2:] if value.startswith("0x") else value
    if len(text) == 2 * size:
        try:
            int(text, 16)
            return text.lower(), "hex"
        except ValueError:
            pass
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != size:
        raise RecordingError(
            f"{where}: id {value!r} is neither {2 * size} hex digits nor the base64 of {size} bytes",
            path=path,
        )
    return raw.hex(), "base64"


class Bad(Exception):
    """A value that is not what the encoding says (the span's decoder adds where it is)."""


def describe(value: Any) -> str:
    """A value as an error message names it: its type, and the value when it is short."""
    text = repr(value)
    return type(value).__name__ + (f" {text}" if len(text) <= 40 else "")


def listed(value: Any, what: str) -> list[Any]:
    """``value``, a list (``None``: an empty one)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise Bad(f"{what} should be a list, found {describe(value)}")
    return value


def any_value(value: Any) -> Any:
    """An OTLP ``AnyValue`` (``{"stringValue": ...}``, ``{"intValue": "3"}``, ...) as Python."""
    if not isinstance(value, dict):
        return value
    for kind, raw in value.items():
        if kind in ("stringValue", "string_value", "doubleValue", "double_value", "boolValue", "bool_value"):
            return raw
        if kind in ("intValue", "int_value"):
            return integer(raw, f"an {kind}")
        if kind in ("arrayValue", "array_value", "kvlistValue", "kvlist_value"):
            if raw is not None and not isinstance(raw, dict):
                raise Bad(f"an {kind} should be an object with values, found {describe(raw)}")
            values = listed((raw or {}).get("values"), f"an {kind}'s values")
            return [any_value(v) for v in values] if kind.startswith("array") else attributes(values)
        if kind in ("bytesValue", "bytes_value"):
            return raw
    return None


def attributes(items: Any) -> dict[str, Any]:
    """OTLP's ``[{"key": ..., "value": AnyValue}, ...]`` as a dict (an error names its attribute)."""
    out: dict[str, Any] = {}
    for kv in listed(items, "attributes"):
        if type(kv) is not dict or "key" not in kv:
            continue
        key = kv["key"]
        if type(key) is not str:
            raise Bad(f"an attribute's key should be a string, found {describe(key)}")
        value = kv.get("value")
        text = value.get("stringValue") if type(value) is dict else None
        try:
            out[key] = text if text is not None else any_value(value)  # most values are strings
        except Bad as exc:
            raise Bad(f"attribute {key!r}: {exc}") from exc
    return out


_DECIMAL = re.compile(r"[+-]?[0-9]{1,20}")
_BITS = 2**63
"""OTLP's integers are 64 bits (signed, or unsigned for times)."""


def integer(raw: Any, what: str) -> int:
    """A 64-bit integer written as a JSON number or (protobuf JSON's way) as a decimal string.

    JSON's ``1e400`` reads as infinity and ``NaN`` as not a number: neither is a whole number,
    and neither may reach ``int()``, which raises for them."""
    if (isinstance(raw, float) and raw.is_integer()) or (
        isinstance(raw, str) and _DECIMAL.fullmatch(raw.strip())
    ):
        raw = int(raw)
    if type(raw) is int and -_BITS <= raw < 2 * _BITS:
        return raw
    raise Bad(f"{what} should be a whole number of 64 bits, found {describe(raw)}")


_LIMIT = _BITS / 1e9
"""Times are kept as nanoseconds in 64 bits: from 1677 to 2262."""


def epoch(seconds: float | None, what: str) -> float | None:
    """``seconds`` from 1970, checked to be a time nanoseconds in 64 bits can hold."""
    if seconds is not None and not -_LIMIT < seconds < _LIMIT:  # NaN is no time either
        raise Bad(f"{what} {seconds:.0f} s from 1970 is not a time between the years 1677 and 2262")
    return seconds


def nanos(value: Any, what: str = "a time") -> float | None:
    """A time in nanoseconds from 1970, as seconds (``None`` when unset: ``0`` or empty)."""
    if type(value) is int and 0 < value < _BITS:  # what nearly every span holds: checked at once
        return value / 1e9
    if value is None or value == "" or value == 0 or value == "0":
        return None
    return epoch(integer(value, f"{what} in nanoseconds") / 1e9, what)


def status_code(value: Any) -> str:
    """A status code, by number or name (``2``, ``"STATUS_CODE_ERROR"``), as its name."""
    if value is None:
        return "UNSET"
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(STATUS_NAMES):
        return STATUS_NAMES[value]
    name = value.removeprefix("STATUS_CODE_").upper() if isinstance(value, str) else None
    if name not in STATUS_NAMES:
        raise Bad(f"a status code should be UNSET, OK or ERROR (0, 1, 2), found {describe(value)}")
    return name


def text(value: Any, what: str) -> str | None:
    """``value``, a string (``None`` when empty or absent)."""
    if value is not None and not isinstance(value, str):
        raise Bad(f"{what} should be a string, found {describe(value)}")
    return value or None


def plain(value: Any) -> dict[str, Any]:
    """A copy of ``value`` when it is a dict, else an empty one."""
    return dict(value) if isinstance(value, dict) else {}
