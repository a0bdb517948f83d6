"""Token usage, latency and cost: the one rule behind ``Audit.usage()`` and the live view's header.

Each turn is priced on its own (``turn_usage``) and the turns are added up by ``UsageTotals``:
``Audit.usage()`` builds its frame from them, and the live view and the replay show the totals of
the turns so far. Both import no pandas here; ``usage_frame`` does, when a frame is asked for.

Prices come from pydantic's ``genai-prices`` package (the ``prices`` extra), from the table it
ships with: nothing here downloads prices (only a ``genai_prices.UpdatePrices`` the user starts
does). Without the package, tokens and latency are counted all the same and every cost is missing,
saying why. A turn is priced as of when it started (prices change over time). Its cost is missing
(never zero) when no model is named, when the model reported no tokens, or when the price table
does not know the model. A recorded model name is looked up as follows:

- ``provider:model`` (loopnb's ``OpenAIChatModel`` and ``AnthropicModel``, pydantic-ai): the model
  among that provider's (genai-prices knows pydantic-ai's provider names: ``google-gla`` and
  ``google-vertex`` are Google's, ``bedrock`` is AWS's); a provider it does not know, such as
  pydantic-ai's ``function`` and ``test`` models, has no price.
- ``provider:model@host`` (a model given a ``base_url``): the provider whose API is at ``host``;
  a local server or one the table does not know has no price. An ``@`` followed by something that
  is no host name (Vertex AI's ``claude-3-5-sonnet-v2@20241022``) is part of the model's name.
- ``provider/model`` (OpenRouter's and LiteLLM's names): the model among that provider's when it
  knows the provider, else the whole name as below.
- a bare name (``gpt-4o-mini``, ``claude-sonnet-4-20250514``): genai-prices picks the provider
  from the name; the test doubles' names (``scripted``, ``fallible``) are no model it knows.

Latency is wall time only: a run on a simulated clock (a ``FakeClock``, whose ``run_started``
settings say ``clock: simulated``) adds its turns and tokens, not its simulated milliseconds.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from loopnb.engine import Turn
from loopnb.engine._events import Event, RunStarted
from loopnb.record import TURNS

if TYPE_CHECKING:
    import pandas as pd

By = Literal["run", "model", "turn"]
BY: tuple[By, ...] = ("run", "model", "turn")

NOT_INSTALLED = "genai-prices is not installed (pip install 'loopnb[prices]')"
NO_MODEL = "no model named"
NO_TOKENS = "no tokens reported"


@dataclass(frozen=True, slots=True)
class Price:
    """One turn's cost in US dollars, or why it has none."""

    cost_usd: float | None = None
    priced_as: str | None = None
    """The price table's ``provider/model`` the turn was priced as."""
    source: str | None = None
    """The price table and its version: ``genai-prices 0.2.3``."""
    unpriced: str | None = None
    """Why ``cost_usd`` is missing."""


_NO_MODEL, _NO_TOKENS = Price(unpriced=NO_MODEL), Price(unpriced=NO_TOKENS)
_NOT_INSTALLED = Price(unpriced=NOT_INSTALLED)


def _host(suffix: str) -> bool:
    """Whether what follows an ``@`` in a model name is a server (``host:port``, a domain)."""
    return suffix == "localhost" or "." in suffix or ":" in suffix


def lookups(model: str) -> list[tuple[str, str | None, str | None]]:
    """The ``(model_ref, provider_id, provider_api_url)`` to try, in order, for a recorded name."""
    name, at, host = model.rpartition("@")
    if at and name and _host(host):
        return [(name.partition(":")[2] or name, None, f"https://{host}")]
    provider, colon, ref = model.partition(":")
    if colon:
        return [(ref, provider, None)] if provider and ref else []
    provider, slash, ref = model.partition("/")
    if slash and provider and ref:
        return [(ref, provider, None), (model, None, None)]
    return [(model, None, None)]


