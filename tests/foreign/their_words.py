"""A run a framework makes now, read by loopnb, against its committed golden: apart from the
framework's own words.

A golden keeps the words its framework (and pydantic, jsonschema, langchain-core) used the day it
was made; a run made now carries today's, which are theirs to change in any release. The rows must
agree on everything loopnb decides (channel, producer, tools, status, ...); where the golden's text
is the framework's, the row made now must hold a text there too, whatever its words.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

THEIR_WORDS = "<the framework's own words>"


def their_words_set_aside(
    fresh: Sequence[Sequence[Any]],
    golden: Sequence[Sequence[Any]],
    *,
    text: int,
    theirs: Callable[[Sequence[Any]], bool],
) -> tuple[list[list[Any]], list[list[Any]]]:
    """``fresh`` and ``golden`` rows as lists, with the text at index ``text`` put as
    ``THEIR_WORDS`` in each row where ``theirs(golden_row)``: there the fresh row must hold a text
    (any words), and every other cell is still compared."""
    assert len(fresh) == len(golden), f"{len(fresh)} rows made now, {len(golden)} in the golden"
    fresh_out, golden_out = [], []
    for made, kept in zip(fresh, golden, strict=True):
        made, kept = list(made), list(kept)
        if theirs(kept):
            assert isinstance(made[text], str) and made[text], f"no text where the golden has one: {made}"
            made[text] = kept[text] = THEIR_WORDS
        fresh_out.append(made)
        golden_out.append(kept)
    return fresh_out, golden_out
