"""The ``loopnb`` command line.

``loopnb demo [NAME ...] [--seed N] [--list] [--record DIR]`` runs the built-in scenarios on the
embedded models (no API key, no network) and prints, per scenario, one row per turn tagged
ok / soft / hard, how the run ended, and a summary. The exit code is 0 when every scenario ended
as it declares.

``loopnb audit PATH ...`` audits recordings, ``loopnb compare A B`` compares two recorded runs turn
by turn and ``loopnb convert SRC DST`` saves one in the other format (all provided by
the analysis layer); ``loopnb query SQL PATH ...`` runs DuckDB SQL over them.
On a terminal, ok / soft / hard are coloured from
``loopnb._palette`` (plain text when piped, with ``NO_COLOR`` or ``TERM=dumb``); the words are
always there.

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

from loopnb import scenarios
from loopnb._version import __version__
from loopnb.cli import _terminal as terminal
from loopnb.cli._outcome_text import outcome_lines, summary_line
from loopnb.engine.models import ModelConfigError, from_env
from loopnb.scenarios import Scenario

if TYPE_CHECKING:
    from loopnb.record import Recorder

# -- commands -----------------------------------------------------------------------------


EXIT_CODES = (
    "Exit code: 0 when everything named was read and done, 1 when a recording could not be read or an "
    "output could not be written (damaged, a newer format version, Parquet without pyarrow: each named "
    "on stderr, the rest done), 2 when the command cannot run as asked (a path naming no file, a file "
    "that is not a recording, an option value it cannot use, SQL that does not run, an extra that is "
    "not installed)."
)
"""The exit codes of every subcommand that reads recordings, stated once (``--help`` says them)."""


class _UsageError(Exception):
    """Bad input on the command line: the message goes to stderr and the exit code is 2."""


def _demo(args: argparse.Namespace, out: TextIO) -> int:
    if args.list:
        for scenario in scenarios.SCENARIOS.values():
            out.write(f"{scenario.name:<20} ends {scenario.ending:<24} {scenario.title}\n")
        return 0
    try:
        chosen = _chosen(args.names)
        overrides = {**_model_overrides(args), **_faults(args.fault, chosen)}
        recorder_for = _recorders(args.record, chosen)
    except _UsageError as exc:
        print(f"loopnb demo: {exc}", file=sys.stderr)
        return 2
    if recorder_for is None:
        return 2
    try:
        exporter = _exporter(args.otlp)
    except _UsageError as exc:
        print(f"loopnb demo: {exc}", file=sys.stderr)
        return 2
    width = args.width or shutil.get_terminal_size((110, 24)).columns
    con = terminal.console(out)
    outcomes = []
    with _noticing_interrupts() as interrupted, _plain_warnings("loopnb demo"):
        for scenario in chosen:
            recorder = recorder_for(scenario)
            observers: list[Callable[[Any], None]] = [] if recorder is None else [recorder]
            if exporter is not None:
                observers.append(exporter)
            try:
                outcome = scenario.run(seed=args.seed, observers=observers, **overrides)
            finally:
                if recorder is not None and callable(getattr(recorder, "close", None)):
                    recorder.close()
            outcomes.append(outcome)
            for line in outcome_lines(outcome, width=width):
                terminal.write(con, line)
            terminal.write(con, "")
            if interrupted:  # the engine ended this run as Cancelled; the user wants out
                raise KeyboardInterrupt
    terminal.write(con, summary_line(outcomes))
    for note in _fault_notes(overrides):
        terminal.write(con, note)
    if exporter is not None:
        exporter.close()  # flushes the batch to the endpoint
        terminal.write(
            con, f"sent {terminal.plural(len(outcomes), 'run')} as OpenTelemetry spans to {args.otlp}"
        )
    if args.record is not None:
        for note in _recorded(args.record, len(outcomes)):
            terminal.write(con, note)
    # the scenarios' declared endings assume no fault: with one, they are not the measure of the run
    return 0 if "faults" in overrides or all(o.as_expected for o in outcomes) else 1


def _exporter(url: str | None) -> Any:
    """The ``--otlp`` exporter (``None`` without the option)."""
    if url is None:
        return None
    try:
        from loopnb.otel import exporter_for

        return exporter_for(url)
    except (ImportError, ValueError) as exc:
        raise _UsageError(f"--otlp: {exc}") from None


def _fault_notes(overrides: dict[str, Any]) -> list[str]:
    """The faults the runs had injected, said once under the table."""
    faults = overrides.get("faults", {})
    said = ", ".join(f"{tool}={fault.label}" for tool, fault in faults.items())
    return [f"with faults injected: {said} (marked [injected ...] in the tables)"] if faults else []


def _recorded(folder: str, n: int) -> list[str]:
    """Where ``--record`` wrote, and the command that audits it."""
    import shlex

    return [
        f"wrote {terminal.plural(n, 'recording')} to {folder} (one NAME.jsonl per scenario)",
        f"next: loopnb audit {shlex.quote(folder)}",
    ]


def _faults(specs: Sequence[str], chosen: Sequence[Scenario]) -> dict[str, Any]:
    """``--fault TOOL=FAULT`` options as the run's ``faults={tool: Fault}`` (none: ``{}``), each
    label parsed (never evaluated), each tool one every chosen scenario has."""
    from loopnb.faults import FaultSyntaxError, parse

    if not specs:
        return {}
    out: dict[str, Any] = {}
    for spec in specs:
        tool, sep, label = spec.partition("=")
        if not sep or not tool.strip() or not label.strip():
            raise _UsageError(f"--fault {spec!r}: expected TOOL=FAULT, e.g. --fault read_file=error.first(2)")
        try:
            out[tool.strip()] = parse(label)
        except (FaultSyntaxError, TypeError) as exc:
            raise _UsageError(f"--fault {spec!r}: {exc}") from None
    for scenario in chosen:
        tools = [getattr(t, "name", "") for t in scenario.builder(_probe(scenario)).get("tools", ())]
        missing = [t for t in out if t not in tools]
        if missing:
            close = difflib.get_close_matches(missing[0], tools, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise _UsageError(
                f"--fault: scenario {scenario.name} has no tool named {missing[0]!r}{hint}; its tools: "
                f"{', '.join(tools) or 'none'}"
            )
    return {"faults": out}


def _probe(scenario: Scenario) -> Any:
    """The build a scenario's builder is asked with to list its tools (nothing runs)."""
    from loopnb.engine import FakeClock
    from loopnb.scenarios._scenario import Build

    return Build(clock=FakeClock(), seed=scenario.seed)


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


