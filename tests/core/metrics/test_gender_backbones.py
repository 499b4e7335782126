"""Backbone pairs declared once per project (`spokenbench backbone DIR --pair AUDIO=TEXT`)."""

import json

import pytest

from spokenbench.core.cli.main import main
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.metrics.gender_backbones import (
    declare_backbone_pairs,
    parse_pairs,
    project_backbone_pairs,
)
from spokenbench.core.store import Project


@pytest.fixture
def project(tmp_path):
    path = tmp_path / "p"
    Project.create(path).close()
    return path


def test_parse_pairs():
    assert parse_pairs(["a=b", "c = d, e=f"]) == {"a": "b", "c": "d", "e": "f"}
    assert parse_pairs(["a=b", "a=b"]) == {"a": "b"}  # the same pair twice is fine
    for bad, message in (("a", "AUDIO_MODEL=TEXT_MODEL"), ("=b", "AUDIO_MODEL"), ("a=b=c", "one '='")):
        with pytest.raises(SpokenBenchError, match=message):
            parse_pairs([bad])
    with pytest.raises(SpokenBenchError, match="two text models"):
        parse_pairs(["a=b", "a=c"])


def test_pairs_are_stored_in_the_project(project):
    assert project_backbone_pairs(project) == {}
    assert declare_backbone_pairs(project, {"speech": "text", "s2": "t2"}) == {"speech": "text", "s2": "t2"}
    assert declare_backbone_pairs(project, {"speech": "other"}) == {"speech": "other", "s2": "t2"}  # replaced
    assert project_backbone_pairs(project) == {"speech": "other", "s2": "t2"}
    assert declare_backbone_pairs(project, remove=["s2"]) == {"speech": "other"}
    with pytest.raises(SpokenBenchError, match="no backbone pair for 's2'"):
        declare_backbone_pairs(project, remove=["s2"])
    assert declare_backbone_pairs(project, clear=True) == {}
    assert project_backbone_pairs(project) == {}


def test_backbone_command(project, capsys):
    assert main(["backbone", str(project), "--pair", "simulated:a=simulated:b", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) == {"simulated:a": "simulated:b"}
    assert "no gender-probe answers" in captured.err  # named before anything was run: a note, not an error
    assert main(["backbone", str(project)]) == 0
    assert "simulated:b" in capsys.readouterr().out
    for argv, message in (
        (["--pair", "nothing"], "AUDIO_MODEL=TEXT_MODEL"),
        (["--pair", "a=b,a=c"], "two text models"),
        (["--remove", "unknown"], "no backbone pair"),
    ):
        assert main(["backbone", str(project), *argv]) == 2
        assert message in capsys.readouterr().err
    assert main(["backbone", str(project.parent / "absent")]) == 2
    assert project_backbone_pairs(project) == {"simulated:a": "simulated:b"}  # bad input changed nothing
