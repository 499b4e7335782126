import os
import sys

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import json

import pytest
from demo_copies import audio_fingerprint, changed_audio, damaged_audio, linked_copy

from spokenbench.core.cli.main import main as cli_main
from spokenbench.core.store import Project

# pytest's assertion rewriting costs ~15 s of CPU per session (and per xdist worker) for this suite unless the
# rewritten test modules are cached; PYTHONDONTWRITEBYTECODE=1 in an environment would disable that cache, so the
# test run keeps it (in the ignored __pycache__ folders).
sys.dont_write_bytecode = False


@pytest.fixture(autouse=True)
def own_config_dir(tmp_path_factory, monkeypatch):
    """The hosts approved for keys (core.cli.resume.ApprovedHosts) and the verified clips (core.store.verified_clips)
    are per machine: each test starts with none, and never touches the user's own."""
    monkeypatch.setenv("SPOKENBENCH_CONFIG_DIR", str(tmp_path_factory.mktemp("config")))
    monkeypatch.setenv("SPOKENBENCH_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture
def project(tmp_path):
    with Project.create(tmp_path / "proj") as p:
        yield p


class CliResult:
    def __init__(self, code: int, out: str, err: str):
        self.code, self.out, self.err = code, out, err

    def json(self):
        return json.loads(self.out)


@pytest.fixture
def cli(capsys):
    """Run the CLI in-process; returns exit code and captured output."""

    def run(*args: str) -> CliResult:
        code = cli_main([str(a) for a in args])
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


@pytest.fixture(scope="session")
def built_demo(tmp_path_factory):
    """The demo project, built once per test run (it synthesizes ~1,100 clips) and shared by pytest-xdist's
    workers: the first worker to take the lock builds it, the others wait and reuse it. Copy it before changing
    it."""
    from filelock import FileLock

    from spokenbench.core.demo.project import build_demo

    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # the run's folder, above each worker's own
    target = shared / "shared-demo" / "demo-project"
    with FileLock(str(shared / "shared-demo.lock")):
        if not target.exists():
            target.parent.mkdir(exist_ok=True)
            build_demo(target)
    yield target
    damaged = damaged_audio(target)
    assert not damaged, f"a test wrote into the shared demo's audio (tests/demo_copies.py): {damaged[:5]}"


@pytest.fixture(autouse=True)
def shared_demo_untouched(request):
    """Copies of the demo hard-link its audio (tests/demo_copies.py): a test that wrote into one is named here,
    before the tests after it hear the change."""
    if "built_demo" not in request.fixturenames:
        yield
        return
    demo = request.getfixturevalue("built_demo")
    before = audio_fingerprint(demo)
    yield
    changed = changed_audio(before, audio_fingerprint(demo))
    assert not changed, (
        f"this test (or one running beside it) wrote into {len(changed)} of the shared demo's audio files "
        f"({changed[:3]}): copies hard-link them (tests/demo_copies.py); replace a file (unlink it, then write) "
        "instead of writing into it"
    )


@pytest.fixture
def demo_copy(built_demo, tmp_path):
    """A private, writable copy of the demo project (its audio files shared: replace one, never write into it)."""
    return linked_copy(built_demo, tmp_path / "demo-project")


@pytest.fixture
def player_of():
    """player_of(stream_factory) → a ClipPlayer playing into that factory's streams; every player made is closed
    after the test, its thread ended, and every stream opened counted closed."""
    from spokenbench.core.audio import open_streams
    from spokenbench.core.audio.playback import ClipPlayer

    players = []

    def make(streams):
        player = ClipPlayer(stream_factory=streams)
        players.append(player)
        return player

    yield make
    for player in players:
        player.close()
        assert player.join(2.0), "the playback thread did not end"
    assert open_streams.count == 0  # every stream opened was counted closed
