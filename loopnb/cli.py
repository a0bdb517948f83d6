"""The ``loopnb`` command line.

``loopnb demo [NAME ...] [--seed N] [--list] [--record DIR]`` runs the built-in scenarios on the
embedded models (no API key, no network) and prints, per scenario, one row per turn tagged
ok / soft / hard, how the run ended, and a summary. The exit code is 0 when every scenario ended
as it declares.

``loopnb audit PATH ...`` audits recordings and ``loopnb convert SRC DST`` saves one in the other
format (both provided by ``loopnb.record``); ``loopnb query SQL PATH ...`` runs DuckDB SQL over them.

Bad input is a usage error (exit 2) named on stderr; Ctrl-C ends the command with exit 130 after
printing the interrupted scenario's table, and a closed pipe (``| head``) ends it quietly.
"""

from __future__ import annotations

import argparse
import difflib
import os
import shutil
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, TextIO

import loopnb
from loopnb import scenarios
from loopnb.engine import Message, ToolResult, Turn
from loopnb.engine.models import ModelConfigError, from_env
from loopnb.scenarios import Outcome, Scenario

if TYPE_CHECKING:
    from loopnb.record import Recorder

__all__ = ["format_outcome", "main", "turn_rows"]

_COLUMNS = ("turn", "channel", "producer", "model", "retries", "tools", "what the model read")


def turn_rows(outcome: Outcome) -> list[dict[str, str]]:
    """One row per turn (keys: ``_COLUMNS``), each read from the run's events as a ``Turn``."""
    return [_row(turn) for turn in outcome.turns]


def _row(turn: Turn) -> dict[str, str]:
    calls = turn.reply.tool_calls if turn.reply is not None else ()
    if turn.channel == "hard":
        read = f"(run ended) {turn.error_text or ''}"
    elif turn.results or turn.feedback:
        said: list[ToolResult | Message] = [*turn.results, *turn.feedback]
        read = " | ".join(item.content for item in said)
    else:
        text = turn.reply.text if turn.reply is not None else ""
        read = f"(final answer) {text or ''}"
    return {
        "turn": str(turn.turn),
        "channel": turn.channel,
        "producer": turn.producer or "-",
        "model": turn.model or "-",
        "retries": str(turn.recovery_attempts),
        "tools": ", ".join(call.name for call in calls) or "-",
        "what the model read": read,
    }


def format_outcome(outcome: Outcome, *, width: int = 100) -> str:
    """The per-turn table and the ending of one scenario run, as plain text.

    The ``model`` column appears when more than one model answered, ``retries`` when recovery
    retried a call.
    """
    s = outcome.scenario
    rows = turn_rows(outcome)
    columns = [
        c
        for c in _COLUMNS
        if (c != "model" or len({r["model"] for r in rows} - {"-"}) > 1)
        and (c != "retries" or any(r["retries"] != "0" for r in rows))
    ]
    fixed, last = columns[:-1], columns[-1]
    widths = [max(len(c), *(len(r[c]) for r in rows)) for c in fixed]
    room = max(20, width - 3 - sum(w + 2 for w in widths))

    def line(cells: dict[str, str]) -> str:
        head = "  ".join(cells[c].ljust(w) for c, w in zip(fixed, widths, strict=True))
        return f"   {head}  {_clip(cells[last], room)}".rstrip()

    lines = [f"== {s.name}: {s.title}", *_wrap(s.teaches, width, indent="   ")]
    lines.append(line({c: c for c in columns}))
    lines.extend(line(row) for row in rows)
    verdict = "as declared" if outcome.as_expected else f"NOT as declared: {outcome.mismatch()}"
    if outcome.error is None:
        ending = f"ended ok: {_clip(outcome.output or '', max(20, width - 40))!r}"
    else:
        ending = f"ended hard: {type(outcome.error).__name__} ({outcome.ending})"
    lines.append(f"   {ending}, {verdict}")
    return "\n".join(lines)


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: max(0, limit - 3)] + "..."


def _wrap(text: str, width: int, *, indent: str) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width=max(40, width), initial_indent=indent, subsequent_indent=indent)