def _unknown_format(command: str, name: str | None) -> bool:
    """Whether ``--format NAME`` names no format loopnb reads (then said on stderr)."""
    if name is None:
        return False
    from loopnb.fileformats import formats

    names = ["loopnb", *(fmt.name for fmt in formats())]
    if name in names:
        return False
    near = difflib.get_close_matches(name, names, n=1)
    hint = f" (did you mean {near[0]}?)" if near else ""
    print(f"loopnb {command}: error: --format {name}: no such format{hint}; the formats: {', '.join(names)}",
          file=sys.stderr)  # fmt: skip
    return True


_DOING = {"audit": "auditing", "compare": "comparing", "convert": "converting"}


def _reading(command: str, args: argparse.Namespace) -> Any:
    """The commands that read recordings (``loopnb.cli._commands``, pandas behind it), once
    ``--format`` is checked; ``None`` when the command cannot run (said on stderr: exit 2)."""
    try:
        from loopnb.cli import _commands
    except ImportError as exc:
        print(f"loopnb {command}: {_DOING[command]} is unavailable ({exc})", file=sys.stderr)
        return None
    return None if _unknown_format(command, args.format) else _commands


def _audit(args: argparse.Namespace, out: TextIO) -> int:
    commands = _reading("audit", args)
    if commands is None:
        return 2
    code: int = commands.audit_command(args.paths, out=out, width=args.width, format=args.format)
    return code


def _compare(args: argparse.Namespace, out: TextIO) -> int:
    commands = _reading("compare", args)
    if commands is None:
        return 2
    labels = tuple(args.labels) if args.labels else ("a", "b")
    code: int = commands.compare_command(
        args.a, args.b, runs=args.run or (), labels=(labels[0], labels[1]), context=args.context,
        html=args.html, out=out, width=args.width, format=args.format,
    )  # fmt: skip
    return code


