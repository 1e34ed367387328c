"""Choosing a model by the PROVIDER:MODEL name a user types."""

import pytest

from kforge.llm import UnknownProvider, make_chat_model, parse_model_name
from kforge.llm.anthropic_chat import AnthropicChatModel
from kforge.llm.openai_chat import OpenAIChatModel


def test_names_split_at_the_first_colon() -> None:
    assert parse_model_name("openai:gpt-4o") == ("openai", "gpt-4o")
    assert parse_model_name("anthropic:claude-sonnet-4-5") == ("anthropic", "claude-sonnet-4-5")
    assert parse_model_name("openai:qwen2.5-coder:32b") == ("openai", "qwen2.5-coder:32b")  # Ollama tags


@pytest.mark.parametrize("name", ["gpt-4o", "openai:", "mistral:large", ":gpt-4o"])
def test_bad_names_say_what_is_expected(name: str) -> None:
    with pytest.raises(UnknownProvider, match="expected PROVIDER:MODEL with PROVIDER one of openai, anthropic"):
        parse_model_name(name)


def test_the_factory_builds_the_provider_asked_for() -> None:
    openai_model = make_chat_model("openai:gpt-4o", api_key="k", base_url="http://localhost:8000/v1")
    assert isinstance(openai_model, OpenAIChatModel)
    assert str(openai_model.spec) == "openai:gpt-4o"
    assert openai_model.spec.base_url == "http://localhost:8000/v1"
    anthropic_model = make_chat_model("anthropic:claude-haiku-4-5", api_key="k")
    assert isinstance(anthropic_model, AnthropicChatModel)
    assert anthropic_model.spec.base_url == "https://api.anthropic.com"


def test_credentials_in_a_base_url_are_kept_out_of_the_spec() -> None:
    model = make_chat_model("openai:m", api_key="k", base_url="http://user:pw@proxy.local:8080/v1?token=abc")
    assert model.spec.base_url == "http://proxy.local:8080/v1"