class Prices:
    """genai-prices' table, asked about each model name it lacks only once: one per frame or run
    (a table the user updates with ``genai_prices.UpdatePrices`` is seen by the next one)."""

    def __init__(self) -> None:
        self._missing: dict[str, Price] = {}
        self._module: Any = None

    def __call__(
        self, model: str | None, input_tokens: int | None, output_tokens: int | None, at: float | None
    ) -> Price:
        """The cost of one request of ``model`` started at ``at`` (epoch seconds)."""
        if model is None:
            return _NO_MODEL
        if input_tokens is None or output_tokens is None:
            return _NO_TOKENS
        missing = self._missing.get(model)
        if missing is not None:
            return missing
        gp = self._table()
        if gp is None:
            return _NOT_INSTALLED
        when = datetime.fromtimestamp(at, UTC) if at is not None and math.isfinite(at) else None
        for ref, provider, url in lookups(model):
            try:
                usage = gp.Usage(input_tokens=input_tokens, output_tokens=output_tokens)
                if url is not None:
                    calc = gp.calc_price(usage, ref, provider_api_url=url, genai_request_timestamp=when)
                else:
                    calc = gp.calc_price(usage, ref, provider_id=provider, genai_request_timestamp=when)
            except LookupError:
                continue
            except (ValueError, TypeError, ArithmeticError) as exc:
                return Price(unpriced=f"genai-prices could not price it: {exc}")
            source = f"genai-prices {gp.__version__}"
            if calc.auto_update_timestamp is not None:
                source += f" (prices updated {calc.auto_update_timestamp:%Y-%m-%d %H:%M})"
            return Price(float(calc.total_price), f"{calc.provider.id}/{calc.model.id}", source)
        price = self._missing[model] = Price(unpriced=f"genai-prices has no price for {model}")
        return price

    def _table(self) -> Any:
        """The genai_prices module, or None when it is not installed."""
        if self._module is None:
            try:
                import genai_prices
            except ImportError:
                self._module = False
            else:
                self._module = genai_prices
        return self._module or None


@dataclass(slots=True)
class TurnUsage:
    """What one turn used: its model's tokens, its wall time and its cost.

    Not frozen: one is made for each turn priced (the live view prices thousands), and a frozen
    dataclass sets each field through ``object.__setattr__``, at three times the cost.
    """

    model: str | None
    input_tokens: int | None
    output_tokens: int | None
    latency_ms: float | None
    """Wall time; missing on a simulated clock."""
    simulated: bool
    price: Price

    @property
    def answered(self) -> bool:
        """Whether a model answered (a named model, or tokens reported): a turn that costs."""
        return self.model is not None or self.input_tokens is not None or self.output_tokens is not None


def turn_usage(
    model: str | None,
    input_tokens: int | None,
    output_tokens: int | None,
    latency_ms: float | None,
    started_at: float | None,
    *,
    simulated: bool,
    prices: Prices,
) -> TurnUsage:
    """One turn's usage; ``started_at`` in epoch seconds (when it is priced as of)."""
    answered = model is not None or input_tokens is not None or output_tokens is not None
    cost = prices(model, input_tokens, output_tokens, started_at) if answered else Price()
    return TurnUsage(model, input_tokens, output_tokens, None if simulated else latency_ms, simulated, cost)


_READ: dict[str, Callable[[Turn], Any]] = {c.name: c.read for c in TURNS.columns if c.read is not None}
_model_of, _in_of, _out_of, _ms_of, _at_of = (
    _READ[name] for name in ("model", "input_tokens", "output_tokens", "latency_ms", "started_at")
)


UsageValues = tuple[str | None, int | None, int | None, float | None, float | None]
"""What a turn's usage is made of: ``turn_usage``'s model, tokens in and out, latency and start."""


def usage_values(t: Turn) -> UsageValues:
    """What ``usage_of`` reads of a finished turn, as the turns frame's columns read it."""
    return _model_of(t), _in_of(t), _out_of(t), _ms_of(t), _at_of(t)


def usage_of(t: Turn, *, simulated: bool, prices: Prices) -> TurnUsage:
    """One finished turn's usage."""
    return turn_usage(*usage_values(t), simulated=simulated, prices=prices)


def _plus(total: Any, value: Any) -> Any:
    return total if value is None else value if total is None else total + value


def _with(seen: tuple[str, ...], value: str | None) -> tuple[str, ...]:
    return seen if value is None or value in seen else (*seen, value)


