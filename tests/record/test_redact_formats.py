"""The default redactor against real key formats, JSON at every depth, and every way to disk.

Every key below is made up (FAKE, 0123...): the shapes are real, the values are not.
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopnb import CancelToken, Engine, FakeClock, ScriptedModel, Skip, ToolCall, ToolError, load, tool
from loopnb.record import DEFAULT_REDACTOR, Recorder, RecordingError, RecordingWarning
from loopnb.record._lines import redact_line
from loopnb.record._redact import DEFAULT_RULES, REDACTED

from .conftest import Run, reply, run_engine

FAKE = {
    "openai": "sk-" + "FAKE0fake1FAKE2fake3FAKE4fake5FAKE6fake7FAKE",
    "openai_project": "sk-proj-" + "FAKE_fake-FAKE0123456789abcdefFAKEfake",
    "anthropic": "sk-ant-api03-" + "FAKEfake" * 8 + "-AAAA",
    "github_classic": "ghp_" + "FAKE0123456789fake0123456789FAKE0123",
    "github_oauth": "gho_" + "FAKE0123456789fake0123456789FAKE0123",
    "github_fine_grained": "github_pat_11FAKE0FAKE_" + "f4ke" * 15,
    "aws_access_key_id": "AKIAFAKEFAKEFAKE1234",
    "aws_session_key_id": "ASIAFAKEFAKEFAKE1234",
    "slack_bot": "xoxb-123456789012-1234567890123-FAKEfakeFAKEfakeFAKEfake",
    "slack_user": "xoxp-123456789012-1234567890123-FAKEfakeFAKEfake",
    "slack_app": "xapp-1-A0FAKE0FAKE-1234567890123-f4kef4kef4ke",
    "google": "AIza" + "SyFAKE_fake-FAKE0123456789abcdefghi",
    "stripe_live": "sk_live_" + "FAKE0123456789fakeFAKE0123",
    "stripe_test": "sk_test_" + "FAKE0123456789fakeFAKE0123",
    "stripe_restricted": "rk_live_" + "FAKE0123456789fakeFAKE0123",
    "gitlab": "glpat-" + "FAKEfake0123456789ab",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJmYWtlIn0.ZmFrZXNpZ25hdHVyZQ",
}
"""Tokens recognised by their shape alone: each is replaced whole, wherever it is."""

ASSIGNED = "FAKEvalue0123"
"""A secret recognised by its name: the value of each assignment below."""

ASSIGNMENTS = [
    f"api_key={ASSIGNED}",
    f"OPENAI_API_KEY={ASSIGNED}",
    f"export ANTHROPIC_API_KEY='{ASSIGNED}'",
    f"AWS_SECRET_ACCESS_KEY={ASSIGNED}",
    f"SECRET_KEY={ASSIGNED}",
    f"private_key: {ASSIGNED}",
    f"client_secret={ASSIGNED}",
    f"token: {ASSIGNED}",
    f"https://api.test/v1?q=1&access_token={ASSIGNED}&page=2",
    f'{{"apiKey": "{ASSIGNED}"}}',
    f"{{'password': '{ASSIGNED}'}}",
    f'config = {{"secretKey" => "{ASSIGNED}"}}',
    f"x-api-key: {ASSIGNED}",
    f"Authorization: Bearer {ASSIGNED}",
    f'{{"Authorization": "Basic {ASSIGNED}"}}',
    f"postgres://app:{ASSIGNED}@db.test:5432/app",
]


def nested(text: str, depth: int) -> str:
    """``text`` as a JSON string ``depth`` times over: a tool result holding JSON holding JSON."""
    for _ in range(depth):
        text = json.dumps({"content": text})
    return text


@pytest.mark.parametrize("name", FAKE)
@pytest.mark.parametrize("depth", [0, 1, 2, 3])
def test_each_token_is_redacted_at_any_depth_of_json(name, depth):
    key = FAKE[name]
    for text in (key, f"the key is {key}.", f"keys:\n{key}\n", f"\t{key}", f"\x1b[32m{key}\x1b[0m"):
        line = nested(text, depth)
        out = DEFAULT_REDACTOR(line)
        assert key not in out and REDACTED in out, (name, line)
        if depth:
            assert json.loads(out)  # still JSON


@pytest.mark.parametrize("text", ASSIGNMENTS)
@pytest.mark.parametrize("depth", [0, 1, 2, 3])
def test_each_assignment_is_redacted_at_any_depth_of_json(text, depth):
    line = nested(text, depth)
    out = DEFAULT_REDACTOR(line)
    assert ASSIGNED not in out and REDACTED in out, line
    if depth:
        json.loads(out)


def test_a_private_key_body_is_redacted_and_its_markers_kept():
    body = "MIIEFAKEfakeFAKE0123456789+/=\nFAKEfakeFAKEfake0123456789"
    pem = f"-----BEGIN OPENSSH PRIVATE KEY-----\n{body}\n-----END OPENSSH PRIVATE KEY-----"
    for depth in (0, 1, 2):
        out = DEFAULT_REDACTOR(nested(pem, depth))
        assert "FAKEfake" not in out and "BEGIN OPENSSH PRIVATE KEY" in out and "-----END" in out


def test_a_non_ascii_password_in_json_is_redacted_whole():
    # json.dumps escapes it as \uXXXX: the escapes are part of the value, taken whole.
    line = nested(json.dumps({"password": "пароль-секрет"}), 1)
    out = DEFAULT_REDACTOR(line)
    assert json.loads(json.loads(out)["content"]) == {"password": REDACTED}


# -- what must stay as it is -------------------------------------------------------------------


JSON_VALUES = [
    '{"password": null, "api_key": null}',
    '{"token": 123456, "secret": true, "passwd": false}',
    '{"max_tokens": 1000, "input_tokens": 12, "output_tokens": 3}',
]


@pytest.mark.parametrize("line", JSON_VALUES)
def test_json_numbers_null_and_booleans_named_like_secrets_are_kept(line):
    """Replacing them would break the line (inside a string, they are only text: replaced)."""
    assert DEFAULT_REDACTOR(line) == line


KEPT = [
    # A secret's name at the end of a line: what follows is another line, not its value.
    json.dumps({"text": "Enter token:\nabc123"}),
    json.dumps({"text": "Password:\nHunter2"}),
    # Hashes, ids and paths.
    "commit 3f786850e387550fdab836ed7e6dc881de23001b",
    "id 123e4567-e89b-12d3-a456-426614174000",
    "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "/home/u/.cache/pip/wheels/3f/78/6850e387550fdab836ed7e6dc881de23001b/x.whl",
    "file src/mian.rs not found",
    # Ordinary words near the prefixes and names.
    "the task-runner and the desk-organizer-with-drawers are risk-free",
    "keyboard monkey: a hotkey=ctrl",
    "the bearer of bad news; a basic understanding of authorization",
    "skip_this_step and ask_live_questions then rk_test",
    "ghost_writer and github_pages",
    "AKIAFAKE is short, AIza too",
    "eyJust.a.word",
    "see https://docs.test/page and mail me@example.test",
    "ssh://git@git.test:org/repo.git",
    "token usage: 5",
]


@pytest.mark.parametrize("text", KEPT)
def test_ordinary_text_and_json_values_are_kept(text):
    assert DEFAULT_REDACTOR(text) == text
    line = json.dumps({"text": text})
    assert DEFAULT_REDACTOR(line) == line


@settings(max_examples=150, deadline=None)
@given(
    st.text(max_size=80),
    st.sampled_from([*FAKE.values(), *ASSIGNMENTS, *JSON_VALUES, *KEPT]),
    st.text(max_size=80),
)
def test_a_redacted_line_is_always_json(before, piece, after):
    """Whatever the text around a secret, the redacted line parses, and a secret standing alone
    is gone (glued to a word, "0sk-...", it is taken for part of the word: "task-...")."""
    line = json.dumps({"text": before + piece + after, "arguments": {"k": piece}}, ensure_ascii=False)
    out = json.loads(DEFAULT_REDACTOR(line))
    if piece in FAKE.values():
        assert out["arguments"]["k"] == REDACTED


# -- the screen never lets a secret through ----------------------------------------------------


def everything(text: str) -> str:
    """What the default redactor must return: every pattern in turn, no trigger consulted."""
    for pattern in DEFAULT_REDACTOR.patterns:
        text = pattern.sub(DEFAULT_REDACTOR._replace, text)
    return text


noise = st.lists(
    st.sampled_from(list("abcdefghiknoprstuxyzAEIJKSZ0123456789-_ :=@/\"'\\{}.\n\t"))
    | st.sampled_from(["\u017f", "\u212a", "\u0131", "\u0130", "\\n", '\\\\\\"', "\\u001b[0m"]),
    max_size=30,
).map("".join)
pieces = st.sampled_from(
    [*FAKE.values(), *ASSIGNMENTS, *JSON_VALUES, *KEPT, "Authorization: Basic ZmFrZTpmYWtl"]
)


@given(st.lists(st.tuples(noise, pieces), max_size=4), noise)
@settings(max_examples=300, deadline=None)
def test_the_screen_never_changes_the_result(parts, tail):
    text = "".join(a + b for a, b in parts) + tail
    assert DEFAULT_REDACTOR(text) == everything(text)
    for rule in DEFAULT_RULES:  # every match of a rule fires one of its own triggers
        if re.search(rule.pattern, text) is None:
            continue
        haystack = text.casefold() if rule.fold else text
        assert any(gate in haystack and re.search(regex, haystack) for gate, regex in rule.triggers), (
            rule.pattern,
            text,
        )


def test_authorization_spelt_with_a_dotted_or_dotless_i_is_screened():
    for spelling in ("Author\u0131zation", "AUTHOR\u0130ZATION", "authorization"):
        text = f"{spelling}: Basic ZmFrZTpmYWtl"
        assert DEFAULT_REDACTOR(text) == everything(text)


# -- every way to disk -------------------------------------------------------------------------


class _Leaky:
    """A recovery strategy whose repr (recorded in the run's settings) holds two secrets."""

    def decide(self, failure, attempt, max_attempts):
        return Skip()

    def __repr__(self) -> str:
        return f"Leaky(api_key={FAKE['stripe_live']!r}, nested={{'token': {FAKE['slack_bot']!r}}})"


def leaky_run() -> Run:
    """A run with a secret in each place an event holds text: task, system prompt, settings, tool
    arguments and results, replies, errors. Turn 1: http_get works (its result holds secrets).
    Turn 2: aws fails with a secret, and cancels the run. Turn 3 ends as cancelled, the reason
    holding a secret."""
    token = CancelToken()

    @tool
    def http_get(url: str, password: str | None, retries: int) -> str:
        """Answers with the environment."""
        return json.dumps({"env": {"GITHUB_TOKEN": FAKE["github_classic"]}, "jwt": FAKE["jwt"]})

    @tool
    def aws(id: str) -> str:
        """Denied; the user stops the run."""
        token.cancel(f"stopped while holding {FAKE['slack_app']}")
        raise ToolError(f"denied: {FAKE['gitlab']}")

    get = ToolCall(
        "http_get", {"url": f"https://x.test/?key={FAKE['google']}", "password": None, "retries": 3}
    )
    model = ScriptedModel(
        [
            reply(get, text=f"trying with\n{FAKE['github_fine_grained']}"),
            ToolCall("aws", {"id": FAKE["aws_access_key_id"]}),
            "never asked",
        ]
    )
    engine = Engine(
        model,
        [http_get, aws],
        system=f"you hold {FAKE['anthropic']}",
        recovery=_Leaky(),
        clock=FakeClock(),
    )
    return run_engine(engine, f"deploy with {FAKE['openai']}", run_id="leaky", cancel=token)


def assert_no_secret(data: str | bytes, where: str) -> None:
    text = data.decode() if isinstance(data, bytes) else data
    for name, key in FAKE.items():
        assert key not in text, (where, name)


def test_no_secret_survives_in_any_file_or_export(tmp_path):
    import pyarrow.parquet as pq

    from loopnb.cli._write import write_recordings
    from loopnb.notebook import report_html
    from loopnb.record._lines import dump_event

    events = leaky_run().events
    raw = "\n".join(dump_event(e) for e in events)
    planted = ("openai", "anthropic", "stripe_live", "slack_bot", "google", "github_classic", "jwt")
    planted += ("github_fine_grained", "aws_access_key_id", "gitlab", "slack_app")
    assert all(FAKE[name] in raw for name in planted)  # every secret is in the run, unredacted
    rec = Recorder(tmp_path / "stream.jsonl")
    for e in events:
        rec(e)
    rec.close()
    rec.save(tmp_path / "saved.jsonl")
    rec.save(tmp_path / "saved.parquet")
    written = write_recordings(rec, tmp_path / "each", suffix=".jsonl")
    written += write_recordings(rec, tmp_path / "each_pq", suffix=".parquet")
    for path in (tmp_path / "stream.jsonl", tmp_path / "saved.jsonl", *written[:1]):
        assert_no_secret(path.read_bytes(), path.name)
        assert len(load(path).event_objects) == len(events)  # redacted, and whole
    # Parquet: every column of every row, and the file's metadata.
    for path in (tmp_path / "saved.parquet", written[1]):
        table = pq.read_table(path)
        assert_no_secret(json.dumps(table.to_pylist(), default=str), path.name)
        assert_no_secret(str(table.schema.metadata), path.name)
        assert len(load(path).event_objects) == len(events)
    # Exports: the recorder's recording, and the HTML report of every kind of source.
    assert_no_secret(
        rec.recording().turns.to_json(date_format="iso") + rec.recording().events.to_json(date_format="iso"),
        "recording()",
    )
    for source in (rec, load(tmp_path / "saved.jsonl"), str(tmp_path / "saved.parquet"), list(events)):
        assert_no_secret(report_html(source), f"report of {type(source).__name__}")
    # In memory, the model's text is kept as it was.
    assert FAKE["openai"] in rec.events["text"].iloc[0]


def test_the_report_of_an_unredacted_recording_is_redacted(tmp_path):
    from loopnb.notebook import report_html
    from loopnb.record import Recording

    events = leaky_run().events
    raw = Recorder(tmp_path / "raw.jsonl", redact=None)
    for e in events:
        raw(e)
    raw.close()
    assert FAKE["openai"].encode() in (tmp_path / "raw.jsonl").read_bytes()  # the user opted out
    for source in (load(tmp_path / "raw.jsonl"), Recording.from_events(events, meta={"redacted": False})):
        html = report_html(source)
        assert_no_secret(html, repr(source))
        assert "http_get" in html
    path = load(tmp_path / "raw.jsonl").to_html(tmp_path / "raw.html")
    assert_no_secret(path.read_text(encoding="utf-8"), "to_html")


def test_a_run_with_null_passwords_and_secret_names_at_line_ends_streams_whole(tmp_path):
    """These once made the default redactor write invalid JSON: the recorder refused the turn."""

    @tool
    def login(user: str, password: str | None, otp_token: int) -> str:
        """Logs in."""
        return "ok"

    call = ToolCall("login", {"user": "bob", "password": None, "otp_token": 123456})
    model = ScriptedModel([reply(call, text="Enter token:\nabc123\nPassword:\nHunter2"), "done"])
    events = run_engine(Engine(model, [login], clock=FakeClock()), run_id="r").events
    path = tmp_path / "r.jsonl"
    with Recorder(path) as rec:
        for e in events:
            rec(e)
    loaded = load(path)
    assert len(loaded.event_objects) == len(events)
    assert loaded.event_objects[2].reply.tool_calls[0].arguments == {
        "user": "bob",
        "password": None,
        "otp_token": 123456,
    }


# -- a redaction hook that misbehaves ----------------------------------------------------------


def _fails(text):
    raise KeyError("boom")


@pytest.mark.parametrize(
    ("hook", "message"),
    [
        (_fails, "raised KeyError: 'boom'"),
        (lambda text: None, "returned NoneType, not str"),
        (lambda text: text.encode(), "returned bytes, not str"),
        (lambda text: text.replace('"seq"', '"seq"\n'), "into"),
        (
            lambda text: text.split("\n")[0] if "turn_finished" in text else text,
            r"turned \d+ line\(s\) into 1",
        ),
        (lambda text: text.replace('"turn_finished"', '"[REDACTED]"'), r"event \d+ \(turn_finished\)"),
    ],
)
def test_a_bad_hook_is_a_clear_error_and_writes_nothing(tmp_path, hook, message):
    path = tmp_path / "h.jsonl"
    rec = Recorder(path, redact=hook)
    events = run_engine(Engine(ScriptedModel(["done"]), clock=FakeClock()), run_id="r").events
    with pytest.warns(RecordingWarning, match=message):  # the stream stops; memory keeps it all
        for e in events:
            rec(e)
    assert len(rec.event_objects) == len(events)
    rec.close()
    assert path.read_text().count("\n") == 1  # the header only: the refused turn is not there
    load(path)  # and the file still loads
    with pytest.raises(RecordingError, match=message):
        rec.save(tmp_path / "saved.jsonl")
    assert not (tmp_path / "saved.jsonl").exists()


def test_redact_line_checks_only_what_the_hook_changed():
    good = json.dumps({"seq": 0})  # not an event, but left alone: not checked
    assert redact_line(good, lambda t: t) == good
    with pytest.raises(RecordingError, match="invalid JSON or an invalid event"):
        redact_line(good, lambda t: t.replace("0", "[X]"))
