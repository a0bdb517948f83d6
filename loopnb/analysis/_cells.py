"""How one value of an analysis frame reads as text, in the terminal and in the HTML report alike."""

from __future__ import annotations


def cell_text(column: str, value: object) -> str:
    """One value as the terminal shows it: fractions as percentages, other floats to two places
    (whole ones without), missing values as ``-``."""
    import pandas as pd

    # None, NaN, NaT, pd.NA; a list gives an array, never True (pandas-stubs: isna takes any object)
    if pd.isna(value) is True:  # type: ignore[call-overload]
        return "-"
    if isinstance(value, float):
        if column in ("share", "rate"):
            return f"{value:.0%}" if value == 0 or value >= 0.01 else "<1%"
        return f"{value:.0f}" if value.is_integer() else f"{value:,.2f}"
    return str(value)


def duration(ms: object) -> str:
    """A time in milliseconds, with its unit: ``0.08 ms``, ``120 ms``, ``4.29 s``; ``-`` when missing."""
    import pandas as pd

    if pd.isna(ms) is True:  # type: ignore[call-overload]
        return "-"
    value = float(ms)  # type: ignore[arg-type]
    if value >= 1000:
        return f"{value / 1000:,.2f} s"
    if value >= 100:
        return f"{value:.0f} ms"
    if value == 0:
        return "0 ms"
    return f"{value:.2f} ms" if value < 10 else f"{value:.1f} ms"
