"""Secrets never land in files; in-memory frames keep exactly what the model read."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopnb import Engine, FakeClock, ScriptedModel, ToolCall, ToolError, load, tool
from loopnb.engine import turns_of
from loopnb.record import DEFAULT_REDACTOR, Recorder, RecordingWarning, Redactor
from loopnb.record._redact import DEFAULT_RULES

from .conftest import Run, reply, run_engine

OPENAI = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 2
ANTHROPIC = "sk-ant-api03-" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt3" * 2
BEARER = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl"
AWS = "AKIAIOSFODNN7EXAMPLE"
GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2
SECRETS = (OPENAI, ANTHROPIC, BEARER, AWS, GITHUB, "hunter2hunter2", "s3cr3tvalue")


@tool
def http_get(url: str, headers: dict[str, str], api_key: str) -> str:
    """A request whose error names every secret it was given."""
    raise ToolError(f"401: key {ANTHROPIC} refused; env has AWS_ACCESS_KEY_ID={AWS}")


def leaky_run() -> Run:
    """Secrets in the task, a tool's arguments and error, the model's text and its answer."""
    call = ToolCall(
        "http_get",
        {"url": "https://x.test", "headers": {"Authorization": f"Bearer {BEARER}"}, "api_key": "s3cr3tvalue"},
    )
    text = f'config: {{"password": "hunter2hunter2"}} token {GITHUB}'
    model = ScriptedModel([reply(call, text=text), "done, api_key=s3cr3tvalue"])
    return run_engine(Engine(model, [http_get], clock=FakeClock()), f"use key {OPENAI} please", run_id="leak")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"key {OPENAI} here", "key [REDACTED] here"),
        (f"key {ANTHROPIC}", "key [REDACTED]"),
        (f"Authorization: Bearer {BEARER}", "Authorization: Bearer [REDACTED]"),
        ("api_key=abcd1234&x=1", "api_key=[REDACTED]&x=1"),
        ('{"api_key": "abcd1234", "n": 1}', '{"api_key": "[REDACTED]", "n": 1}'),
        ('{\\"api_key\\": \\"abcd1234\\"}', '{\\"api_key\\": \\"[REDACTED]\\"}'),
        ("OPENAI_API_KEY=sk-xyz", "OPENAI_API_KEY=[REDACTED]"),
        ('{"password": "hunter2"}', '{"password": "[REDACTED]"}'),
        ("passwd=hunter2 secret: abcdef", "passwd=[REDACTED] secret: [REDACTED]"),
        ('{"access_token":"abc.def"}', '{"access_token":"[REDACTED]"}'),
        (f"id {AWS}.", "id [REDACTED]."),
        (f"tok {GITHUB}", "tok [REDACTED]"),
        ('{"input_tokens":12,"output_tokens":3}', '{"input_tokens":12,"output_tokens":3}'),
        ("file src/mian.rs not found", "file src/mian.rs not found"),
    ],
)
def test_default_patterns(text, expected):
    assert DEFAULT_REDACTOR(text) == expected


def test_files_hold_no_secret_but_memory_keeps_what_the_model_read(tmp_path):
    rec = Recorder(tmp_path / "s.jsonl")
    for e in leaky_run().events:
        rec(e)
    rec.save(tmp_path / "s.parquet")
    rec.save(tmp_path / "saved.jsonl")
    for name in ("s.jsonl", "saved.jsonl", "s.parquet"):
        data = (tmp_path / name).read_bytes()
        for secret in SECRETS:
            assert secret.encode() not in data, (name, secret)
    assert ANTHROPIC in rec.turns["error_text"].iloc[0]
    assert OPENAI in rec.events["text"].iloc[0]
    for name in ("s.jsonl", "s.parquet"):
        loaded = load(tmp_path / name)
        assert "[REDACTED]" in loaded.turns["error_text"].iloc[0]
        assert ANTHROPIC not in loaded.turns["error_text"].iloc[0]
        call = turns_of(loaded.event_objects)[0].calls[0]
        assert call.arguments["api_key"] == "[REDACTED]"
        assert call.arguments["headers"]["Authorization"] == "Bearer [REDACTED]"
    exported = rec.recording()
    assert all(s not in json.dumps(exported.turns.astype(str).to_dict()) for s in SECRETS)


def test_custom_patterns_and_opting_out(tmp_path):
    events = run_engine(
        Engine(ScriptedModel(["the code is corp-0123456789abcdef"]), clock=FakeClock())
    ).events
    rec = Recorder(tmp_path / "c.jsonl", redact=Redactor().extend(r"corp-[0-9a-f]{16}"))
    for e in events:
        rec(e)
    assert b"corp-0123" not in (tmp_path / "c.jsonl").read_bytes()
    plain = Recorder(tmp_path / "p.jsonl", redact=None)
    for e in leaky_run().events:
        plain(e)
    assert OPENAI.encode() in (tmp_path / "p.jsonl").read_bytes()
    assert load(tmp_path / "p.jsonl").meta["redacted"] is False
    only_mine = Redactor([r"(?P<secret>mian)\.rs"], replacement="XXX")
    assert only_mine("src/mian.rs and " + OPENAI) == "src/XXX.rs and " + OPENAI


def test_a_hook_that_breaks_the_json_is_refused(tmp_path):
    rec = Recorder(tmp_path / "b.jsonl", redact=lambda text: text.replace("scripted", 'x"y'))
    with pytest.warns(RecordingWarning, match="invalid JSON"):
        for e in leaky_run().events:
            rec(e)


# -- the fast path: triggers skip a pattern only when it cannot match --------------------------


def everything(redactor: Redactor, text: str) -> str:
    """What ``redactor`` must return: every pattern run in turn, no trigger consulted."""
    for pattern in redactor.patterns:
        text = pattern.sub(redactor._replace, text)
    return text


PIECES = [
    OPENAI,
    ANTHROPIC,
    AWS,
    GITHUB,
    "ASIA" + "Q" * 16,
    "AIza" + "b" * 35,
    f"Bearer {BEARER}",
    f"bEaReR\t{BEARER}",
    "api_key=abcd1234",
    '"password": "hunter2"',
    '{\\"access_token\\":\\"abc.def\\"}',
    "X_SECRET : s3cr3t",
    "OPENAI_API_KEY='sk-xyz'",
    # Case variants the regex engine matches under (?i) but str.lower() does not map: the long s
    # and the Kelvin sign.
    "pa\u017f\u017fword=hunter2",
    "\u017fecret: abcdef",
    "api_\u212aey=abcdef",
    "to\u212aen=abcdef",
    # "key" and "token" share one scan (see DEFAULT_RULES): each word, cased and separated
    # every way, and the one glued to the other.
    "X_ACCESS_TOKEN=abcdef",
    '{"my_token":"abcdef"}',
    "ToKeN \t: 'abcdef'",
    "monkeytoken=abcdef",
    "tokenkey=abcdef",
    "API-KEY = abcdef",
    # Near misses that must stay as they are.
    '"input_tokens":12,"output_tokens":3',
    "sk-short",
    "AKIA" + "q" * 16,
    "keyboard monkey",
    "the bearer of bad news",
    "tokens=12",
    "toke n=abcdef",
    "kenken: abcdef",
]
noise = st.text(
    alphabet=st.sampled_from(list("abcdefghijklmnopqrstuvwxyzAKISZ0123456789-_ :=\"'\\{}[],.\n\t"))
    | st.sampled_from(["\u017f", "\u212a", "\u0131", "\u0130", "\u00df", "\u00e9"]),
    max_size=40,
)


@given(st.lists(st.tuples(noise, st.sampled_from(PIECES)), max_size=6), noise)
@settings(max_examples=400, deadline=None)
def test_triggers_never_let_a_secret_through(parts, tail):
    text = "".join(a + b for a, b in parts) + tail
    assert DEFAULT_REDACTOR(text) == everything(DEFAULT_REDACTOR, text)


@given(st.lists(st.tuples(noise, st.sampled_from(PIECES)), max_size=6), noise)
@settings(max_examples=400, deadline=None)
def test_every_match_of_a_rule_fires_one_of_its_triggers(parts, tail):
    import re

    text = "".join(a + b for a, b in parts) + tail
    for rule in DEFAULT_RULES:
        if re.search(rule.pattern, text) is None:
            continue
        haystack = text.casefold() if rule.fold else text
        fired = [
            regex
            for gate, regex in rule.triggers
            if gate in haystack and re.search(regex, haystack) is not None
        ]
        assert fired, (rule.pattern, text)


@pytest.mark.parametrize("piece", PIECES)
def test_each_piece_alone_and_in_a_json_line(piece):
    line = json.dumps({"seq": 1, "text": f"see {piece} here", "arguments": {"k": piece}})
    for text in (piece, f"x {piece} y", line):
        assert DEFAULT_REDACTOR(text) == everything(DEFAULT_REDACTOR, text)


def test_case_variants_the_old_lower_case_test_missed_are_redacted():
    assert DEFAULT_REDACTOR("pa\u017f\u017fword=hunter2") == "pa\u017f\u017fword=[REDACTED]"
    assert DEFAULT_REDACTOR("\u017fecret: abcdef") == "\u017fecret: [REDACTED]"


def test_a_default_pattern_with_other_flags_always_runs():
    import re

    loud = Redactor([re.compile(DEFAULT_REDACTOR.patterns[0].pattern, re.IGNORECASE)])
    assert loud("SK-" + "A" * 20) == "[REDACTED]"
    assert DEFAULT_REDACTOR("SK-" + "A" * 20) == "SK-" + "A" * 20


def test_a_replacement_that_looks_like_a_secret_is_seen_by_the_next_patterns():
    odd = Redactor(replacement="token=abcdef")
    text = f"Authorization: Bearer {BEARER}"  # folded for the bearer rule, then changed by it
    assert odd(text) == everything(odd, text)