# -- commands -----------------------------------------------------------------------------


class _UsageError(Exception):
    """Bad input on the command line: the message goes to stderr and the exit code is 2."""


def _demo(args: argparse.Namespace, out: TextIO) -> int:
    if args.list:
        for scenario in scenarios.SCENARIOS.values():
            out.write(f"{scenario.name:<20} ends {scenario.ending:<24} {scenario.title}\n")
        return 0
    try:
        chosen = _chosen(args.names)
        overrides = _model_overrides(args)
        recorder_for = _recorders(args.record, chosen)
    except _UsageError as exc:
        print(f"loopnb demo: {exc}", file=sys.stderr)
        return 2
    if recorder_for is None:
        return 2
    width = args.width or shutil.get_terminal_size((110, 24)).columns
    outcomes = []
    with _noticing_interrupts() as interrupted, _plain_warnings("loopnb demo"):
        for scenario in chosen:
            recorder = recorder_for(scenario)
            observers = [] if recorder is None else [recorder]
            try:
                outcome = scenario.run(seed=args.seed, observers=observers, **overrides)
            finally:
                if recorder is not None and callable(getattr(recorder, "close", None)):
                    recorder.close()
            outcomes.append(outcome)
            out.write(format_outcome(outcome, width=width) + "\n\n")
            if interrupted:  # the engine ended this run as Cancelled; the user wants out
                raise KeyboardInterrupt
    out.write(_summary(outcomes) + "\n")
    return 0 if all(o.as_expected for o in outcomes) else 1


def _chosen(names: Sequence[str]) -> list[Scenario]:
    """The scenarios ``names`` asks for (all of them when empty); an unknown one is a usage error
    suggesting the closest names."""
    unknown = [name for name in names if name not in scenarios.SCENARIOS]
    if not unknown:
        return [scenarios.get(name) for name in names] or list(scenarios.SCENARIOS.values())
    problems = []
    for name in unknown:
        close = difflib.get_close_matches(name, scenarios.names(), n=3, cutoff=0.6)
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        problems.append(f"no scenario named {name!r}{hint}")
    raise _UsageError(f"{'; '.join(problems)}; the scenarios are: {', '.join(scenarios.names())}")


@contextmanager
def _noticing_interrupts() -> Iterator[list[int]]:
    """Note each Ctrl-C (in the yielded list) before it reaches the engine.

    The engine turns Ctrl-C into a ``Cancelled`` ending of the run in progress and returns; the
    note lets the demo stop there instead of going on with the next scenario. Installed only in
    the main thread and only over Python's default handler (an ignored SIGINT stays ignored).
    """
    seen: list[int] = []
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield seen
        return

    def note(signum: int, frame: FrameType | None) -> None:
        seen.append(signum)
        signal.default_int_handler(signum, frame)

    signal.signal(signal.SIGINT, note)
    try:
        yield seen
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@contextmanager
def _plain_warnings(command: str) -> Iterator[None]:
    """Show warnings (a recorder that could not write and was detached, ...) as one line on
    stderr naming the command, instead of Python's file, line and source excerpt."""

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        print(f"{command}: warning: {message}", file=sys.stderr)

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


def _summary(outcomes: list[Outcome]) -> str:
    ok = sum(o.error is None for o in outcomes)
    turns = sum(len(o.turns) for o in outcomes)
    soft = sum(t.channel == "soft" for o in outcomes for t in o.turns)
    expected = sum(o.as_expected for o in outcomes)
    text = (
        f"{len(outcomes)} scenarios, {turns} turns ({soft} soft): {ok} ended ok, "
        f"{len(outcomes) - ok} hard; {expected}/{len(outcomes)} as declared"
    )
    missed = [o.scenario.name for o in outcomes if not o.as_expected]
    return text + (f" (not as declared: {', '.join(missed)})" if missed else "")


