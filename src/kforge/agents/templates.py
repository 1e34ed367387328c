"""Prompt templates: Jinja2 files under agents/prompts, rendered strictly (a missing variable is an error)."""

from __future__ import annotations

from typing import Any

import jinja2

from kforge.templating import template_environment


def _environment() -> jinja2.Environment:
    return template_environment("kforge.agents", "prompts")


def render(name: str, **variables: Any) -> str:
    """Render `prompts/<name>.j2` with `variables`."""
    return _environment().get_template(f"{name}.j2").render(**variables).strip() + "\n"
