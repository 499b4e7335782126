import pytest


@pytest.mark.slow
def test_synthesize_then_assemble_offline(cli, mini_project):
    project = mini_project.path
    dry = cli("synthesize", project, "--tts", "espeak", "--languages", "en", "--dry-run", "--json")
    assert dry.code == 0 and dry.json()["plan"]["to_synthesize"] > 0
    assert mini_project.conn.execute("SELECT count(*) FROM clips").fetchone()[0] == 0
    result = cli("synthesize", project, "--tts", "espeak", "--languages", "en", "--voices", "espeak-female", "--json")
    assert result.code == 0 and result.json()["failed"] == 0
    again = cli("synthesize", project, "--tts", "espeak", "--languages", "en", "--voices", "espeak-female")
    assert again.code == 0 and "0 clips to synthesize" in again.out
    assembled = cli(
        "assemble", project, "--orders", "original,reversed", "--speed", "1.0,1.25", "--chunk-seconds", "30", "--json"
    )
    assert assembled.code == 0 and assembled.json()["assembled"] == 2 * 2 * 2 * 2  # items × accents × orders × speeds
    info = cli("info", project, "--json").json()
    assert info["clips"]["total"] == result.json()["synthesized"] + result.json()["reused"]


def test_audio_commands_explain_bad_input(cli, mini_project, monkeypatch):
    project = mini_project.path
    bad_speed = cli("assemble", project, "--speed", "fast")
    assert bad_speed.code == 2 and "--speed: 'fast' is not a number" in bad_speed.err
    bad_order = cli("assemble", project, "--orders", "sideways")
    assert bad_order.code == 2 and "order 'sideways'" in bad_order.err
    bad_voice = cli("synthesize", project, "--tts", "espeak", "--voices", "Orus")
    assert bad_voice.code == 2 and "no voice 'Orus'" in bad_voice.err
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setattr("spokenbench.core.foundation.credentials._from_keyring", lambda variable: None)
    no_key = cli("synthesize", project, "--tts", "openai", "--languages", "en")
    assert no_key.code == 2 and "OPENAI_API_KEY" in no_key.err and "Traceback" not in no_key.err