def _model_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """Engine overrides chosen on the command line.

    This is where ``--model`` / ``--base-url`` plug in: return ``{"model": <a Model>}`` to run
    the scenarios on a real model instead of each scenario's embedded one. A spec that cannot be
    read, a missing key or a missing client is a usage error, raised before anything runs.
    """
    if args.model is None and args.base_url is None:
        return {}
    if args.model is not None and not args.model.strip():
        raise _UsageError("--model needs a model spec, e.g. openai:gpt-4o-mini or ollama:llama3.1")
    try:
        return {"model": from_env(args.model, base_url=args.base_url)}
    except (ModelConfigError, ImportError) as exc:
        raise _UsageError(str(exc)) from exc


def _recorders(
    directory: str | None, chosen: Sequence[Scenario]
) -> Callable[[Scenario], Recorder | None] | None:
    """A function giving each scenario its recorder (``None`` without ``--record``).

    Returns ``None`` itself when recording was asked for but ``loopnb.record`` is unavailable,
    and raises ``_UsageError`` when the folder cannot be made or would lose a file that is not a
    loopnb recording (a scenario's earlier recording is replaced: one per scenario and demo run).
    """
    if directory is None:
        return lambda scenario: None
    try:
        from loopnb.record import Recorder
    except ImportError as exc:
        print(f"loopnb demo --record: recording is unavailable ({exc})", file=sys.stderr)
        return None
    root = Path(directory)
    if root.exists() and not root.is_dir():
        raise _UsageError(
            f"--record {directory}: exists and is not a folder; give a folder for the recordings"
        )
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _UsageError(f"--record {directory}: cannot make the folder ({exc.strerror or exc})") from exc
    for scenario in chosen:
        _check_replaceable(root / f"{scenario.name}.jsonl")

    def recorder_for(scenario: Scenario) -> Recorder:
        path = root / f"{scenario.name}.jsonl"
        path.unlink(missing_ok=True)  # one fresh recording per scenario and demo run
        return Recorder(path)

    return recorder_for


def _check_replaceable(path: Path) -> None:
    """Raise ``_UsageError`` unless ``path`` is absent, empty or a loopnb recording."""
    from loopnb.record import RecordingError
    from loopnb.record._jsonl import check_header

    if not path.exists():
        return
    if not path.is_file():
        raise _UsageError(f"--record: {path} exists and is not a file; move it or choose another folder")
    try:
        with path.open("rb") as f:
            first = f.readline(1 << 16).rstrip(b"\r\n")
        if first:
            check_header(first, path)
    except (OSError, RecordingError) as exc:
        raise _UsageError(
            f"--record: {path} exists and is not a loopnb recording; "
            "not overwriting it: move it or choose another folder"
        ) from exc


def _audit(args: argparse.Namespace, out: TextIO) -> int:
    try:
        from loopnb.record._cli import audit_command
    except ImportError as exc:
        print(f"loopnb audit: auditing is unavailable ({exc})", file=sys.stderr)
        return 2
    code: int = audit_command(args.paths, out=out)
    return code


def _convert(args: argparse.Namespace, out: TextIO) -> int:
    try:
        from loopnb.record._cli import convert_command
    except ImportError as exc:
        print(f"loopnb convert: converting is unavailable ({exc})", file=sys.stderr)
        return 2
    code: int = convert_command(args.src, args.dst, out=out)
    return code


def _query(args: argparse.Namespace, out: TextIO) -> int:
    try:
        from loopnb._sweep._query import query_command
    except ImportError as exc:
        print(f"loopnb query: querying is unavailable ({exc})", file=sys.stderr)
        return 2
    code: int = query_command(args.sql, args.paths, out=out)
    return code


def _schema(args: argparse.Namespace, out: TextIO) -> int:
    """Print the JSON schema of the turns or the events frame (each column: type, description,
    pandas dtype)."""
    import json

    from loopnb.record import EVENT_SCHEMA, TURN_SCHEMA

    out.write(json.dumps(TURN_SCHEMA if args.table == "turns" else EVENT_SCHEMA, indent=2) + "\n")
    return 0


