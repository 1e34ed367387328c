"""One settings object, filled from explicit values, then the environment, then a `kforge.toml` file.

Explicit values are what the command line says (None means "not given"). The environment is `KFORGE_`
plus the field name in capitals (`KFORGE_MAX_USD=2.5`), and the SDK's own `OPENAI_BASE_URL` or
`ANTHROPIC_BASE_URL` for the base URL of the model's provider. The file is `$KFORGE_CONFIG`, else
`kforge.toml` in the current directory, with the same names as top-level keys. API keys are never
settings: the SDKs read them from their own variables, so they cannot end up in a run's record.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kforge.llm import Budget, ChatModel, RetryPolicy, load_prices, make_chat_model
from kforge.store import default_db_path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ENV_PREFIX = "KFORGE_"
CONFIG_FILENAME = "kforge.toml"
_SDK_BASE_URL_ENV = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}


class ConfigError(Exception):
    """A setting has a value that cannot be used; the message names it and where it came from."""


class Settings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str | None = Field(default=None, description="PROVIDER:MODEL, e.g. openai:gpt-4o")
    base_url: str | None = Field(default=None, description="server URL for an OpenAI- or Anthropic-compatible API")
    db: Path | None = Field(default=None, description="run database; default under $KFORGE_HOME or XDG data")
    timeout_s: float = Field(default=600.0, gt=0, description="seconds to wait for the server to send anything")
    retries: int = Field(default=4, ge=0, description="retries of rate limits, 5xx, drops and timeouts")
    retry_initial_delay_s: float = Field(default=1.0, ge=0, description="first backoff; doubles per retry")
    retry_max_delay_s: float = Field(default=30.0, ge=0, description="longest backoff between retries")
    max_output_tokens: int = Field(default=8192, gt=0, description="max_tokens asked of the model per call")
    temperature: float | None = Field(default=None, ge=0, description="None: the server's default")
    max_calls: int | None = Field(default=None, ge=0, description="budget: LLM calls per run")
    max_tokens: int | None = Field(default=None, ge=0, description="budget: prompt + completion tokens per run")
    max_usd: float | None = Field(default=None, ge=0, description="budget: US dollars per run")
    max_wall_s: float | None = Field(default=None, ge=0, description="budget: wall-clock seconds per run")
    no_cache: bool = Field(default=False, description="always ask the model, never answer from earlier calls")
    prices_file: Path | None = Field(default=None, description="a prices.toml whose entries override the builtin")

    @property
    def db_path(self) -> Path:
        return self.db if self.db is not None else default_db_path()

    def retry_policy(self) -> RetryPolicy:
        return RetryPolicy(
            retries=self.retries, initial_delay_s=self.retry_initial_delay_s, max_delay_s=self.retry_max_delay_s
        )

    def budget(self) -> Budget:
        """A fresh budget with these limits; its wall clock starts now."""
        return Budget(
            max_calls=self.max_calls, max_tokens=self.max_tokens, max_usd=self.max_usd, max_wall_s=self.max_wall_s
        )

    def chat_model(self) -> ChatModel:
        if self.model is None:
            raise ConfigError("no model chosen; pass --model, set KFORGE_MODEL, or put model = ... in kforge.toml")
        return make_chat_model(
            self.model,
            base_url=self.base_url,
            timeout_s=self.timeout_s,
            retry=self.retry_policy(),
            prices=load_prices(self.prices_file),
        )

    def for_record(self) -> dict[str, Any]:
        """The settings as JSON data for a run's record (they hold no secrets)."""
        return self.model_dump(mode="json")


def load_settings(
    explicit: Mapping[str, Any] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    config_file: Path | None = None,
    cwd: Path | None = None,
) -> Settings:
    """Settings from `explicit` values (None ones ignored), then `env`, then the config file."""
    env = os.environ if env is None else env
    layers: list[tuple[str, dict[str, Any]]] = [
        ("command line", {k: v for k, v in (explicit or {}).items() if v is not None}),
        ("environment", _from_env(env)),
    ]
    path = _config_path(config_file, env, cwd or Path.cwd())
    if path is not None:
        layers.append((str(path), _read_toml(path)))

    merged: dict[str, Any] = {}
    source: dict[str, str] = {}
    for name, values in reversed(layers):  # lowest precedence first, each overriding the one before
        merged.update(values)
        source.update(dict.fromkeys(values, name))

    # The SDK's own base-URL variable counts as environment: above the file, below KFORGE_BASE_URL.
    sdk_var = _SDK_BASE_URL_ENV.get(str(merged.get("model", "")).partition(":")[0])
    if sdk_var and env.get(sdk_var) and source.get("base_url") not in ("command line", "environment"):
        merged["base_url"], source["base_url"] = env[sdk_var], sdk_var

    try:
        return Settings(**merged)
    except ValidationError as err:
        first = err.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        where = source.get(field, "settings")
        raise ConfigError(f"setting {field!r} from {where}: {first['msg']} (got {first.get('input')!r})") from None


def _from_env(env: Mapping[str, str]) -> dict[str, Any]:
    values = {}
    for name in Settings.model_fields:
        value = env.get(ENV_PREFIX + name.upper())
        if value:  # an empty variable counts as unset
            values[name] = value
    return values


def _config_path(explicit: Path | None, env: Mapping[str, str], cwd: Path) -> Path | None:
    if explicit is not None or env.get("KFORGE_CONFIG"):
        path = Path(explicit or env["KFORGE_CONFIG"]).expanduser()
        if not path.is_file():
            raise ConfigError(f"config file {path} does not exist")
        return path
    local = cwd / CONFIG_FILENAME
    return local if local.is_file() else None


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise ConfigError(f"cannot read {path}: {err}") from None
    unknown = sorted(set(data) - set(Settings.model_fields))
    if unknown:
        raise ConfigError(f"{path}: unknown setting(s) {', '.join(unknown)}; see docs/llm-and-store.md")
    return data
