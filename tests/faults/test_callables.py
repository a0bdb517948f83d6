"""``inject`` on a plain function: the same signature, the original untouched, each fault acted out."""

from __future__ import annotations

import asyncio
import inspect

import pytest

from loopnb import FakeClock, ToolError, faults, inject


def read_file(path: str, encoding: str = "utf-8") -> str:
    """Read a file."""
    return f"contents of {path}"


async def fetch(url: str) -> str:
    return f"page {url}"


def test_the_wrapper_keeps_the_signature_name_and_docstring() -> None:
    wrapped = inject(read_file, {"read_file": faults.error("disk busy")})
    assert inspect.signature(wrapped) == inspect.signature(read_file)
    assert wrapped.__name__ == "read_file" and wrapped.__doc__ == "Read a file."
    assert wrapped is not read_file


def test_the_original_is_untouched() -> None:
    before = dict(vars(read_file))
    wrapped = inject(read_file, {"read_file": faults.error("disk busy")})
    with pytest.raises(ToolError):
        wrapped("a")
    assert read_file("a") == "contents of a" and dict(vars(read_file)) == before


def test_error_raises_a_tool_error_with_the_text_then_the_real_call_runs() -> None:
    wrapped = inject(read_file, {"read_file": faults.error("disk busy").first(1)})
    with pytest.raises(ToolError, match=r"^disk busy$"):
        wrapped("a")
    assert wrapped("a") == "contents of a"
    assert [(i.tool, i.label) for i in wrapped.injections] == [("read_file", 'error("disk busy").first(1)')]


def test_one_fault_for_a_function_needs_no_name() -> None:
    wrapped = inject(read_file, faults.wrong("nothing here"))
    assert wrapped("a") == "nothing here"


def test_crash_raises_the_exception() -> None:
    wrapped = inject(read_file, "crash(ValueError('bad input'))")
    with pytest.raises(ValueError, match="bad input"):
        wrapped("a")


def test_wrong_and_empty_return_a_value_with_no_error() -> None:
    assert inject(read_file, faults.wrong({"n": 1}))("a") == {"n": 1}
    assert inject(read_file, faults.empty())("a") == ""


def test_slow_and_hang_wait_on_the_clock_given() -> None:
    clock = FakeClock()
    slow = inject(read_file, faults.slow(2.5), clock=clock)
    assert slow("a") == "contents of a" and clock.monotonic() == 2.5
    hung = inject(read_file, faults.hang(30), clock=clock)
    with pytest.raises(TimeoutError, match="no answer after 30s"):
        hung("a")
    assert clock.monotonic() == 32.5


def test_when_matches_positional_and_named_arguments() -> None:
    wrapped = inject(read_file, faults.error("no").when(path="secret"))
    assert wrapped("public") == "contents of public"
    with pytest.raises(ToolError):
        wrapped("secret")
    with pytest.raises(ToolError):
        wrapped(path="secret", encoding="latin-1")


def test_an_async_function_stays_async() -> None:
    clock = FakeClock()
    wrapped = inject(fetch, {"fetch": faults.slow(1).first(1)}, clock=clock)
    assert inspect.iscoroutinefunction(wrapped)
    assert inspect.signature(wrapped) == inspect.signature(fetch)
    assert asyncio.run(wrapped("x")) == "page x" and clock.monotonic() == 1.0
    assert asyncio.run(wrapped("y")) == "page y" and clock.monotonic() == 1.0
    failing = inject(fetch, faults.error("offline"))
    with pytest.raises(ToolError, match="offline"):
        asyncio.run(failing("x"))


def test_a_key_naming_no_tool_lists_the_tools_with_did_you_mean() -> None:
    with pytest.raises(ValueError) as caught:
        inject(read_file, {"read_fil": faults.error()})
    assert str(caught.value) == (
        "inject: a function has no tool named 'read_fil'; its tools are read_file; did you mean 'read_file'?"
    )


def test_a_models_fault_does_not_apply_to_a_function() -> None:
    with pytest.raises(
        ValueError, match=r"inject: unavailable\(\) does not apply to a function \(unavailable"
    ):
        inject(read_file, faults.unavailable())


def test_a_target_of_no_known_kind_is_refused() -> None:
    with pytest.raises(TypeError, match="inject: cannot inject faults into int; it takes"):
        inject(3, {})
