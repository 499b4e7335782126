import pytest

from spokenbench.core.foundation.errors import MissingDependencyError
from spokenbench.core.foundation.optional import import_optional


def test_missing_extra_names_the_install_command(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "faster_whisper", None)  # as if the extra were not installed
    with pytest.raises(MissingDependencyError, match=r"spokenbench-studio\[local-asr\]"):
        import_optional("faster_whisper", "Local ASR")


def test_installed_module_is_returned():
    assert import_optional("json", "JSON").dumps([]) == "[]"
