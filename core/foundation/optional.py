"""Optional heavy backends (voice cloning, local ASR) live in extras and are imported only when used."""

from __future__ import annotations

import importlib
from types import ModuleType

from spokenbench.core.foundation.errors import MissingDependencyError

EXTRAS = {"chatterbox": "cloning", "faster_whisper": "local-asr"}


def import_optional(module: str, purpose: str) -> ModuleType:
    """Import `module` or explain which extra to install for `purpose`."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        extra = EXTRAS.get(module.split(".")[0])
        how = f"pip install 'spokenbench-studio[{extra}]'" if extra else f"pip install {module.split('.')[0]}"
        raise MissingDependencyError(
            f"{purpose} needs the optional package '{module}' ({error}); install it with: {how}"
        ) from None
