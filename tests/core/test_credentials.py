import keyring
import pytest
from keyring.backend import KeyringBackend

from spokenbench.core.foundation.credentials import MissingCredentialError, api_key


class MemoryKeyring(KeyringBackend):
    priority = 1

    def __init__(self):
        super().__init__()
        self.store = {}

    def get_password(self, service, username):
        return self.store.get((service, username))

    def set_password(self, service, username, password):
        self.store[(service, username)] = password

    def delete_password(self, service, username):
        self.store.pop((service, username), None)


@pytest.fixture
def memory_keyring():
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    yield backend
    keyring.set_keyring(previous)


def test_environment_wins_then_keyring_then_a_clear_error(monkeypatch, memory_keyring):
    monkeypatch.setenv("OPENAI_API_KEY", "from-env")
    assert api_key("openai") == "from-env"
    monkeypatch.delenv("OPENAI_API_KEY")
    memory_keyring.set_password("spokenbench", "OPENAI_API_KEY", "from-keyring")
    assert api_key("openai") == "from-keyring"
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    with pytest.raises(MissingCredentialError, match="GEMINI_API_KEY"):
        api_key("gemini")
