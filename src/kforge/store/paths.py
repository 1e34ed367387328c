"""Where the run database lives when nobody says otherwise."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

DB_FILENAME = "kforge.db"


def default_db_path(env: Mapping[str, str] | None = None) -> Path:
    """`$KFORGE_HOME/kforge.db`, else `$XDG_DATA_HOME/kforge/kforge.db`, else under `~/.local/share`."""
    env = os.environ if env is None else env
    if env.get("KFORGE_HOME"):
        return Path(env["KFORGE_HOME"]).expanduser() / DB_FILENAME
    data_home = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home).expanduser() / "kforge" / DB_FILENAME
