"""Settings: explicit values over the environment over kforge.toml."""

from pathlib import Path

import pytest

from kforge.config import ConfigError, Settings, load_settings
from kforge.llm import BudgetExceeded


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_defaults_without_any_source(tmp_path: Path) -> None:
    settings = load_settings(env={}, cwd=tmp_path)
    assert settings == Settings()
    assert settings.timeout_s == 600.0 and settings.retries == 4 and not settings.no_cache
    assert settings.db_path.name == "kforge.db"


def test_explicit_beats_environment_beats_file(tmp_path: Path) -> None:
    write(tmp_path / "kforge.toml", 'model = "openai:from-file"\ntimeout_s = 10\nmax_usd = 1.5\nretries = 1\n')
    env = {"KFORGE_TIMEOUT_S": "20", "KFORGE_MODEL": "openai:from-env", "KFORGE_NO_CACHE": "true"}
    settings = load_settings({"model": "openai:from-flag", "retries": None}, env=env, cwd=tmp_path)
    assert settings.model == "openai:from-flag"
    assert settings.timeout_s == 20.0
    assert settings.max_usd == 1.5 and settings.retries == 1  # None means "flag not given"
    assert settings.no_cache is True


def test_kforge_config_names_the_file(tmp_path: Path) -> None:
    config = write(tmp_path / "elsewhere.toml", "max_calls = 7\n")
    write(tmp_path / "kforge.toml", "max_calls = 1\n")
    assert load_settings(env={"KFORGE_CONFIG": str(config)}, cwd=tmp_path).max_calls == 7
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(env={"KFORGE_CONFIG": str(tmp_path / "missing.toml")}, cwd=tmp_path)


def test_the_sdk_base_url_variable_sits_between_kforge_env_and_the_file(tmp_path: Path) -> None:
    write(tmp_path / "kforge.toml", 'model = "openai:m"\nbase_url = "http://file/v1"\n')
    sdk = {"OPENAI_BASE_URL": "http://sdk/v1"}
    assert load_settings(env=sdk, cwd=tmp_path).base_url == "http://sdk/v1"
    assert load_settings(env={**sdk, "KFORGE_BASE_URL": "http://kf/v1"}, cwd=tmp_path).base_url == "http://kf/v1"
    assert load_settings(env={"ANTHROPIC_BASE_URL": "http://other"}, cwd=tmp_path).base_url == "http://file/v1"


def test_a_bad_value_names_the_setting_and_its_source(tmp_path: Path) -> None:
    write(tmp_path / "kforge.toml", 'timeout_s = "soon"\n')
    with pytest.raises(ConfigError, match=r"setting 'timeout_s' from .*kforge.toml: .*got 'soon'"):
        load_settings(env={}, cwd=tmp_path)
    with pytest.raises(ConfigError, match="setting 'max_calls' from environment"):
        load_settings(env={"KFORGE_MAX_CALLS": "-3"}, cwd=tmp_path / "elsewhere")


def test_an_unknown_key_in_the_file_is_an_error(tmp_path: Path) -> None:
    write(tmp_path / "kforge.toml", "max_cost = 3\n")
    with pytest.raises(ConfigError, match=r"unknown setting\(s\) max_cost"):
        load_settings(env={}, cwd=tmp_path)


def test_settings_build_the_retry_policy_budget_and_model(tmp_path: Path) -> None:
    settings = load_settings(
        {"model": "openai:gpt-test", "base_url": "http://127.0.0.1:9/v1", "retries": 0, "max_calls": 0},
        env={"OPENAI_API_KEY": "sk-x"},
        cwd=tmp_path,
    )
    assert settings.retry_policy().retries == 0
    with pytest.raises(BudgetExceeded):
        settings.budget().check()


def test_chat_model_needs_a_model(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no model chosen"):
        load_settings(env={}, cwd=tmp_path).chat_model()


def test_the_record_of_settings_is_json(tmp_path: Path) -> None:
    record = load_settings({"db": tmp_path / "x.db"}, env={}, cwd=tmp_path).for_record()
    assert record["db"] == str(tmp_path / "x.db") and "api_key" not in record
