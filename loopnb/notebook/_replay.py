"""Replaying a recorded run into the live view: the same widget, with a turn slider and a play button.

``Frames`` folds a run's events once and answers "what do the panes show with turn k selected?"
for any k, by ``at_turn`` (the live view's own rule); ``replay(source)`` puts those frames behind
the view's slider. Frame 0 is the run just started, frame k the panes as turn k ended (the later
turns stay on the timeline, greyed), and the last frame the run's final state: exactly what the
live view showed when the run ended.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Protocol, TypeAlias

from loopnb.engine._events import Event
from loopnb.notebook._live import LiveView
from loopnb.notebook._panes import Pane
from loopnb.notebook._state import ViewState, at_turn
from loopnb.notebook._viewmodel import ViewModel, runs_of


class HasEvents(Protocol):
    """Whatever holds a run's events as objects: a ``Recording``, a ``Recorder``."""

    @property
    def event_objects(self) -> list[Event]: ...


EventSource: TypeAlias = HasEvents | str | Path | Iterable[Event]
"""What ``replay`` and the report read: a ``Recording``, a ``Recorder``, a path, or events."""


def events_of(source: EventSource) -> list[Event]:
    """The typed events of a ``Recording``, a ``Recorder``, a path to a recording, or an iterable."""
    if isinstance(source, str | Path):
        from loopnb.fileformats import load

        source = load(source)
    objects = getattr(source, "event_objects", None)
    if objects is not None:
        return list(objects() if callable(objects) else objects)
    if isinstance(source, Iterable):
        return list(source)
    raise TypeError(
        f"expected a Recording, a Recorder, a path to a recording or a list of events; got {source!r:.80}"
    )


def run_events(events: list[Event], run_id: str | None = None) -> list[Event]:
    """The events of one run: ``run_id``'s, or the last run's. Raises ``ValueError`` if none."""
    runs = runs_of(events)
    if not runs:
        raise ValueError("the recording holds no events")
    if run_id is None:
        return runs[list(runs)[-1]]
    if run_id not in runs:
        raise ValueError(f"no run {run_id!r} in the recording; its runs are {list(runs)}")
    return runs[run_id]


class Frames:
    """The panes of one run with each turn selected (``frames(k)``, k = 0..``count``)."""

    def __init__(self, events: Iterable[Event]) -> None:
        self._final = ViewModel.fold(events)
        self.count = len(self._final.turns)

    def __call__(self, k: int) -> ViewState:
        return at_turn(self._final, max(0, min(k, self.count)))

    def __len__(self) -> int:
        return self.count + 1

    @property
    def final(self) -> ViewState:
        return self(self.count)


def replay(
    source: EventSource, *, run_id: str | None = None, interval_ms: int = 300, panes: Iterable[Pane] = ()
) -> LiveView:
    """The live view of a recorded run, with a turn slider and a play button.

    ``source`` is a ``Recording`` (``loopnb.load(path)``), a ``Recorder``, a path, or a list of
    events; a recording of many runs shows the last one unless ``run_id`` names another, and a
    ``run`` menu beside the slider (``view.runs``) switches between them. A run the recording
    does not see end (a torn last line, a writer still going) says so beside its status. The view
    opens on the final frame; display it by making it a cell's last expression. Like the live
    view, it shows every secret as ``[REDACTED]`` (what it draws a notebook may save), while its
    ``state`` keeps what the model read.
    """
    events = events_of(source)
    try:
        chosen = run_events(events, run_id)
    except ValueError as exc:
        where = _where(source)
        raise ValueError(f"replay: {where}{exc}") from None
    runs = runs_of(events)
    shown = chosen[0].run_id
    view = LiveView(mode="replay", title=_title(list(runs), shown), panes=panes)
    if view.play is not None:
        view.play.interval = interval_ms
    _show(view, runs, shown)
    if len(runs) > 1:
        _add_run_menu(view, runs, shown)
    return view


def _show(view: LiveView, runs: dict[str, list[Event]], run_id: str) -> None:
    """Put ``run_id``'s frames behind the view's slider, on its final frame."""
    frames = Frames(runs[run_id])
    view.fold_panes(runs[run_id])  # your panes: the run folded once, drawn at each selected turn
    view.title = _title(list(runs), run_id)  # drawn, with the run's usage, by show_frames
    view.set_note(
        "the recording ends here, before the run did" if frames.final.run.phase == "running" else None
    )
    view.show_frames(frames, frames.count)


def _add_run_menu(view: LiveView, runs: dict[str, list[Event]], shown: str) -> None:
    """A ``run`` menu before the play button: picking a run replays it in the same view."""
    import ipywidgets as widgets

    options = [
        (f"{i}. {_clip(run_id)} ({_clip(_ending(events))})", run_id)
        for i, (run_id, events) in enumerate(runs.items(), 1)
    ]
    menu = widgets.Dropdown(
        options=options, value=shown, description="run", layout=widgets.Layout(width="auto")
    )
    menu.observe(lambda change: _show(view, runs, change["new"]), names="value")
    view.runs = menu
    view.controls.children = (menu, *view.controls.children)


def _ending(events: list[Event]) -> str:
    """How a run ended, for the menu: ``ok``, the hard error's variant, or ``unfinished``."""
    last = events[-1]
    if last.kind != "run_finished":
        return "unfinished"
    return "ok" if last.outcome == "ok" else str(last.error or "hard")


def _clip(text: str, limit: int = 40) -> str:
    """A menu label's text: redacted first (the labels are widget state, which a notebook may
    save; see ``loopnb.notebook._markup``), then cut, so that no part of a key is left to see."""
    from loopnb.record._redact import DEFAULT_REDACTOR  # the module's, looked up at each call

    text = DEFAULT_REDACTOR(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _where(source: EventSource) -> str:
    """``'<path>': `` for a source read from a file, else nothing."""
    path = source if isinstance(source, str | Path) else getattr(source, "path", None)
    return f"{str(path)!r}: " if isinstance(path, str | Path) else ""


def _title(run_ids: list[str], shown: str) -> str:
    """The view's title: which run of how many, when the recording holds several."""
    if len(run_ids) < 2:
        return "loopnb replay"
    return f"loopnb replay · run {run_ids.index(shown) + 1} of {len(run_ids)} in this recording"
