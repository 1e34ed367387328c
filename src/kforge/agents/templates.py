"""Prompt templates: Jinja2 files under agents/prompts, rendered strictly (a missing variable is an error)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import jinja2


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("kforge.agents", "prompts"),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=False,
        autoescape=False,  # prompts are plain text, not HTML
    )


def render(name: str, **variables: Any) -> str:
    """Render `prompts/<name>.j2` with `variables`."""
    return _environment().get_template(f"{name}.j2").render(**variables).strip() + "\n"
