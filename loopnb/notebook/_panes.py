"""What a pane of the view is: ``Pane``, and the five the view draws of its own.

A pane folds the run's events into a state of its own (``start``, then ``fold`` per event), draws
that state as HTML (``draw``, told the view's state and the selected turn too), and names the
public function returning the frame it is drawn from (``frame``): what you see, you can query.
loopnb's own panes (the decision flow, the turn timeline, the recovery gauge, the breaker board and
the inspector) draw from the view model's fold (``ViewState``), so their own fold is nothing.

A pane of your own goes to the view as ``LiveView(panes=[...])`` (or ``NotebookRunner``,
``replay``, ``to_html``, ``watch``): the live view folds each event into it as the event is
taken in and draws it at the view's bounded rate, below loopnb's panes; replay folds the run
once and draws it at each selected turn; the report draws it under each run. What ``draw``
returns is HTML only when it is markupsafe's ``Markup`` (``Html`` is one): a plain string is text, and is
escaped (and redacted) like any text from a run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

from markupsafe import Markup

from loopnb.engine._events import Event
from loopnb.notebook._html import Html, esc
from loopnb.notebook._markup import board_html, inspector_html
from loopnb.notebook._state import ViewState
from loopnb.notebook._svg import flow_svg, gauge_of_view, gauge_svg
from loopnb.notebook._timeline import timeline_svg


@runtime_checkable
class Pane(Protocol):
    """One pane of the view: its name, its frame, its fold and its drawing.

    ``name`` (letters, digits, ``-``, ``_``) becomes the CSS class ``loopnb-pane-<name>`` of its
    widget; ``frame`` names the public function that returns its data as a frame (e.g.
    ``"loopnb.flow_counts"``); ``start()`` is the state before any event, ``fold(state, event)``
    the state after one more (return it: a pane may keep an immutable state); ``draw(state, view,
    selected)`` the HTML for that state, where ``view`` is the view model's ``ViewState`` and
    ``selected`` the turn the slider selects (``None`` for none).
    """

    name: str
    frame: str

    def start(self) -> Any: ...

    def fold(self, state: Any, event: Event) -> Any: ...

    def draw(self, state: Any, view: ViewState, selected: int | None) -> Any: ...


class ViewPane:
    """A pane drawn from the view model's fold alone: no state of its own to keep."""

    name = ""
    frame = ""
    width = "100%"
    """Its share of the view's row (loopnb's own panes sit two to a row)."""

    def start(self) -> None:
        return None

    def fold(self, state: None, event: Event) -> None:
        return None

    def draw(self, state: None, view: ViewState, selected: int | None) -> Html:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<loopnb pane {self.name!r}: drawn from {self.frame}>"


class FlowPane(ViewPane):
    """The decision flow: the specification's flowchart, each arrow counting what happened."""

    name, frame, width = "flow", "loopnb.flow_counts", "100%"

    def draw(self, state: None, view: ViewState, selected: int | None) -> Html:
        return flow_svg(view)


class TimelinePane(ViewPane):
    """The turn timeline: one mark per turn, coloured by channel, the selected one ringed."""

    name, frame, width = "timeline", "loopnb.Recording.turns", "64%"

    def draw(self, state: None, view: ViewState, selected: int | None) -> Html:
        return timeline_svg(view.turns, None, selected=selected, simulated=view.run.simulated)


class GaugePane(ViewPane):
    """The recovery gauge: the selected turn's call, its retries against the ceiling."""

    name, frame, width = "gauge", "loopnb.recovery_attempts", "34%"

    def draw(self, state: None, view: ViewState, selected: int | None) -> Html:
        gauge = gauge_of_view(view, selected)
        return gauge_svg(gauge, gauge.lines())


class BoardPane(ViewPane):
    """The breaker board: every tool's and model's breaker, with its history."""

    name, frame, width = "board", "loopnb.breaker_history", "40%"

    def draw(self, state: None, view: ViewState, selected: int | None) -> Html:
        return board_html(view)


class InspectorPane(ViewPane):
    """The inspector: exactly what the model read on the selected turn."""

    name, frame, width = "inspector", "loopnb.Recording.turns", "58%"

    def draw(self, state: None, view: ViewState, selected: int | None) -> Html:
        return inspector_html(view.turn(selected) if selected else None)


PANES: tuple[ViewPane, ...] = (FlowPane(), TimelinePane(), GaugePane(), BoardPane(), InspectorPane())
"""loopnb's own panes, in the order the view lays them out."""

_MEMBERS = ("name", "frame", "start", "fold", "draw")


def checked_panes(panes: Iterable[Any], where: str) -> tuple[Pane, ...]:
    """``panes`` as given to ``where``, each checked to be a ``Pane`` with a usable, unique name."""
    if isinstance(panes, str | bytes) or not isinstance(panes, Iterable):
        raise TypeError(f"{where}: panes must be a list of panes, got {panes!r:.80}")
    out: list[Pane] = []
    taken = {p.name for p in PANES}
    for pane in panes:
        missing = [m for m in _MEMBERS if not hasattr(pane, m)]
        if missing:
            raise TypeError(
                f"{where}: {pane!r:.80} is not a pane: it lacks {', '.join(missing)} (a pane has name, "
                "frame, start(), fold(state, event) and draw(state, view, selected))"
            )
        name = pane.name
        if not isinstance(name, str) or not name or not all(c.isalnum() or c in "-_" for c in name):
            raise ValueError(f"{where}: a pane's name must be letters, digits, - or _; got {name!r:.60}")
        if name in taken:
            raise ValueError(f"{where}: there is a pane called {name!r} already; give yours another name")
        taken.add(name)
        out.append(pane)
    return tuple(out)


def folded(panes: Sequence[Pane], events: Iterable[Event], states: list[Any] | None = None) -> list[Any]:
    """Each pane's state after ``events`` (folded onto ``states``, else from each pane's start).
    A pane whose ``fold`` raises keeps its state and misses that event: it cannot break the view."""
    states = [pane.start() for pane in panes] if states is None else states
    for event in events:
        for k, pane in enumerate(panes):
            try:
                states[k] = pane.fold(states[k], event)
            except Exception:
                continue
    return states


def drawn(pane: Pane, state: Any, view: ViewState, selected: int | None) -> Html:
    """What ``pane`` draws, as HTML: a string that is not ``Html`` is text, escaped (and redacted);
    a pane whose drawing raises shows what it raised instead of its picture (the view goes on)."""
    try:
        picture = pane.draw(state, view, selected)
    except Exception as exc:  # a user's pane must not break the view
        return Html('<div class="loopnb-pane-error">pane {}: {}: {}</div>').format(
            esc(pane.name, 60), type(exc).__name__, esc(str(exc), 300)
        )
    return Html(picture) if isinstance(picture, Markup) else esc(str(picture))
