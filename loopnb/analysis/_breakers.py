"""Breakers: the rule the live view's board and ``breaker_history`` share, and the breakers table.

``BreakerFold`` is pandas-free: it follows every breaker of a run, its state, the failures it
has counted and its cooldown, from the events (``BreakerTransitioned`` carries the count at each
transition; between them a tool's settled calls and a model's failures and replies move it, by
the engine's own rule). ``breakers_from_events`` reads the transitions and refusals off the
events; ``breakers_from_turns``, for a turns frame alone, infers them from consecutive turns'
``breaker_states``. Both give ``breaker_table`` the same (transitions, refusals, scopes).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from loopnb.engine._events import BreakerState
from loopnb.engine._invocation import BREAKER_FAILURES

if TYPE_CHECKING:
    import pandas as pd

Scope = Literal["tool", "model"]


@dataclass(slots=True)
class BreakerCount:
    """One breaker as its events come: ``passed`` lists the states it moved to this turn."""

    name: str
    scope: Scope
    state: BreakerState = "closed"
    failures: int = 0
    cooldown: float = 0.0
    opened_at: float | None = None
    passed: list[BreakerState] = field(default_factory=list)

    def cooldown_left(self, now: float) -> float | None:
        """Seconds left while open as of ``now`` (None when not open, or its opening unseen)."""
        if self.state != "open" or self.opened_at is None:
            return None
        return max(0.0, self.opened_at + self.cooldown - now)


@dataclass(frozen=True, slots=True)
class BreakerTurn:
    """A breaker as a turn ended: one row of ``breaker_history``, one cell of the board's strip."""

    turn: int
    name: str
    scope: Scope
    state: BreakerState
    failures: int
    cooldown_left: float | None
    passed: tuple[BreakerState, ...]


class BreakerFold:
    """One run's breakers (a new ``start`` starts over); each feed costs a few attribute writes.

    A tool's call counts once it is settled (its last attempt is in, recovery done): a success
    resets the count, a failure of the original call that ``BREAKER_FAILURES`` names adds one
    (a refusal or invalid arguments count nothing). A model's failure adds one, its reply resets.
    A transition's own count wins over the fold's. ``moves`` counts the changes to any breaker's
    state or count (a board drawn at a turn's end is the previous one while it stays the same).
    """

    def __init__(self) -> None:
        self.moves = 0
        self.start((), (), ())

    def start(self, models: Iterable[str], tool_breakers: Iterable[str], others: Iterable[str]) -> None:
        """A new run: its models' breakers, its tools' (``settings["tool_breakers"]``) and any
        other breaker ``RunStarted.breakers`` names (a tool's), all closed."""
        models = tuple(models)
        self.moves += 1
        self.breakers: dict[str, BreakerCount] = {}
        for name in tool_breakers:
            self.breakers[name] = BreakerCount(name, "tool")
        for name in models:
            self.breakers.setdefault(name, BreakerCount(name, "model"))
        for name in others:
            self.breakers.setdefault(name, BreakerCount(name, "tool"))
        self._models = frozenset(models)
        self._pending: tuple[str, bool, bool] | None = None  # tool, failed, counts against it

    def dispatched(self, tool: str, attempt: int, is_error: bool, producer: str | None) -> None:
        if tool not in self.breakers:
            return
        if attempt == 0:
            self.settle()
            self._pending = (tool, is_error, is_error and producer in BREAKER_FAILURES)
        elif self._pending is not None:
            self._pending = (tool, is_error, is_error and self._pending[2])

    def settle(self, drop: bool = False) -> None:
        """The pending call is over: count it (or, with ``drop``, forget it: the run ended in it)."""
        pending, self._pending = self._pending, None
        if pending is None or drop:
            return
        b = self.breakers[pending[0]]
        if not pending[1]:
            if b.failures:
                b.failures = 0
                self.moves += 1
        elif pending[2]:
            b.failures += 1
            self.moves += 1

    def transitioned(
        self, target: str, scope: Scope, state: BreakerState, failures: int, cooldown: float, at: float
    ) -> None:
        if self._pending is not None and self._pending[0] == target:
            self._pending = None  # the transition's count includes it
        else:
            self.settle()
        b = self.breakers.get(target)
        if b is None:
            b = self.breakers[target] = BreakerCount(target, scope)
        b.state, b.failures, b.cooldown = state, failures, cooldown
        b.passed.append(state)
        self.moves += 1
        if state == "open":
            b.opened_at = at
        elif state == "closed":
            b.opened_at = None

    def model_failed(self, model: str) -> None:
        self.settle()
        b = self.breakers.get(model)
        if b is None:
            b = self.breakers[model] = BreakerCount(model, "model")
        b.failures += 1
        self.moves += 1

    def model_replied(self, model: str | None) -> None:
        if self._pending is not None:
            self.settle()
        b = self.breakers.get(model) if model is not None else None
        if b is not None and b.failures:
            b.failures = 0
            self.moves += 1

    def turn_finished(
        self, turn: int, not_closed: Mapping[str, BreakerState] | None, at: float
    ) -> list[BreakerTurn]:
        """Settle the turn: one ``BreakerTurn`` per breaker (see ``end_turn``)."""
        self.end_turn(not_closed, keep_passed=True)
        rows = []
        for name, b in self.breakers.items():
            rows.append(
                BreakerTurn(turn, name, b.scope, b.state, b.failures, b.cooldown_left(at), tuple(b.passed))
            )
            b.passed.clear()
        return rows

    def end_turn(self, not_closed: Mapping[str, BreakerState] | None, keep_passed: bool = False) -> list[str]:
        """Settle the turn's last call and take the engine's word on the states at turn end
        (``TurnFinished.breakers``: the breakers not closed; None when unknown), which wins.
        Returns the breakers whose state that word changed; ``passed`` is cleared unless kept."""
        if self._pending is not None:
            self.settle()
        changed = []
        for name in not_closed or ():
            if name not in self.breakers:
                self.breakers[name] = BreakerCount(name, "model" if name in self._models else "tool")
                self.moves += 1
        for name, b in self.breakers.items():
            if b.passed and not keep_passed:
                b.passed.clear()
            state = b.state if not_closed is None else not_closed.get(name, "closed")
            if b.state != state:
                b.state = state
                if state != "open":
                    b.opened_at = None
                changed.append(name)
                self.moves += 1
        return changed


