"""Fixtures for the evaluation tests: a loopback model stub, and projects with items and assembled inputs
written directly (audio assembly itself belongs to core/audio)."""

import pytest
from batch_stub import BatchStub
from eval_support import TEST_KEYS, add_assembled, add_items
from model_stub import StubServer

from spokenbench.core.domain.conditions import Condition


@pytest.fixture(autouse=True)
def loopback_only(monkeypatch):
    """No test reaches the network: any connection to a host other than 127.0.0.1 fails loudly."""
    import socket

    real_connect = socket.socket.connect

    def connect(self, address):
        host = address[0] if isinstance(address, tuple) else address
        if self.family in (socket.AF_INET, socket.AF_INET6) and host not in ("127.0.0.1", "::1", "localhost"):
            raise AssertionError(f"a test tried to reach {address}")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)


@pytest.fixture(autouse=True)
def api_keys(monkeypatch):
    for name, value in TEST_KEYS.items():
        monkeypatch.setenv(name, value)
    return TEST_KEYS


@pytest.fixture
def stub():
    with StubServer() as server:
        yield server


@pytest.fixture
def audio_project(project):
    """Three English items, each assembled in original and reversed order with one voice."""
    ids = add_items(project, 3)
    for item_id in ids:
        for order in ("original", "reversed"):
            add_assembled(
                project,
                item_id,
                Condition(language="en", accent="american", voice="Zephyr", gender="female", order=order),
            )
    return project


@pytest.fixture
def bstub():
    """The loopback batch stub, its batches finished at their first poll (test_openai_batch_submit_poll_collect_at_
    half_price and test_gemini_batch follow every state)."""
    with BatchStub() as server:
        server.state.instant = True
        yield server