def _columns(text: str) -> int:
    """``--width``: a whole number of columns, at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of columns, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number of columns, got {value}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="loopnb", description="Explore, teach and audit agent loops: soft and hard errors."
    )
    parser.add_argument("--version", action="version", version=f"loopnb {loopnb.__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = commands.add_parser(
        "demo",
        help="run the built-in scenarios and print a per-turn table tagged ok/soft/hard",
        description="Run the built-in teaching scenarios on the embedded models (no API key). "
        "Exit code: 0 when every scenario ended as it declares, 1 when one did not, 2 for bad "
        "input, 130 on Ctrl-C.",
    )
    demo.add_argument("names", nargs="*", metavar="NAME", help="scenarios to run (default: all)")
    demo.add_argument("--seed", type=int, default=None, help="seed of the simulated model")
    demo.add_argument("--list", action="store_true", help="list the scenarios and exit")
    demo.add_argument(
        "--record",
        metavar="DIR",
        help="write one JSON Lines recording per scenario, DIR/NAME.jsonl (replacing an earlier one)",
    )
    demo.add_argument("--width", type=_columns, default=None, help="table width (default: terminal)")
    demo.add_argument(
        "--model",
        default=None,
        help="run on this model instead of each scenario's embedded one: openai[:name], "
        "anthropic[:name], ollama:name, vllm:name, lmstudio:name, fallible",
    )
    demo.add_argument(
        "--base-url",
        default=None,
        help="the model server's address (OpenAI-compatible); without --model, LOOPNB_MODEL names the model",
    )
    demo.set_defaults(handler=_demo)
    audit = commands.add_parser(
        "audit",
        help="audit recorded runs",
        description="Audit recordings. A recording that cannot be read is named with what is wrong "
        "and the others are audited. Exit code: 0 when every recording was read, 1 when one could "
        "not be, 2 for bad input.",
    )
    audit.add_argument(
        "paths", nargs="+", metavar="PATH", help="recordings (.jsonl / .parquet), folders or glob patterns"
    )
    audit.set_defaults(handler=_audit)
    convert = commands.add_parser(
        "convert",
        help="save a recording in the other format (JSON Lines <-> Parquet)",
        description="Save the recording SRC as DST, in the format DST's suffix names (.jsonl or "
        ".parquet), redacted, written whole or not at all. An existing DST that is not a recording "
        "is never replaced. Exit code: 0 when DST was written, 1 when SRC cannot be read or DST "
        "cannot be written, 2 for bad input (a DST suffix other than .jsonl or .parquet).",
    )
    convert.add_argument("src", metavar="SRC", help="a recording (.jsonl or .parquet)")
    convert.add_argument("dst", metavar="DST", help="where to write it: NAME.jsonl or NAME.parquet")
    convert.set_defaults(handler=_convert)
    query = commands.add_parser(
        "query",
        help="run DuckDB SQL over recordings (views turns and events)",
        description="Run one SQL query (DuckDB) over recordings, with a turns and an events view, and "
        "print the result. Exit code: 0 when it ran, 1 when a recording could not be read or none was "
        "found, 2 for SQL that does not run.",
    )
    query.add_argument("sql", metavar="SQL", help='e.g. "select channel, count(*) from turns group by 1"')
    query.add_argument(
        "paths", nargs="+", metavar="PATH", help="recordings (.jsonl / .parquet), folders, sweeps or globs"
    )
    query.set_defaults(handler=_query)
    schema = commands.add_parser(
        "schema",
        help="print the JSON schema of the recorded frames",
        description="Print the JSON schema of the turns frame (or the events frame): every column "
        "with its type, description and pandas dtype.",
    )
    schema.add_argument("table", nargs="?", choices=("turns", "events"), default="turns")
    schema.set_defaults(handler=_schema)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``loopnb`` command; returns the exit code.

    Ctrl-C returns 130 with a one-line note; a reader that closed the pipe (``| head``) returns
    141, quietly.
    """
    args = _parser().parse_args(argv)
    try:
        code: int = args.handler(args, sys.stdout)
        sys.stdout.flush()
    except KeyboardInterrupt:
        print(f"loopnb {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        _silence_stdout()
        return 141
    return code


def _silence_stdout() -> None:
    """Point stdout at the null device, so the interpreter's last flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass  # not a real file (tests capture it): nothing is left to flush


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
