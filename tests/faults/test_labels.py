"""Fault labels: each fault's text, read back by ``parse`` without evaluating anything."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loopnb import faults
from loopnb.faults import Fault, FaultSyntaxError, parse

MADE = [
    (faults.error("disk busy").first(2), 'error("disk busy").first(2)'),
    (faults.error(), "error()"),
    (faults.crash(ValueError("bad input")), 'crash(ValueError("bad input"))'),
    (faults.crash(), "crash()"),
    (faults.hang(30), "hang(30)"),
    (faults.hang(0.25), "hang(0.25)"),
    (faults.wrong({"rows": []}).when(path="a.csv"), 'wrong({"rows": []}).when(path="a.csv")'),
    (faults.wrong(42), "wrong(42)"),
    (faults.empty().sometimes(0.3), "empty().sometimes(0.3)"),
    (faults.slow(0.5).always(), "slow(0.5)"),
    (faults.unavailable(), "unavailable()"),
    (faults.unavailable(429, retry_after=2), "unavailable(429, retry_after=2)"),
    (faults.unavailable(retry_after=1.5), "unavailable(retry_after=1.5)"),
    (faults.error("x").when(b=1, a='é\n"q"'), 'error("x").when(a="é\\n\\"q\\"", b=1)'),
]


@pytest.mark.parametrize(("fault", "label"), MADE, ids=[label for _, label in MADE])
def test_a_label_is_the_faults_text_and_parses_back(fault: Fault, label: str) -> None:
    assert fault.label == label
    assert str(fault) == label
    assert parse(label) == fault
    assert parse(label).label == label


@pytest.mark.parametrize(
    ("written", "label"),
    [
        ("error.first(2)", "error().first(2)"),
        ("crash", "crash()"),
        ("crash(ValueError)", "crash(ValueError())"),
        ("  hang(30)  ", "hang(30)"),
        ("error('single quotes')", 'error("single quotes")'),
        ("error(text='named')", 'error("named")'),
        ("error('x').first(3).always()", 'error("x")'),
        ("error('x').when(path='a').first(1)", 'error("x").when(path="a").first(1)'),
        ("error('x').first(1).when(path='a')", 'error("x").when(path="a").first(1)'),
        ("unavailable(status=503)", "unavailable()"),
    ],
)
def test_other_spellings_read_as_the_canonical_label(written: str, label: str) -> None:
    assert parse(written).label == label


def test_a_fault_is_immutable_and_schedules_return_new_ones() -> None:
    base = faults.error("x")
    transient = base.first(2)
    assert base.every == "always" and transient.every == "first" and transient.times == 2
    with pytest.raises(AttributeError):
        base.kind = "crash"  # type: ignore[misc]
    assert base != transient and hash(base) != hash(transient)


def test_what_each_fault_holds() -> None:
    assert faults.error().text == "injected error"
    assert faults.hang(30).seconds == 30.0 and faults.hang(2).text == "no answer after 2s"
    assert faults.slow(0.5).seconds == 0.5 and faults.error().seconds == 0.0
    assert faults.empty().value == "" and faults.wrong([1]).value == [1]
    assert faults.unavailable(429, retry_after=2).status == 429
    assert faults.unavailable(429, retry_after=2).retry_after == 2.0
    assert faults.unavailable().text == "HTTP 503 Service Unavailable"
    assert faults.wrong(1).implicit and faults.empty().implicit and not faults.error().implicit


def test_a_crash_raises_a_fresh_copy_each_time() -> None:
    original = ValueError("bad input")
    fault = faults.crash(original)
    first, second = fault.exception(), fault.exception()
    assert first is not original and first is not second
    assert type(first) is ValueError and first.args == ("bad input",)
    assert str(faults.crash().exception()) == "injected crash"


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda: faults.error(1), "faults.error: text must be a str"),
        (lambda: faults.hang(-1), "faults.hang: seconds must be a finite number >= 0, got -1"),
        (lambda: faults.slow(float("inf")), "faults.slow: seconds must be a finite number >= 0"),
        (lambda: faults.crash(KeyboardInterrupt()), "faults.crash: exc must be an exception"),
        (lambda: faults.crash(faults.FaultSyntaxError), "cannot be made without arguments"),
        (lambda: faults.unavailable(200.5), "faults.unavailable: status must be an HTTP status"),
        (lambda: faults.unavailable(retry_after=-2), "retry_after must be None or seconds >= 0"),
        (lambda: faults.error().first(-1), "first(k) takes a whole number of calls >= 0, got -1"),
        (lambda: faults.error().first(True), "first(k) takes a whole number of calls >= 0, got True"),
        (lambda: faults.error().sometimes(1.5), "sometimes(p) takes a chance from 0 to 1, got 1.5"),
        (lambda: faults.error().when(), "when() needs at least one argument"),
    ],
)
def test_a_bad_fault_is_refused_saying_what_it_takes(make, words: str) -> None:
    with pytest.raises((TypeError, ValueError)) as caught:
        make()
    assert words in str(caught.value)


def test_a_tool_error_is_not_a_crash() -> None:
    from loopnb import ToolError

    with pytest.raises(
        TypeError, match=r"a ToolError is a soft error, not a crash; use faults.error\(text\)"
    ):
        faults.crash(ToolError("x"))


BAD = [
    ("", None, "the label is empty; expected a fault such as"),
    (
        "erorr(1)",
        1,
        "unknown fault 'erorr'; expected one of error, crash, hang, wrong, empty, slow, "
        "unavailable; did you mean 'error'?",
    ),
    (
        "error.frist(2)",
        7,
        "unknown schedule .frist(); expected a schedule: .first(k), .always(), "
        ".sometimes(p) or .when(name=value); did you mean 'first'?",
    ),
    ("error.first", 7, "the schedule .first needs its parentheses, e.g. .first(2)"),
    (
        "error(x)",
        7,
        "expected a literal: a string in quotes, a number, True, False, None, or a list or "
        "dict of them, found 'x'",
    ),
    ('error("é").first("a")', 12, "first(k) takes a whole number of calls >= 0, got 'a'"),
    ('error("a").when(1)', 17, 'when() takes arguments by name, e.g. .when(path="src/main.rs")'),
    ("hang", 1, "faults.hang() needs its seconds: e.g. hang(30)"),
    ("crash(Foo(1))", 7, "expected a built-in exception such as RuntimeError"),
    ('crash(os.system("rm"))', 7, "expected a literal"),
    ('__import__("os").system("rm")', 1, "unknown fault '__import__'"),
    ('error("x") + 1', 1, "expected a fault such as"),
    ("error(", 6, "not a fault label ("),
    ("(" * 300, None, "not a fault label ("),
    ('error("x"' + " " * 10_000 + ")", None, "at most 10000 are read"),
    ("error(**{'text': 'x'})", 9, "expected name=value"),
]


@pytest.mark.parametrize(("label", "column", "words"), BAD, ids=[b[0][:30] for b in BAD])
def test_a_label_that_cannot_be_read_says_what_was_expected_and_where(
    label: str, column: int | None, words: str
) -> None:
    with pytest.raises(FaultSyntaxError) as caught:
        parse(label)
    error = caught.value
    assert words in str(error)
    assert str(error).startswith("fault ")
    if column is not None:
        assert error.column == column
        assert str(error).endswith(f"(at column {column})")
    assert isinstance(error, ValueError)


def test_parse_evaluates_nothing(tmp_path, monkeypatch) -> None:
    called = []
    monkeypatch.setattr("builtins.print", lambda *a: called.append(a))
    for label in ['error(print("x"))', 'crash(print("x"))', "wrong([print(1)])", "error().when(a=print(1))"]:
        with pytest.raises(FaultSyntaxError):
            parse(label)
    assert called == []


def test_a_label_is_a_str() -> None:
    with pytest.raises(TypeError, match=r"faults\.parse: a label is a str, got int"):
        parse(3)  # type: ignore[arg-type]


def test_a_syntax_error_pickles_with_its_fields() -> None:
    with pytest.raises(FaultSyntaxError) as caught:
        parse("erorr()")
    again = pickle.loads(pickle.dumps(caught.value))
    assert (str(again), again.label, again.column) == (str(caught.value), "erorr()", 1)


literals = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@given(value=literals, text=st.text(), k=st.integers(0, 50), key=st.sampled_from(["path", "q", "n"]))
def test_any_literal_round_trips_through_its_label(value, text, k, key) -> None:
    for fault in (faults.wrong(value).when(**{key: value}).first(k), faults.error(text).sometimes(0.5)):
        assert parse(fault.label) == fault
