"""``LiveView``: one ipywidgets widget with the four panes, fed by events at a bounded rate.

The view is an observer (``engine.subscribe(view)``). The engine's thread folds each turn's events
into the ``ViewModel`` as the turn ends (a redraw folds what it finds waiting of the turn going
on); a painter thread (see ``loopnb.notebook._pacing``) redraws at most ``max_fps`` times a second
while something changed, and the final state is drawn when the run ends, before ``run()`` returns:
it has the run's last events to fold, nothing more. A redraw sets a handful of ``HTML`` values
under ``hold_sync`` (only those that changed): the decision flow, the recovery gauge and the
timeline are inline SVG drawn by ``loopnb.notebook._svg``, so the first view needs no plotly. A
saved notebook keeps the last values, and ``_repr_mimebundle_`` carries a script-free ``text/html``
picture for GitHub and nbviewer. Both are redacted as every export is: every pane is ``Html``
(``loopnb.notebook._html``), whose escaping redacts before it escapes, so the panes show a key as
``[REDACTED]`` while ``state`` and ``model`` keep exactly what the model read. (Redacting the
events as they come, as the report does, would cost each turn more than the run itself.)
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable
from typing import Any, Literal, Protocol

import ipywidgets as widgets

from loopnb.analysis._usage import UsageTotals, dollars
from loopnb.engine._events import Event
from loopnb.notebook._html import Html
from loopnb.notebook._layout import MUTED
from loopnb.notebook._markup import status_html, summary_html
from loopnb.notebook._pacing import Page, Painter, check_fps
from loopnb.notebook._panes import PANES, Pane, checked_panes, drawn, folded
from loopnb.notebook._state import ViewState, at_turn
from loopnb.notebook._svg import SVG_STYLE
from loopnb.notebook._viewmodel import HANDLED, ViewModel

_VIEW_STYLE = Html(
    ".loopnb-view .loopnb-gauge text{font-size:13px}.loopnb-view .widget-html-content{min-width:0}"
)
"""The gauge's words at the panes' text size (``_markup``'s 13 px); a pane's content no wider
than its pane (a flex item would grow to its widest table, over the pane beside it)."""
_BUTTONS = (("Pause", "❚❚"), ("Step", "▶\ufe0e❚"), ("Resume", "▶\ufe0e"), ("Stop", "■"))
"""The control buttons and their glyphs, as text (U+FE0E: not as emoji). An ipywidgets ``icon``
is a Font Awesome name, a font Voila's page asks a CDN for: nothing in the view needs the network."""


_TURNS_END = frozenset({"turn_finished", "run_started", "run_finished"})
"""The events after which the view folds what came: a turn's end, a run's start and end."""


class Controls(Protocol):
    """What the Pause / Step / Resume / Stop buttons drive (a background run)."""

    def pause(self) -> None: ...
    def step(self) -> None: ...
    def resume(self) -> None: ...
    def stop(self) -> None: ...


class LiveView:
    """The live view of a run: decision flow, recovery gauge, breaker board, turn timeline.

    Use it as an observer (``engine.subscribe(view)``), or let ``NotebookRunner`` do it. It
    redraws at most ``max_fps`` times a second, first after ``first_frame`` seconds (a run over
    sooner is drawn once, when it ends). In ``mode="replay"`` the slider is the position in the
    run (see ``loopnb.replay``); in ``mode="live"`` it picks the turn to inspect and follows the
    newest turn until you move it.
    """

    def __init__(
        self,
        *,
        max_fps: float = 10.0,
        first_frame: float = 0.25,
        mode: Literal["live", "replay"] = "live",
        controls: Controls | None = None,
        title: str = "loopnb",
        panes: Iterable[Pane] = (),
    ) -> None:
        check_fps("LiveView", max_fps)
        self.panes: tuple[Pane, ...] = (*PANES, *checked_panes(panes, "LiveView"))
        """Every pane the view draws: loopnb's own five, then yours (``panes=``), in that order."""
        self._own = self.panes[len(PANES) :]
        self._own_states = folded(self._own, ())
        self.mode = mode
        self.interval = 1.0 / max_fps
        self.first_frame = first_frame
        self._model = ViewModel()
        self._pending: list[Event] = []  # events in, not yet folded (their turn has not ended)
        self.redraws = 0
        self.finished = False
        self.note: str | None = None
        self.paused: int | None = None  # paused after this many turns (the status pill says so)
        self._lock = threading.RLock()  # guards the model and folding into it (painter vs readers)
        self._draw_lock = threading.RLock()  # one redraw at a time
        self._painter: Painter | None = None
        self._follow = True
        self._drawing = False
        self._state = ViewState()  # the state drawn from; ``_shown`` what the panes show of it
        self._shown = self._state
        self._on_finish: list[Callable[[LiveView], None]] = []
        self._frames: Callable[[int], ViewState] | None = None

        self.title = title  # often a task or a file name; the header adds the tokens and cost so far
        self.header = _html_widget(header_html(title, self._state.usage))
        style = Html("<style>{}{}</style>").format(SVG_STYLE, _VIEW_STYLE)  # the panes' SVG classes
        self._style = _html_widget(style)
        self.pane_widgets: dict[str, widgets.HTML] = {}
        """Each pane's widget, by the pane's name."""
        for pane, state in zip(self.panes, self._pane_states(), strict=True):
            shown = _html_widget(drawn(pane, state, self._state, None), width=getattr(pane, "width", "100%"))
            shown.add_class(f"loopnb-pane-{pane.name}")
            self.pane_widgets[pane.name] = shown
        self.flow, self.timeline, self.gauge, self.board, self.inspector = (
            self.pane_widgets[p.name] for p in PANES
        )
        self.status = _html_widget(status_html(self._state))
        self.slider = widgets.IntSlider(
            value=0, min=0, max=0, description="turn", continuous_update=True,
            layout=widgets.Layout(width="60%"),
        )  # fmt: skip
        self.slider.observe(self._on_slider, names="value")
        self.buttons: dict[str, widgets.Button] = {}
        self.play: widgets.Play | None = None
        self.runs: widgets.Dropdown | None = None  # replay of a recording of several runs: which one
        bar: list[widgets.Widget] = []
        if controls is not None:
            actions = (controls.pause, controls.step, controls.resume, controls.stop)
            for (name, glyph), action in zip(_BUTTONS, actions, strict=True):
                button = widgets.Button(
                    description=f"{glyph} {name}", tooltip=name, layout=widgets.Layout(width="96px")
                )
                button.on_click(_clicked(action))
                self.buttons[name] = button
                bar.append(button)
        if mode == "replay":
            self.play = widgets.Play(value=0, min=0, max=0, interval=300, description="play")
            widgets.jslink((self.play, "value"), (self.slider, "value"))
            bar.append(self.play)
        bar.append(self.slider)
        self.controls = widgets.HBox(bar)
        self._page = Page(on_select=self.select)  # a click on a timeline mark selects its turn
        self.widget = widgets.VBox(
            [
                widgets.VBox([self._style, self.header, self.status]),
                self.flow,
                widgets.HBox([self.timeline, _spacer(), self.gauge]),
                self.controls,
                widgets.HBox([self.board, _spacer(), self.inspector]),
                *(self.pane_widgets[pane.name] for pane in self._own),
                self._page,
            ],
            layout=widgets.Layout(width="100%"),
        )
        self.widget.add_class("loopnb-view")

    # -- observer ---------------------------------------------------------------------------------

    def __call__(self, event: Event) -> None:
        """Take one event in; redraw soon (or now, when the run ended).

        The events of a turn are folded as it ends (one lock a turn, not one an event), and so is
        whatever a redraw finds waiting: the state the panes are drawn from keeps up with the
        run, and a redraw (at most ``max_fps`` times a second, and the final one) only draws it.
        """
        kind = event.kind
        if kind not in HANDLED and not self._own:  # your panes see every event; loopnb's, these
            return
        self._pending.append(event)
        if kind in _TURNS_END:
            with self._lock:
                self._catch_up()
        painter = self._painter
        if painter is not None and kind != "run_finished":
            painter.poke()
            return
        if kind == "run_finished":
            self.finish()
        elif kind == "run_started":
            self.finished = False
            self._painter = Painter(
                self._paint,
                self.interval,
                first=self.first_frame,
                settle=self._page.settle,
                release=self._page.release,
            )
            self._painter.poke()

    def finish(self) -> None:
        """Stop the painter and draw the final state (the widgets' saved state is its values)."""
        painter, self._painter = self._painter, None
        if painter is not None:
            painter.stop()
        self.draw()
        self.finished = True
        for callback in list(self._on_finish):
            callback(self)

    @property
    def model(self) -> ViewModel:
        """The view's fold of the events, every event taken in so far folded in."""
        with self._lock:
            self._catch_up()
        return self._model

    def _catch_up(self) -> None:
        """Fold the waiting events in, in the order they came (the caller holds ``_lock``)."""
        pending = self._pending
        if pending:
            count = len(pending)  # the engine may append more meanwhile: they wait their turn
            batch = pending[:count]
            del pending[:count]
            self._model.extend(batch)
            if self._own:
                self.fold_panes(batch, keep=True)

    def fold_panes(self, events: Iterable[Event], *, keep: bool = False) -> None:
        """Fold ``events`` into your panes (after what they hold when ``keep``, else from the
        start, as replay does for the run it shows)."""
        self._own_states = folded(self._own, events, self._own_states if keep else None)

    def _pane_states(self) -> list[Any]:
        """The state each pane draws: ``None`` for loopnb's own (they draw the view model's)."""
        return [*(None for _ in PANES), *self._own_states]

    def on_finish(self, callback: Callable[[LiveView], None]) -> None:
        """Call ``callback(view)`` once the final state is drawn."""
        self._on_finish.append(callback)

    # -- drawing ------------------------------------------------------------------------------

    @property
    def state(self) -> ViewState:
        """What the panes show, as last drawn (``at_turn`` of the state for the selected turn)."""
        return self._shown

    def set_note(self, note: str | None, *, paused: int | None = None) -> None:
        """A word beside the status (``stopping``), drawn at once; ``paused``: the run is held
        after that many turns (the pill says so)."""
        self.note, self.paused = note, paused
        with self._draw_lock:
            _set(self.status, self._status_html(self._shown))

    def _status_html(self, shown: ViewState) -> Html:
        return status_html(shown, self.note, replay=self.mode == "replay", paused=self.paused)

    def draw(self, state: ViewState | None = None, selected: int | None = None) -> None:
        """Redraw from the model (or from ``state``, as replay does)."""
        with self._draw_lock:
            if state is None:
                with self._lock:
                    self._catch_up()
                    state = self._model.snapshot()
            self._state = state
            last_turn = state.turns[-1].turn if state.turns else 0
            if selected is None:
                selected = last_turn if self._follow or self.mode == "replay" else self.slider.value
            self._shown = shown = at_turn(state, selected)
            self._drawing = True
            try:
                with contextlib.ExitStack() as stack:
                    for w in (*self.pane_widgets.values(), self.header, self.status):
                        stack.enter_context(w.hold_sync())
                    _set(self.header, header_html(self.title, shown.usage))
                    for pane, pane_state in zip(self.panes, self._pane_states(), strict=True):
                        _set(self.pane_widgets[pane.name], drawn(pane, pane_state, shown, selected))
                    _set(self.status, self._status_html(shown))
                # the slider's max, then its value, each in its own message: a front end given
                # both at once may clamp the value to the old max (and show 0)
                if self.mode == "live":
                    if self.slider.max != last_turn:
                        self.slider.max = last_turn
                    if self._follow and self.slider.value != last_turn:
                        self.slider.value = last_turn
                if self.play is not None and self.play.max != self.slider.max:
                    self.play.max = self.slider.max
            finally:
                self._drawing = False
            self.redraws += 1

    def _paint(self) -> None:
        """The painter's redraw: draw, then ask the page to say when it has caught up."""
        self.draw()
        self._page.ping()

    # -- selection ------------------------------------------------------------------------------

    def select(self, turn: int) -> None:
        """Show ``turn`` (live: in the inspector; replay: the whole view at that turn)."""
        self.slider.value = max(self.slider.min, min(turn, self.slider.max))

    def _on_slider(self, change: dict[str, Any]) -> None:
        if self._drawing:
            return
        value = int(change["new"])
        if self.mode == "replay" and self._frames is not None:
            self.draw(self._frames(value), selected=value)
            return
        self._follow = value >= self.slider.max
        with self._draw_lock:
            state = self._state
            self.draw(state, selected=state.newest if self._follow else value)

    def show_frames(self, frames: Callable[[int], ViewState], count: int) -> None:
        """Replay: frames 0..``count`` from ``frames(k)``; shows the last one."""
        self._frames = frames
        self._drawing = True
        try:
            self.slider.max = count  # every max first: jslink would clamp the play to its old one
            if self.play is not None:
                self.play.max = count
            self.slider.value = count
            if self.play is not None:
                self.play.value = count
        finally:
            self._drawing = False
        self.draw(frames(count), selected=count)
        self.finished = True

    # -- display --------------------------------------------------------------------------------

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = dict(self.widget._repr_mimebundle_(**kwargs) or {})
        bundle["text/html"] = str(summary_html(self._shown))
        return bundle

    def close(self) -> None:
        """Stop the painter and close every widget."""
        painter, self._painter = self._painter, None
        if painter is not None:
            painter.stop()
        for child in (
            *self.pane_widgets.values(),
            self.status,
            self.slider,
            self.header,
            self._style,
            self._page,
        ):
            child.close()
        for button in self.buttons.values():
            button.close()
        for extra in (self.play, self.runs):
            if extra is not None:
                extra.close()
        self.controls.close()
        self.widget.close()

    def __repr__(self) -> str:
        run = self._state.run
        return f"LiveView(run={run.run_id!r}, phase={run.phase}, turns={len(self._state.turns)})"


def header_html(title: str, usage: UsageTotals) -> Html:
    """The view's title, then the tokens the models reported so far and, when every answered
    turn has a price, their cost (``Audit.usage``'s totals, turn by turn); the title alone when
    no model reported tokens."""
    head = Html("<b>{}</b>").format(title)
    if not usage.tokens:
        return head
    sides = ((usage.input_tokens, "in"), (usage.output_tokens, "out"))
    words = [f"{n:,} tokens {side}" for n, side in sides if n is not None]
    cost = usage.cost_usd
    if cost is not None:
        words.append(dollars(cost))
    return Html('{} <span class="loopnb-usage" style="color:{}">· {}</span>').format(
        head, MUTED, " · ".join(words)
    )


def _html_widget(value: Html, width: str | None = None) -> widgets.HTML:
    """An ``HTML`` widget showing ``value`` (as a plain string: what leaves for the front end)."""
    if width is None:
        return widgets.HTML(str(value))
    return widgets.HTML(str(value), layout=widgets.Layout(width=width))


def _set(widget: widgets.HTML, value: Html) -> None:
    if widget.value != value:
        widget.value = str(value)  # a plain string leaves for the front end


def _spacer() -> widgets.Widget:
    return widgets.Box(layout=widgets.Layout(width="2%"))


def _clicked(action: Callable[[], None]) -> Callable[[Any], None]:
    def handler(_button: Any) -> None:
        action()

    return handler
