"""Fixtures for the LLM tests: scripted servers on 127.0.0.1 and an environment free of real keys."""

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
if str(SRC) not in sys.path:  # import kforge from this checkout, installed or not
    sys.path.insert(0, str(SRC))

from llm_servers import ScriptedServer  # noqa: E402


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No key, base URL or kforge setting from the machine running the tests leaks into them."""
    for name in list(os.environ):
        if name.startswith(("OPENAI_", "ANTHROPIC_", "KFORGE_")):
            monkeypatch.delenv(name)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as server:
        yield server
