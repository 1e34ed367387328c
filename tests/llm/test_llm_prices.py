"""Prices per million tokens, from the packaged table and a user's own file."""

from pathlib import Path

import pytest

from kforge.llm import Price, Usage, load_prices


def test_the_packaged_table_prices_common_models() -> None:
    prices = load_prices()
    assert prices.price_of("openai", "gpt-4o") == Price(input=2.5, output=10.0)
    assert prices.price_of("anthropic", "claude-sonnet-4-5") is not None
    assert prices.price_of("openai", "no-such-model") is None


def test_cost_is_per_million_tokens() -> None:
    price = Price(input=3.0, output=15.0)
    assert price.cost_usd(Usage(prompt_tokens=2_000, completion_tokens=1_000)) == pytest.approx(0.021)


def test_an_unpriced_model_or_unknown_usage_has_no_cost() -> None:
    prices = load_prices()
    usage = Usage(prompt_tokens=10, completion_tokens=10)
    assert prices.cost_usd("openai", ("local-llama",), usage) is None
    assert prices.cost_usd("openai", ("gpt-4o",), None) is None


def test_the_served_model_name_is_a_fallback() -> None:
    prices = load_prices()
    usage = Usage(prompt_tokens=1_000_000, completion_tokens=0)
    assert prices.cost_usd("openai", ("my-alias", "gpt-4o"), usage) == pytest.approx(2.5)


def test_a_user_file_overrides_and_extends(tmp_path: Path) -> None:
    mine = tmp_path / "prices.toml"
    mine.write_text('[openai]\n"gpt-4o" = { input = 1.0, output = 1.0 }\n"local-llama" = { input = 0, output = 0 }\n')
    prices = load_prices(mine)
    assert prices.price_of("openai", "gpt-4o") == Price(input=1.0, output=1.0)
    assert prices.price_of("openai", "local-llama") == Price(input=0.0, output=0.0)
    assert prices.price_of("anthropic", "claude-sonnet-4-5") is not None


def test_a_broken_price_file_names_itself(tmp_path: Path) -> None:
    bad = tmp_path / "prices.toml"
    bad.write_text('[openai]\n"gpt-4o" = { input = 1.0 }\n')
    with pytest.raises(ValueError, match=f"{bad}: cannot read prices"):
        load_prices(bad)
