"""`make_chat_model("openai:gpt-4o")`: a chat model from the PROVIDER:MODEL name a user types."""

from __future__ import annotations

from collections.abc import Callable

from kforge.llm.base import ChatModel
from kforge.llm.errors import LLMError
from kforge.llm.prices import PriceTable
from kforge.llm.retry import RetryPolicy

# Each SDK takes a second or more to import, so only the provider asked for is loaded.


def _openai() -> Callable[..., ChatModel]:
    from kforge.llm.openai_chat import OpenAIChatModel

    return OpenAIChatModel


def _anthropic() -> Callable[..., ChatModel]:
    from kforge.llm.anthropic_chat import AnthropicChatModel

    return AnthropicChatModel


# name -> loader of the class, whose constructor takes (model, *, base_url, api_key, timeout_s, retry, prices)
PROVIDERS: dict[str, Callable[[], Callable[..., ChatModel]]] = {"openai": _openai, "anthropic": _anthropic}


class UnknownProvider(LLMError):
    """The model name has no known provider prefix."""


def parse_model_name(name: str) -> tuple[str, str]:
    """`"openai:gpt-4o"` -> `("openai", "gpt-4o")`. Only the first colon splits: `openai:llama3:8b` works."""
    provider, colon, model = name.partition(":")
    if not colon or not model or provider not in PROVIDERS:
        raise UnknownProvider(
            f"model {name!r}: expected PROVIDER:MODEL with PROVIDER one of {', '.join(PROVIDERS)},"
            " for example openai:gpt-4o or anthropic:claude-sonnet-4-5"
        )
    return provider, model


def make_chat_model(
    name: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout_s: float = 600.0,
    retry: RetryPolicy | None = None,
    prices: PriceTable | None = None,
) -> ChatModel:
    """A chat model for `PROVIDER:MODEL`. Keys and base URLs not given are read from the SDK's variables."""
    provider, model = parse_model_name(name)
    chat_model_class = PROVIDERS[provider]()
    return chat_model_class(model, base_url=base_url, api_key=api_key, timeout_s=timeout_s, retry=retry, prices=prices)