def _convert(args: argparse.Namespace, out: TextIO) -> int:
    commands = _reading("convert", args)
    if commands is None:
        return 2
    code: int = commands.convert_command(args.src, args.dst, out=out, format=args.format)
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
    parser.add_argument("--version", action="version", version=f"loopnb {__version__}")
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
    demo.add_argument(
        "--otlp",
        metavar="URL",
        default=None,
        help="also send every run as OpenTelemetry spans to this OTLP/HTTP endpoint, e.g. "
        "http://127.0.0.1:4318 (needs loopnb[otel])",
    )
    demo.add_argument("--width", type=_columns, default=None, help="table width (default: terminal)")
    demo.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="TOOL=FAULT",
        help="inject a fault into a tool, e.g. read_file=error.first(2) or "
        "read_file='error(\"disk busy\").always()' (repeatable; see loopnb.faults)",
    )
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
        "and the others are audited. " + EXIT_CODES,
    )
    audit.add_argument(
        "paths", nargs="+", metavar="PATH", help="recordings (.jsonl / .parquet), folders or glob patterns"
    )
    audit.add_argument("--width", type=_columns, default=None, help="line width (default: terminal)")
    audit.add_argument(
        "--format", metavar="NAME", default=None,
        help="read as this format instead of telling it from the content (e.g. otlp, langgraph)",
    )  # fmt: skip
    audit.set_defaults(handler=_audit)
    comparing = commands.add_parser(
        "compare",
        help="compare two recorded runs turn by turn: totals, first divergence, aligned turns",
        description="Compare the run recorded in A with the run recorded in B: each run's totals side by "
        "side, the first turn where they differ (in call, channel, producer or error text, or where one "
        "ended) and the aligned turns around it. A and B are recordings (.jsonl / .parquet, or another "
        "framework's run loopnb reads) or a sweep's folder; they may be the same file; two runs that "
        "differ are not an error. " + EXIT_CODES,
    )
    comparing.add_argument("a", metavar="A", help="the first recording (side a)")
    comparing.add_argument("b", metavar="B", help="the second recording (side b)")
    comparing.add_argument(
        "--run",
        action="append",
        metavar="RUN",
        help="the run to compare, for a recording of several: once for both sides, or twice (A's, then "
        "B's); write --run=ID for an id that begins with a dash",
    )
    comparing.add_argument("--labels", nargs=2, metavar=("LA", "LB"), help="names for the two sides (a b)")
    comparing.add_argument(
        "--context", type=_columns, default=3, help="aligned rows shown either side of the divergence (3)"
    )
    comparing.add_argument("--html", metavar="PATH", help="also write the comparison as an offline HTML page")
    comparing.add_argument("--width", type=_columns, default=None, help="line width (default: terminal)")
    comparing.add_argument(
        "--format", metavar="NAME", default=None,
        help="read as this format instead of telling it from the content (e.g. otlp, langgraph)",
    )  # fmt: skip
    comparing.set_defaults(handler=_compare)
    convert = commands.add_parser(
        "convert",
        help="save a recording in the other format (JSON Lines <-> Parquet)",
        description="Save the recording SRC as DST, in the format DST's suffix names (.jsonl or "
        ".parquet), redacted, written whole or not at all. An existing DST that is not a recording "
        "is never replaced. " + EXIT_CODES,
    )
    convert.add_argument("src", metavar="SRC", help="a recording (.jsonl or .parquet)")
    convert.add_argument("dst", metavar="DST", help="where to write it: NAME.jsonl or NAME.parquet")
    convert.add_argument(
        "--format", metavar="NAME", default=None,
        help="read as this format instead of telling it from the content (e.g. otlp, langgraph)",
    )  # fmt: skip
    convert.set_defaults(handler=_convert)
    query = commands.add_parser(
        "query",
        help="run DuckDB SQL over recordings (views turns and events)",
        description="Run one SQL query (DuckDB) over recordings, with a turns and an events view, and "
        "print the result; a recording that cannot be read is named and the others are queried. "
        + EXIT_CODES,
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
        "with its type, description and pandas dtype. Exit code: 0, 2 for bad input.",
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
