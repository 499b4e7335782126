"""API keys come from the environment or the OS keyring, never from a project folder, so a project can be
shared or archived without leaking a key."""

from __future__ import annotations

import os

from spokenbench.core.foundation.errors import SpokenBenchError

KEYRING_SERVICE = "spokenbench"
PROVIDER_VARIABLES = {
    "gemini": "GEMINI_API_KEY",
    "openai": "OPENAI_API_KEY",
    "nvidia": "NVIDIA_API_KEY",
    "mistral": "MISTRAL_API_KEY",
}


class MissingCredentialError(SpokenBenchError):
    pass


def api_key(provider: str) -> str:
    """The provider's key from its environment variable, else from the keyring entry of the same name."""
    variable = PROVIDER_VARIABLES.get(provider)
    if variable is None:
        raise SpokenBenchError(f"unknown provider '{provider}'; known: {', '.join(PROVIDER_VARIABLES)}")
    value = os.environ.get(variable, "").strip()
    if value:
        return value
    value = _from_keyring(variable)
    if value:
        return value
    raise MissingCredentialError(
        f"no API key for {provider}: set the environment variable {variable}, or store it in the OS keyring "
        f"with `keyring set {KEYRING_SERVICE} {variable}`"
    )


def _from_keyring(variable: str) -> str | None:
    try:
        import keyring
        from keyring.errors import KeyringError
    except ImportError:
        return None
    try:
        value = keyring.get_password(KEYRING_SERVICE, variable)
    except (KeyringError, RuntimeError):  # no usable keyring backend on this machine (headless CI)
        return None
    return value.strip() if value else None
