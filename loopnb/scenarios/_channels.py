"""Scenarios for the two channels: each soft row of the table, and the hard endings no turn saves."""

from __future__ import annotations

from typing import Any

from loopnb.engine import ContextBudget, HookContext, ToolCall, ToolError, ToolSpec, tool
from loopnb.engine.models import FallibleModel
from loopnb.scenarios._scenario import Build, Scenario
from loopnb.scenarios._workspace import FILES, make_list_dir, make_read_file

_MAIN = ToolCall("read_file", {"path": "src/main.rs"})


def _mistyped_path(b: Build) -> dict[str, Any]:
    model = FallibleModel(
        [_MAIN],
        answer="src/main.rs is `fn main() {}`: it prints nothing.",
        mistakes=("typo",),
        seed=b.seed,
    )
    return {"model": model, "tools": [make_read_file()]}


def _hallucinated_tool(b: Build) -> dict[str, Any]:
    plan = [ToolCall("read_file", {"path": "README.md"})]
    model = FallibleModel(plan, mistakes=("hallucinate",), seed=b.seed)
    return {"model": model, "tools": [make_read_file(), make_list_dir()]}


def _registry_miss(b: Build) -> dict[str, Any]:
    read_file = make_read_file()
    # The model was shown fetch_file, which has since been removed: a stale tool list.
    stale = ToolSpec(
        name="fetch_file",
        description="Fetch a file from the workspace.",
        parameters=read_file.spec.parameters,
    )
    model = FallibleModel([ToolCall("fetch_file", {"path": "notes.txt"})], mistakes=(), seed=b.seed)
    return {"model": model, "tools": [read_file, make_list_dir()], "advertise": [stale, "read_file"]}


def _invalid_arguments(b: Build) -> dict[str, Any]:
    @tool
    def head(path: str, lines: int) -> str:
        """The first lines of a workspace file."""
        if path not in FILES:
            raise ToolError(f"file {path} not found")
        return "\n".join(FILES[path].splitlines()[:lines])

    plan = [ToolCall("head", {"path": "server.log", "lines": 3})]
    model = FallibleModel(plan, mistakes=("shape",), seed=b.seed)
    return {"model": model, "tools": [head]}


def _panicking_tool(b: Build) -> dict[str, Any]:
    @tool
    def word_stats(path: str) -> str:
        """Words per line of a workspace file."""
        text = FILES.get(path, "")
        lines = [line for line in text.splitlines() if line.strip()]
        return f"{len(text.split()) / len(lines):.1f} words per line"  # empty file: divides by 0

    plan = [ToolCall("word_stats", {"path": "empty.txt"}), ToolCall("read_file", {"path": "notes.txt"})]
    model = FallibleModel(plan, mistakes=(), seed=b.seed)
    return {"model": model, "tools": [word_stats, make_read_file()]}


def _hanging_tool(b: Build) -> dict[str, Any]:
    import threading

    calls = {"n": 0}
    never = threading.Event()

    @tool
    def search_logs(query: str) -> str:
        """Search the server log (the index is cold on the first call)."""
        calls["n"] += 1
        if calls["n"] == 1:
            never.wait(2.0)  # hangs; the timeout middleware moves on without it
        hits = [line for line in FILES["server.log"].splitlines() if query in line]
        return "\n".join(hits) or f"no lines match {query!r}"

    plan = [ToolCall("search_logs", {"query": "ERROR"})]
    model = FallibleModel(plan, mistakes=(), seed=b.seed)
    return {"model": model, "tools": [search_logs], "timeout": 0.2}


def _hook_veto(b: Build) -> dict[str, Any]:
    @tool
    def fetch_url(url: str) -> str:
        """Fetch a web page."""
        return f"<html>{url}</html>"

    def allowlist(call: ToolCall, ctx: HookContext) -> str | None:
        url = call.arguments.get("url", "") if isinstance(call.arguments, dict) else ""
        if call.name == "fetch_url" and not str(url).startswith("https://docs.example.org/"):
            return "outbound requests are limited to https://docs.example.org/"
        return None

    plan = [
        ToolCall("fetch_url", {"url": "https://paste.example.com/raw/release"}),
        ToolCall("read_file", {"path": "notes.txt"}),
    ]
    model = FallibleModel(plan, mistakes=(), seed=b.seed)
    return {"model": model, "tools": [fetch_url, make_read_file()], "hooks": [allowlist]}


def _cancelled_run(b: Build) -> dict[str, Any]:
    @tool
    def drop_table(name: str) -> str:
        """Drop a database table."""
        return f"dropped {name}"  # never reached: the guard stops the run first

    def guard(call: ToolCall, ctx: HookContext) -> None:
        if call.name == "drop_table":
            ctx.cancel.cancel("the operator pressed stop: the agent reached for drop_table")

    plan = [ToolCall("read_file", {"path": "notes.txt"}), ToolCall("drop_table", {"name": "users"})]
    model = FallibleModel(plan, mistakes=(), seed=b.seed)
    return {"model": model, "tools": [make_read_file(), drop_table], "hooks": [guard]}


