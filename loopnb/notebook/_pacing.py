"""Pacing the live view's redraws: a painter thread, and the page's word on what it has drawn.

``Painter`` redraws at most once per interval while something changed, resting in proportion to
what a redraw cost; ``Page`` is the view's invisible widget that sizes plotly and tells the
painter when the browser has caught up, so that a slow page gets fewer frames instead of a
growing queue. ``check_fps`` refuses a frame rate that would lift the bound on redraws.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import anywidget


class Painter:
    """A thread that calls ``draw`` when poked, at most once per ``interval`` seconds.

    The first redraw waits ``first`` seconds (a run over by then is drawn once, at its end), and
    after each redraw it rests ``busy`` times the CPU that redraw took, so that redrawing never
    takes more than about 1 / (1 + ``busy``) of the time, whatever the turn rate. Before the next
    redraw it calls ``settle(stop)``, which waits for the page to catch up (see ``Page``).
    """

    def __init__(
        self,
        draw: Callable[[], None],
        interval: float,
        *,
        first: float = 0.0,
        busy: float = 4.0,
        settle: Callable[[threading.Event], None] | None = None,
        release: Callable[[], None] | None = None,
    ) -> None:
        self._draw = draw
        self._interval = interval
        self._first = max(first, interval)
        self._busy = busy
        self._settle = settle
        self._release = release
        self._wake = threading.Event()
        self._poked = False  # a plain flag in front of the Event: poking costs one attribute read
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="loopnb-painter", daemon=True)
        self._thread.start()

    def poke(self) -> None:
        if not self._poked:
            self._poked = True
            self._wake.set()

    def _loop(self) -> None:
        if self._stop.wait(self._first):  # a run over before its first frame is drawn once, at the end
            return
        while True:
            self._wake.wait()
            if self._stop.is_set():
                return
            self._wake.clear()
            self._poked = False  # after the clear: a poke from now on wakes the next round
            started = time.thread_time()  # this thread's CPU: the run's share of the GIL is not ours
            self._draw()
            rest = max(self._interval, self._busy * (time.thread_time() - started))
            if self._stop.wait(rest):
                return
            if self._settle is not None:
                self._settle(self._stop)

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._release is not None:
            self._release()
        if threading.current_thread() is not self._thread:
            self._thread.join()


class Page(anywidget.AnyWidget):
    """The view's link to the page it is shown on: sizes plotly, and says when a frame is drawn.

    Sizing: plotly's widget draws at its default 700 px when it renders before its element is
    attached (as it does under anywidget), and a ``responsive`` plot re-measures on a window
    ``resize``. This invisible widget watches the view's width and dispatches that event when it
    changes.

    Selecting: a click on one of the view's timeline marks sends ``{"select": turn}``, which
    calls ``on_select(turn)`` (the view moves its slider there).

    Pacing: after each redraw the painter sends ``{"frame": n}``; the page answers
    ``{"drawn": n}`` on its next animation frame, that is once it has applied every update sent
    before and painted. While a page answers, the painter waits for the answer before the next
    redraw, so a browser that draws slowly (a long timeline, a busy machine) gets fewer frames
    instead of a growing queue. Where no page answers (no front end, or a kernel busy running a
    cell cannot read the answers) the painter keeps its own pace. Trusted code of ours, no network.
    """

    _esm = """
    function render({ model, el }) {
      el.style.display = "none";
      const style = document.createElement("style");  // a mark says it can be clicked
      style.textContent = ".loopnb-view .loopnb-timeline .loopnb-mark[data-turn]{cursor:pointer}";
      el.appendChild(style);
      let observer = null, host = null, last = -1, tries = 0;
      const poke = () => window.dispatchEvent(new Event("resize"));
      // a click on one of the view's timeline marks selects its turn (the kernel moves the slider)
      const pick = (event) => {
        const mark = event.target.closest(".loopnb-timeline .loopnb-mark[data-turn]");
        if (mark) model.send({ select: Number(mark.dataset.turn) });
      };
      const watch = () => {
        host = el.closest(".loopnb-view");
        if (!host) {
          if (tries++ < 600) requestAnimationFrame(watch);
          return;
        }
        observer = new ResizeObserver((entries) => {
          const width = Math.round(entries[0].contentRect.width);
          if (width > 0 && width !== last) {
            last = width;
            poke();
            setTimeout(poke, 250);
          }
        });
        observer.observe(host);
        host.addEventListener("click", pick);
      };
      requestAnimationFrame(watch);
      const answer = (msg) => {
        if (msg && Number.isInteger(msg.frame)) {
          requestAnimationFrame(() => model.send({ drawn: msg.frame }));
        }
      };
      model.on("msg:custom", answer);
      return () => {
        model.off("msg:custom", answer);
        if (observer) observer.disconnect();
        if (host) host.removeEventListener("click", pick);
      };
    }
    export default { render };
    """

    def __init__(self, *, patience: float = 2.0, on_select: Callable[[int], None] | None = None) -> None:
        super().__init__()
        self.patience = patience
        self.on_select = on_select
        self.sent = 0
        self.drawn = 0
        self.answering = False  # a page answered lately: wait for it
        self._changed = threading.Condition()
        self.on_msg(self._on_msg)

    def ping(self) -> None:
        """Ask the page to say when it has drawn everything sent so far."""
        with self._changed:
            self.sent += 1
            frame = self.sent
        self.send({"frame": frame})

    def _on_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        picked = content.get("select") if isinstance(content, dict) else None
        if isinstance(picked, int) and not isinstance(picked, bool) and self.on_select is not None:
            self.on_select(picked)
        drawn = content.get("drawn") if isinstance(content, dict) else None
        if isinstance(drawn, int) and not isinstance(drawn, bool):
            with self._changed:
                self.drawn = max(self.drawn, min(drawn, self.sent))
                self.answering = True
                self._changed.notify_all()

    def settle(self, stop: threading.Event) -> None:
        """Wait until the page has drawn the last frame, if a page answers; at most ``patience``.

        A page silent for that long is not waited for again until it answers.
        """
        with self._changed:
            if not self.answering:
                return
            caught_up = self._changed.wait_for(
                lambda: self.drawn >= self.sent or stop.is_set(), timeout=self.patience
            )
            if not caught_up:
                self.answering = False

    def release(self) -> None:
        """Wake a waiting ``settle`` (its ``stop`` was set)."""
        with self._changed:
            self._changed.notify_all()


def check_fps(owner: str, max_fps: object) -> None:
    """Refuse a frame rate that is not a number > 0 (NaN would lift the bound on redraws)."""
    if isinstance(max_fps, bool) or not isinstance(max_fps, int | float):
        raise TypeError(f"{owner}: max_fps must be a number of redraws per second, got {max_fps!r}")
    if not max_fps > 0:
        raise ValueError(f"{owner}: max_fps must be > 0, got {max_fps!r}")
