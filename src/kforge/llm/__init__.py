"""Chat models behind one small interface, with retries, prices and budgets.

    model = make_chat_model("openai:gpt-4o", timeout_s=120)
    answer = model.complete([Message.system("..."), Message.user("...", png_bytes)], max_tokens=4096)
    answer.text, answer.usage, answer.cost_usd

Inside a run, pipelines wrap it in `kforge.pipelines.recording.RecordingChatModel`, which keeps every call in the
store and answers a resumed run's repeated calls from it.
"""

from kforge.llm.base import ChatModel, ModelSpec
from kforge.llm.budget import Budget, BudgetExceeded, Spend
from kforge.llm.errors import (
    AuthenticationFailed,
    BadRequest,
    LLMError,
    LLMTimeout,
    MalformedResponse,
    MissingAPIKey,
    RateLimited,
    ServerError,
    ServerUnreachable,
    UnknownModel,
)
from kforge.llm.factory import UnknownProvider, make_chat_model, parse_model_name
from kforge.llm.messages import Completion, DeltaCallback, ImagePart, Message, TextPart, Usage
from kforge.llm.prices import Price, PriceTable, load_prices
from kforge.llm.request import describe_request, request_hash
from kforge.llm.retry import RetryPolicy

__all__ = [
    "AuthenticationFailed",
    "BadRequest",
    "Budget",
    "BudgetExceeded",
    "ChatModel",
    "Completion",
    "DeltaCallback",
    "ImagePart",
    "LLMError",
    "LLMTimeout",
    "MalformedResponse",
    "Message",
    "MissingAPIKey",
    "ModelSpec",
    "Price",
    "PriceTable",
    "RateLimited",
    "RetryPolicy",
    "ServerError",
    "ServerUnreachable",
    "Spend",
    "TextPart",
    "UnknownModel",
    "UnknownProvider",
    "Usage",
    "describe_request",
    "load_prices",
    "make_chat_model",
    "parse_model_name",
    "request_hash",
]
