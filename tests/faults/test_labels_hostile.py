"""A fault label read back: every label that is no fault is a ``FaultSyntaxError`` saying what was
expected and where (the column), whatever the text; and a label reads back as the same fault."""

from __future__ import annotations

import pytest

from loopnb import faults
from loopnb.faults import FaultSyntaxError, parse


@pytest.mark.parametrize(
    "fault",
    [
        faults.crash(ValueError("bad input")),
        faults.crash(TimeoutError("slow disk")).first(2),
        faults.error("disk busy").first(2),
        faults.wrong({"rows": [1, 2]}).when(path="a.csv"),
    ],
    ids=lambda f: f.label,
)
def test_a_label_reads_back_as_the_same_fault(fault) -> None:
    again = parse(fault.label)
    assert again == fault and again.label == fault.label


def test_a_crash_is_hashed_by_what_it_raises() -> None:
    assert hash(parse('crash(ValueError("x"))')) == hash(faults.crash(ValueError("x")))
    assert faults.crash(ValueError("x")) != faults.crash(ValueError("y"))
    assert faults.crash(ValueError("x")) != faults.crash(TypeError("x"))


@pytest.mark.parametrize(
    ("label", "column", "words"),
    [
        ("erorr(1)", 1, "no fault is called 'erorr'"),
        ("error.frist(2)", 7, "'frist' is no schedule"),
        ("error(x)", 7, "'x' is not a literal"),
        ('error("é").frist(2)', 12, "'frist' is no schedule"),
        ('error("a").when(1)', 17, "when() takes arguments by name"),
        ('error("a").first("two")', 12, "a whole number >= 1"),
        ("error(**{'text': 'x'})", 7, "'**' is not a fault argument"),
    ],
)
def test_what_is_wrong_is_named_with_its_column(label: str, column: int, words: str) -> None:
    with pytest.raises(FaultSyntaxError) as caught:
        parse(label)
    assert words in str(caught.value)
    assert str(caught.value).endswith(f"(at column {column})")


@pytest.mark.parametrize(
    ("label", "words"),
    [
        ('error("a\x00")', "no fault"),
        ("wrong(" + "-" * 9_000 + "1)", "no fault"),
        ("wrong(" + "[" * 4_000 + "]" * 4_000 + ")", "no fault"),
        ('error("' + "x" * 20_000 + '")', "a label of 20009 characters; at most 10000 are read"),
    ],
    ids=["a NUL", "deep unary", "deep lists", "too long"],
)
def test_no_text_makes_parse_raise_anything_but_a_fault_syntax_error(label: str, words: str) -> None:
    with pytest.raises(FaultSyntaxError) as caught:
        parse(label)
    assert words in str(caught.value)
    assert "column None" not in str(caught.value)
    assert len(str(caught.value)) < 600  # the label is quoted cut short, not whole
