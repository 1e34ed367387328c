"""Jinja2 environments over the package's template folders: strict (a missing variable is an error) and
plain text (prompts, knowledge entries and generated code, never HTML). One cached environment per folder."""

from __future__ import annotations

from functools import cache

import jinja2


@cache
def template_environment(package: str, folder: str, *, trim_blocks: bool = False) -> jinja2.Environment:
    """The environment for `folder` inside `package`; `trim_blocks` also strips the lines of block tags."""
    return jinja2.Environment(loader=jinja2.PackageLoader(package, folder), undefined=jinja2.StrictUndefined,
                              keep_trailing_newline=True, trim_blocks=trim_blocks, lstrip_blocks=trim_blocks,
                              autoescape=False)