@dataclass(frozen=True, slots=True)
class UsageTotals:
    """Turns added up: ``cost_usd`` is known only when every turn a model answered was priced."""

    turns: int = 0
    answered: int = 0
    priced: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    latency_ms: float | None = None
    spent_usd: float | None = None
    """The priced turns' costs added up (a part of the cost when some turns have none)."""
    models: tuple[str, ...] = ()
    priced_as: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    unpriced: tuple[str, ...] = ()
    simulated: bool = False

    def plus(self, u: TurnUsage) -> UsageTotals:
        """These totals with one more turn."""
        return self.sum_of((u,))

    def sum_of(self, usages: Iterable[TurnUsage]) -> UsageTotals:
        """These totals with ``usages``' turns added, one at a time (one object made, not one
        per turn: the live view adds up thousands)."""
        turns, answered, priced, simulated = self.turns, self.answered, self.priced, self.simulated
        inp, out, ms, spent = self.input_tokens, self.output_tokens, self.latency_ms, self.spent_usd
        models, priced_as, sources, unpriced = self.models, self.priced_as, self.sources, self.unpriced
        model: str | None = None
        price: Price | None = None
        for u in usages:
            p = u.price
            turns += 1
            answered += u.answered
            priced += p.cost_usd is not None
            inp, out = _plus(inp, u.input_tokens), _plus(out, u.output_tokens)
            ms, spent = _plus(ms, u.latency_ms), _plus(spent, p.cost_usd)
            # a name or a price seen just before adds nothing (most turns: the same model, the same price)
            if u.model is not model:
                models, model = _with(models, u.model), u.model
            if p is not price:
                priced_as, sources, unpriced = (
                    _with(priced_as, p.priced_as), _with(sources, p.source), _with(unpriced, p.unpriced)
                )  # fmt: skip
                price = p
            simulated = simulated or u.simulated
        return UsageTotals(
            turns, answered, priced, inp, out, ms, spent, models, priced_as, sources, unpriced, simulated
        )

    @property
    def cost_usd(self) -> float | None:
        """The cost, when every answered turn has one; else missing (never a part taken for all)."""
        return self.spent_usd if self.answered and self.priced == self.answered else None

    @property
    def tokens(self) -> bool:
        """Whether any turn reported tokens."""
        return self.input_tokens is not None or self.output_tokens is not None


