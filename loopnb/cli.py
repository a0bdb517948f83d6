"""The ``loopnb`` command line.

``loopnb demo [NAME ...] [--seed N] [--list] [--record DIR]`` runs the built-in scenarios on the
embedded models (no API key, no network) and prints, per scenario, one row per turn tagged
ok / soft / hard, how the run ended, and a summary. The exit code is 0 when every scenario ended
as it declares.

``loopnb audit PATH ...`` audits recordings (provided by ``loopnb.record``).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from loopnb import scenarios
from loopnb.engine.events import TurnFinished
from loopnb.engine.messages import Message, ToolResult
from loopnb.engine.models.remote import ModelConfigError
from loopnb.scenarios import Outcome, Scenario

__all__ = ["format_outcome", "main", "turn_rows"]

_COLUMNS = ("turn", "channel", "producer", "model", "retries", "tools", "what the model read")


def turn_rows(outcome: Outcome) -> list[dict[str, str]]:
    """One row per turn (keys: ``_COLUMNS``), built from the run's ``TurnFinished`` events only."""
    return [_row(turn) for turn in outcome.turns]


def _row(turn: TurnFinished) -> dict[str, str]:
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


def _demo(args: argparse.Namespace, out: TextIO) -> int:
    if args.list:
        for scenario in scenarios.SCENARIOS.values():
            out.write(f"{scenario.name:<20} ends {scenario.ending:<24} {scenario.title}\n")
        return 0
    try:
        chosen = [scenarios.get(name) for name in args.names] or list(scenarios.SCENARIOS.values())
    except KeyError as exc:
        print(f"loopnb demo: {exc.args[0]}", file=sys.stderr)
        return 2
    recorder_for = _recorders(args.record)
    if recorder_for is None:
        return 2
    try:
        overrides = _model_overrides(args)
    except (ModelConfigError, ImportError) as exc:
        print(f"loopnb demo: {exc}", file=sys.stderr)
        return 2
    width = args.width or shutil.get_terminal_size((110, 24)).columns
    outcomes = []
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
    out.write(_summary(outcomes) + "\n")
    return 0 if all(o.as_expected for o in outcomes) else 1


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
    the scenarios on a real model instead of each scenario's embedded one.
    """
    if args.model is None and args.base_url is None:
        return {}
    from loopnb.engine.models.select import from_env

    return {"model": from_env(args.model, base_url=args.base_url)}


def _recorders(directory: str | None) -> Any:
    """A function giving each scenario its recorder (``None`` without ``--record``).

    Returns ``None`` itself when recording was asked for but ``loopnb.record`` is unavailable.
    """
    if directory is None:
        return lambda scenario: None
    try:
        from loopnb.record import Recorder
    except ImportError as exc:
        print(f"loopnb demo --record: recording is unavailable ({exc})", file=sys.stderr)
        return None
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)

    def recorder_for(scenario: Scenario) -> Any:
        path = root / f"{scenario.name}.jsonl"
        path.unlink(missing_ok=True)  # one fresh recording per scenario and demo run
        return Recorder(path)

    return recorder_for


def _audit(args: argparse.Namespace, out: TextIO) -> int:
    try:
        from loopnb.record.cli import audit_command
    except ImportError as exc:
        print(f"loopnb audit: auditing is unavailable ({exc})", file=sys.stderr)
        return 2
    code: int = audit_command(args.paths)
    return code


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="loopnb", description="Explore, teach and audit agent loops: soft and hard errors."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = commands.add_parser(
        "demo",
        help="run the built-in scenarios and print a per-turn table tagged ok/soft/hard",
        description="Run the built-in teaching scenarios on the embedded models (no API key).",
    )
    demo.add_argument("names", nargs="*", metavar="NAME", help="scenarios to run (default: all)")
    demo.add_argument("--seed", type=int, default=None, help="seed of the simulated model")
    demo.add_argument("--list", action="store_true", help="list the scenarios and exit")
    demo.add_argument("--record", metavar="DIR", help="write one JSON Lines recording per scenario")
    demo.add_argument("--width", type=int, default=None, help="table width (default: terminal)")
    demo.add_argument(
        "--model",
        default=None,
        help="run on this model instead of the embedded ones: openai[:name], anthropic[:name], "
        "ollama:name, vllm:name, lmstudio:name (default: LOOPNB_MODEL, else the embedded model)",
    )
    demo.add_argument("--base-url", default=None, help="the model server's address (OpenAI-compatible)")
    demo.set_defaults(handler=_demo)
    audit = commands.add_parser("audit", help="audit recorded runs", description="Audit recordings.")
    audit.add_argument("paths", nargs="+", metavar="PATH", help="recordings (.jsonl / .parquet)")
    audit.set_defaults(handler=_audit)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``loopnb`` command; returns the exit code."""
    args = _parser().parse_args(argv)
    code: int = args.handler(args, sys.stdout)
    return code


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
