"""Where kforge keeps files between runs."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """Build artifacts and compiler caches: $KFORGE_CACHE_DIR, else $XDG_CACHE_HOME/kforge, else ~/.cache/kforge."""
    explicit = os.environ.get("KFORGE_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "kforge"