class UsageLedger:
    """One run's turns and the totals of any first ``k`` of them, by ``UsageTotals``' rule.

    ``append`` takes the run's next turn: it keeps only its ``usage_values`` (plain values, which
    CPython's cyclic garbage collector does not walk: the live view keeps a ledger of every turn
    of a run), and every ``EVERY`` turns prices the last ``EVERY`` in one go for a checkpoint (the
    live view appends a turn as it ends, on the engine's thread). ``upto(k)`` adds up from the
    nearest checkpoint, pricing those turns again, so that reading the totals costs at most
    ``EVERY`` turns however long the run. ``append`` is called by one thread at a time; ``upto``
    reads only what ``append`` has finished and may run beside it.
    """

    EVERY = 256
    __slots__ = ("_marks", "_prices", "_simulated", "_values")

    def __init__(self, *, simulated: bool = False, prices: Prices | None = None) -> None:
        self._simulated = simulated
        self._prices = prices if prices is not None else Prices()
        self._values: list[UsageValues] = []  # each turn's usage_values, in order
        self._marks: list[UsageTotals] = [UsageTotals()]  # the first i * EVERY turns' totals

    def __len__(self) -> int:
        return len(self._values)

    def _sum(self, total: UsageTotals, values: Iterable[UsageValues]) -> UsageTotals:
        simulated, prices = self._simulated, self._prices
        return total.sum_of(turn_usage(*v, simulated=simulated, prices=prices) for v in values)

    def append(self, turn: Turn) -> None:
        """Take the run's next finished turn."""
        known, every = self._values, self.EVERY
        known.append(usage_values(turn))
        if len(known) % every == 0:  # a checkpoint: the marks are complete before it counts
            self._marks.append(self._sum(self._marks[-1], known[-every:]))

    def add(self, turns: Iterable[Turn]) -> UsageTotals:
        """Take ``turns`` (the run's next ones) and return the totals of every turn so far."""
        for turn in turns:
            self.append(turn)
        return self.upto(len(self))

    def upto(self, count: int) -> UsageTotals:
        """The totals of the run's first ``count`` turns (of those added so far)."""
        count = max(0, min(count, len(self)))
        mark = min(count // self.EVERY, len(self._marks) - 1)
        return self._sum(self._marks[mark], self._values[mark * self.EVERY : count])


def dollars(value: float) -> str:
    """A cost as text, to two significant figures below a cent: ``$1.23``, ``$0.0035``."""
    if value < 0:
        return f"-{dollars(-value)}"
    if value == 0:
        return "$0"
    if value >= 0.01:
        return f"${value:,.2f}"
    places = -math.floor(math.log10(value)) + 1
    return f"${value:.{places}f}"


def simulated_runs(events: Iterable[Event]) -> list[str]:
    """The runs whose ``RunStarted`` says they ran on a simulated clock (a ``FakeClock``)."""
    return [e.run_id for e in events if isinstance(e, RunStarted) and e.settings.get("clock") == "simulated"]


# -- the frame ----------------------------------------------------------------------------------


def on_wall(frame: pd.DataFrame, keys: Sequence[str], simulated: frozenset[tuple[str, ...]]) -> pd.Series:
    """Which rows of ``frame`` (turns or events) belong to runs on the wall clock."""
    import pandas as pd

    if not simulated:
        return pd.Series(True, index=frame.index)
    runs = frame[list(keys)].astype(str).itertuples(index=False, name=None)
    return pd.Series([run not in simulated for run in runs], index=frame.index, dtype=bool)


_RUN = ("models", "turns", "input_tokens", "output_tokens", "latency_ms", "clock", "cost_usd", "priced_turns")
_MODEL = ("model", "runs", "turns", "input_tokens", "output_tokens", "latency_ms", "cost_usd", "priced_turns")
_TURN = ("turn", "model", "input_tokens", "output_tokens", "latency_ms", "clock", "cost_usd")
_TAIL = ("priced_as", "price_source", "unpriced")
_DTYPES = {
    "models": "string", "model": "string", "clock": "string", "priced_as": "string",
    "price_source": "string", "unpriced": "string", "latency_ms": "Float64", "cost_usd": "Float64",
}  # fmt: skip


def _column(turns: pd.DataFrame, name: str, kind: type) -> list[Any]:
    """A column as plain Python values of ``kind``, missing ones as None."""
    column = turns[name]
    present = column.notna().to_numpy()
    return [kind(v) if ok else None for v, ok in zip(column.astype(object).to_numpy(), present, strict=True)]


def turn_usages(
    turns: pd.DataFrame, keys: Sequence[str], simulated: frozenset[tuple[str, ...]]
) -> list[tuple[tuple[str, ...], int, TurnUsage]]:
    """Every turn of a turns frame as ``(run key, turn, TurnUsage)``, in the frame's order."""
    started = turns["started_at"]
    at = [s.timestamp() if ok else None for s, ok in zip(started, started.notna().to_numpy(), strict=True)]
    runs = list(turns[list(keys)].astype(str).itertuples(index=False, name=None))
    rows = zip(
        runs,
        _column(turns, "turn", int),
        _column(turns, "model", str),
        _column(turns, "input_tokens", int),
        _column(turns, "output_tokens", int),
        _column(turns, "latency_ms", float),
        at,
        strict=True,
    )
    prices = Prices()
    return [
        (run, turn, turn_usage(model, inp, out, ms, when, simulated=run in simulated, prices=prices))
        for run, turn, model, inp, out, ms, when in rows
    ]


def usage_frame(
    turns: pd.DataFrame, keys: Sequence[str], simulated: frozenset[tuple[str, ...]], by: str
) -> pd.DataFrame:
    """``Audit.usage(by)``'s frame (``Audit.usage`` documents its columns)."""
    import pandas as pd

    if by not in BY:
        raise ValueError(f"usage(by={by!r}): by is one of {', '.join(map(repr, BY))}")
    usages = turn_usages(turns, keys, simulated)
    rows: list[dict[str, Any]] = []
    if by == "turn":
        for run, turn, u in usages:
            p = u.price
            clock = "simulated" if u.simulated else "wall"
            values = (turn, u.model, u.input_tokens, u.output_tokens, u.latency_ms, clock, p.cost_usd)
            rows.append(
                {**dict(zip(keys, run, strict=True)), **dict(zip(_TURN, values, strict=True)),
                 "priced_as": p.priced_as, "price_source": p.source, "unpriced": p.unpriced}
            )  # fmt: skip
        columns = (*keys, *_TURN, *_TAIL)
    else:
        groups: dict[Any, UsageTotals] = {}
        runs: dict[Any, set[tuple[str, ...]]] = {}
        for run, _turn, u in usages:
            if by == "model" and not u.answered:
                continue  # no model answered: nothing to put down to one
            key = run if by == "run" else u.model
            groups[key] = groups.get(key, UsageTotals()).plus(u)
            runs.setdefault(key, set()).add(run)
        order = list(groups) if by == "run" else sorted(groups, key=lambda m: (m is None, m or ""))
        for key in order:
            t = groups[key]
            head = dict(zip(keys, key, strict=True)) if by == "run" else {"model": key}
            rows.append(
                {**head, "runs": len(runs[key]), "models": ", ".join(t.models) or None, "turns": t.turns,
                 "input_tokens": t.input_tokens, "output_tokens": t.output_tokens,
                 "latency_ms": t.latency_ms, "clock": "simulated" if t.simulated else "wall",
                 "cost_usd": t.cost_usd, "priced_turns": t.priced,
                 "priced_as": ", ".join(t.priced_as) or None, "price_source": "; ".join(t.sources) or None,
                 "unpriced": "; ".join(t.unpriced) or None}
            )  # fmt: skip
        columns = (*keys, *_RUN, "price_source", "unpriced") if by == "run" else (*_MODEL, *_TAIL)
    data = {
        c: pd.array([r.get(c) for r in rows], dtype=_DTYPES.get(c, "string" if c in keys else "Int64"))  # type: ignore[call-overload]
        for c in columns
    }
    return pd.DataFrame(data)