def _context_overflow(b: Build) -> dict[str, Any]:
    return {
        "model": FallibleModel(mistakes=(), seed=b.seed),
        "tools": [make_read_file()],
        "system": "You are a careful on-call engineer. Quote the log lines you rely on.",
        "context": ContextBudget(max_tokens=48),
    }


def _vague_error(b: Build) -> dict[str, Any]:
    @tool
    def restart(service: str) -> str:
        """Restart a service."""
        raise ToolError("failed")

    plan = [ToolCall("restart", {"service": "payments"}), ToolCall("read_file", {"path": "server.log"})]
    model = FallibleModel(plan, mistakes=(), seed=b.seed, answer=lambda out: f"Log read: {len(out)} file(s).")
    return {"model": model, "tools": [restart, make_read_file()]}


CHANNEL_SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        name="mistyped_path",
        title="A misspelt path, read and fixed (the spec's first example)",
        teaches="A tool error is soft: the model reads 'file src/mian.rs not found', says oops "
        "and asks for src/main.rs. The run succeeds and nobody is paged.",
        task="What does src/main.rs do?",
        ending="ok",
        soft=frozenset({"tool_error"}),
        builder=_mistyped_path,
        seed=7,
    ),
    Scenario(
        name="hallucinated_tool",
        title="A tool that does not exist, pre-answered",
        teaches="A name never advertised is answered 'tool 'x' is not available' without "
        "dispatching anything; the model picks the real tool next turn.",
        task="Summarise README.md.",
        ending="ok",
        soft=frozenset({"not_advertised"}),
        builder=_hallucinated_tool,
        seed=1,
    ),
    Scenario(
        name="registry_miss",
        title="A stale tool list: advertised, but gone at dispatch",
        teaches="'Tool not found: x. Available: ...' names the alternatives and the suggestion "
        "layer adds 'Did you mean ...?': the model takes the hint.",
        task="What is on the release checklist in notes.txt?",
        ending="ok",
        soft=frozenset({"registry_miss"}),
        builder=_registry_miss,
    ),
    Scenario(
        name="invalid_arguments",
        title="A guessed argument shape, corrected from the schema",
        teaches="Invalid arguments name the field, what was expected and what came; the model "
        "fixes that field against the tool's JSON schema.",
        task="Show me the first lines of server.log.",
        ending="ok",
        soft=frozenset({"invalid_arguments"}),
        builder=_invalid_arguments,
    ),
    Scenario(
        name="panicking_tool",
        title="A tool that crashes is caught and reported as text",
        teaches='Any exception a tool raises is caught at the dispatch boundary: \'Tool "x" '
        "panicked: ...'. The model retries once, then routes around it.",
        task="How wordy is empty.txt, and what does notes.txt say?",
        ending="ok",
        soft=frozenset({"tool_panic"}),
        builder=_panicking_tool,
    ),
    Scenario(
        name="hanging_tool",
        title="A hung tool times out and the run goes on",
        teaches="The timeout middleware answers 'Tool 'x' timed out after 0.2s' while the hung "
        "call is left behind on its thread; the model tries once more and succeeds.",
        task="Find the ERROR lines in the server log: search for 'ERROR'.",
        ending="ok",
        soft=frozenset({"timeout"}),
        builder=_hanging_tool,
    ),
    Scenario(
        name="hook_veto",
        title="A policy hook blocks a call; the model routes around it",
        teaches="A veto is soft: 'blocked by policy: <reason>' tells the model why, and it "
        "takes another route (and says so in its answer).",
        task="Get the release notes (try https://paste.example.com/raw/release) and the checklist.",
        ending="ok",
        soft=frozenset({"hook_veto"}),
        builder=_hook_veto,
    ),
    Scenario(
        name="cancelled_run",
        title="A guard fires the cancel token: the run ends hard",
        teaches="Cancellation is hard: the user ended the run, there is nothing to adapt to. "
        "Completed turns are salvaged in err.run; the in-flight turn is dropped.",
        task="Read notes.txt, then clean up the users table.",
        ending="cancelled",
        soft=frozenset(),
        builder=_cancelled_run,
    ),
    Scenario(
        name="context_overflow",
        title="A request that cannot fit the context budget",
        teaches="When no request can be built that fits, even after compaction, the run ends "
        "with ContextExceeded; the scratchpad is discarded whole.",
        task="Why did payments fail this morning? Here is the whole log:\n" + FILES["server.log"],
        ending="context_exceeded",
        soft=frozenset(),
        builder=_context_overflow,
    ),
    Scenario(
        name="vague_error",
        title="An error text that says nothing: the model cannot adapt",
        teaches="'failed' gives the model nothing to act on, so it repeats the call; the loop "
        "detector refuses the 4th identical call and the model gives up on that step. Write "
        "error text for the model, not for a log.",
        task="Restart the payments service, then read server.log.",
        ending="ok",
        soft=frozenset({"tool_error", "loop_refusal"}),
        builder=_vague_error,
    ),
)
