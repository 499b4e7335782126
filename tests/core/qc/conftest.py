"""Fixtures for the quality-control tests: a small trilingual project."""

import pytest
from qc_support import QC_ITEMS, add_clip, item_id, speechlike
from support import tone, write_jsonl

from spokenbench.core.audio.io import encode_wav
from spokenbench.core.importers import ImportOptions, import_files


@pytest.fixture
def qc_project(project, tmp_path):
    """Five items: three English, one Chinese, one Korean, four options each."""
    import_files(project, [write_jsonl(tmp_path / "qc.jsonl", QC_ITEMS)], "mcq", ImportOptions(source="qc"))
    return project


@pytest.fixture
def speech_clips(qc_project):
    """For control clips: every part of the three English items in two voices, with 1.2 s of distinct audio."""
    made = []
    for n, source in enumerate(("q1", "q2", "q3")):
        for p, part in enumerate(("question", "option_A", "option_B", "option_C", "option_D")):
            for voice in ("v1", "v2"):
                audio = encode_wav(speechlike(1.2) * (0.5 + 0.1 * p) + tone(500 + 40 * n, 1.2, 0.05, 16_000), 16_000)
                made.append(add_clip(qc_project, item_id(qc_project, source, "en"), part, f"{source} {part}", "en",
                                     voice=voice, audio=audio))  # fmt: skip
    return made


@pytest.fixture
def screened_clips(qc_project):
    """Clips in three languages; each test adds the transcripts it needs."""
    en, zh, ko = (item_id(qc_project, s, lang) for s, lang in (("q3", "en"), ("q1", "zh"), ("q1", "ko")))
    return {
        "en_q": add_clip(qc_project, en, "question", "Which holiday is in November?", "en"),
        "en_a": add_clip(qc_project, en, "option_A", "Thanksgiving Day is on a Thursday", "en", accent="british"),
        "zh_q": add_clip(qc_project, zh, "question", "硫酸的摩尔质量约为多少？", "zh", accent="beijing"),
        "ko_q": add_clip(qc_project, ko, "question", "황산의 몰 질량은 약 얼마입니까?", "ko", accent="seoul"),
    }
