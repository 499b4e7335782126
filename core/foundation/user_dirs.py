"""This machine's per-user SpokenBench folders (never a project's): the config folder (hosts approved for keys)
and the cache folder (clips already verified). Each follows XDG, with a SPOKENBENCH_* variable over it (tests,
or a user who keeps them elsewhere)."""

from __future__ import annotations

import os
from pathlib import Path

CONFIG_DIR_VARIABLE = "SPOKENBENCH_CONFIG_DIR"
CACHE_DIR_VARIABLE = "SPOKENBENCH_CACHE_DIR"


def config_dir() -> Path:
    """The user's SpokenBench config folder: $SPOKENBENCH_CONFIG_DIR, else $XDG_CONFIG_HOME/spokenbench."""
    return _user_dir(CONFIG_DIR_VARIABLE, "XDG_CONFIG_HOME", ".config")


def cache_dir() -> Path:
    """The user's SpokenBench cache folder: $SPOKENBENCH_CACHE_DIR, else $XDG_CACHE_HOME/spokenbench."""
    return _user_dir(CACHE_DIR_VARIABLE, "XDG_CACHE_HOME", ".cache")


def _user_dir(override: str, xdg_variable: str, default_under_home: str) -> Path:
    if os.environ.get(override):
        return Path(os.environ[override])
    base = os.environ.get(xdg_variable) or str(Path.home() / default_under_home)
    return Path(base) / "spokenbench"
