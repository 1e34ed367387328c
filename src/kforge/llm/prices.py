"""What a call cost, from a table of prices per million tokens (`kforge/data/prices.toml`)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from kforge.llm.messages import Usage

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens."""

    input: float
    output: float

    def cost_usd(self, usage: Usage) -> float:
        return (usage.prompt_tokens * self.input + usage.completion_tokens * self.output) / 1_000_000


@dataclass(frozen=True)
class PriceTable:
    prices: Mapping[tuple[str, str], Price] = field(default_factory=dict)

    def price_of(self, provider: str, *models: str) -> Price | None:
        """The price of the first of `models` that has one (say, the name asked for, then the one served)."""
        for model in models:
            if (provider, model) in self.prices:
                return self.prices[(provider, model)]
        return None

    def cost_usd(self, provider: str, models: tuple[str, ...], usage: Usage | None) -> float | None:
        """None when the usage is unknown or no model has a price: an unknown cost is never reported as 0."""
        price = self.price_of(provider, *models)
        return price.cost_usd(usage) if price is not None and usage is not None else None


def load_prices(extra_file: Path | None = None) -> PriceTable:
    """The packaged price table, with the entries of `extra_file` (same format) overriding it."""
    text = resources.files("kforge").joinpath("data/prices.toml").read_text()
    prices = _parse(text, "kforge/data/prices.toml")
    if extra_file is not None:
        prices.update(_parse(extra_file.read_text(), str(extra_file)))
    return PriceTable(prices)


def _parse(text: str, where: str) -> dict[tuple[str, str], Price]:
    try:
        data = tomllib.loads(text)
        return {
            (provider, model): Price(input=float(p["input"]), output=float(p["output"]))
            for provider, models in data.items()
            for model, p in models.items()
        }
    except (tomllib.TOMLDecodeError, KeyError, TypeError, ValueError, AttributeError) as err:
        raise ValueError(
            f"{where}: cannot read prices ({err}); expected [provider] tables of"
            ' "model" = { input = USD per Mtok, output = USD per Mtok }'
        ) from None