def breakers_from_events(
    events: pd.DataFrame, keys: list[str]
) -> tuple[list[tuple[str, str]], pd.Series, dict[str, str]]:
    """Transitions, refusals per tool and scopes, read off the events, runs in the order they started."""
    e = events[events["kind"].isin(["breaker_transitioned", "soft_error_returned"])]
    e = _chronological(e, keys, "at", "seq")
    tr = e[e["kind"] == "breaker_transitioned"]
    states = [(str(t), str(s)) for t, s in zip(tr["target"], tr["state"], strict=True)]
    ref = e[(e["kind"] == "soft_error_returned") & (e["producer"] == "breaker_open")]
    refusals = ref["tool"].astype(str).value_counts()
    scopes = dict(zip(tr["target"].astype(str), tr["scope"].astype(str), strict=True))
    return states, refusals, scopes


def breakers_from_turns(
    turns: pd.DataFrame, keys: list[str]
) -> tuple[list[tuple[str, str]], pd.Series, dict[str, str]]:
    """Transitions, refusals per tool and scopes, read off the turns' ``breaker_states``."""
    import pandas as pd

    transitions: list[tuple[str, str]] = []
    refused: list[str] = []
    parsed: dict[str, dict[str, str]] = {}  # a long run repeats a few texts: each is read once
    t = _chronological(turns, keys, "started_at", "turn")
    for _, run in t.groupby(keys, sort=False, observed=True):
        before: dict[str, str] = {}
        for raw, refusal, tools in zip(
            run["breaker_states"].astype(object).tolist(),
            run["producer"].eq("breaker_open").tolist(),
            run["tools"].astype(object).tolist(),
            strict=True,
        ):
            now = parsed.get(raw) if isinstance(raw, str) else {}
            if now is None:
                now = parsed[raw] = json.loads(raw)
            if now is not before:  # the same text as the turn before moved nothing
                for target, state in now.items():
                    if state != before.get(target, "closed"):
                        transitions.append((target, state))
            if refusal:
                names = str(tools).split(", ") if isinstance(tools, str) else ["?"]
                open_ = [n for n in names if "open" in (before.get(n), now.get(n))]
                refused.append((open_ or names)[0])
            before = now
    called = {n for tools in turns["tools"].dropna().unique() for n in str(tools).split(", ")}
    scopes = {target: "tool" if target in called else "model" for target, _ in transitions}
    return transitions, pd.Series(refused, dtype=object).value_counts(), scopes


def breaker_table(states: list[tuple[str, str]], refusals: pd.Series, scopes: dict[str, str]) -> pd.DataFrame:
    """One row per breaker target (see ``Audit.breakers``)."""
    import pandas as pd

    targets = list(dict.fromkeys([t for t, _ in states] + list(refusals.index)))
    rows = []
    for target in targets:
        mine = [s for t, s in states if t == target]
        rows.append(
            {
                "target": target,
                "scope": scopes.get(target),
                "trips": mine.count("open"),
                "half_opens": mine.count("half_open"),
                "closes": mine.count("closed"),
                "refusals": int(refusals.get(target, 0)),
                "last_state": mine[-1] if mine else None,
            }
        )
    breaker = pd.CategoricalDtype(["closed", "open", "half_open"])
    return pd.DataFrame(
        {
            "target": pd.array([r["target"] for r in rows], dtype="string"),
            "scope": pd.Categorical([r["scope"] for r in rows], categories=["tool", "model"]),
            "trips": pd.array([r["trips"] for r in rows], dtype="Int64"),
            "half_opens": pd.array([r["half_opens"] for r in rows], dtype="Int64"),
            "closes": pd.array([r["closes"] for r in rows], dtype="Int64"),
            "refusals": pd.array([r["refusals"] for r in rows], dtype="Int64"),
            "last_state": pd.Categorical([r["last_state"] for r in rows], dtype=breaker),
        }
    )


def _chronological(df: pd.DataFrame, keys: list[str], time: str, order: str) -> pd.DataFrame:
    """``df`` run by run, runs in the order they started (by ``time``), each in ``order``."""
    if not len(df):
        return df
    started = df.groupby(keys, sort=False, observed=True)[time].transform("min")
    return (
        df.assign(_started=started)
        .sort_values(["_started", *keys, order], kind="stable")
        .drop(columns="_started")
    )
