"""A machine without a font for a project's script (no CJK font is common on a fresh Linux install): Korean and
Chinese text was drawn as boxes, silently, on every page, the rating session's text to check included. The
status bar and the rating session now name the languages and the fonts to install. The font list is the test's
(QFontDatabase.families answered as a machine without Korean and Chinese fonts would), so the result does not
depend on the fonts of the machine running it."""

from types import SimpleNamespace

import pytest
from PySide6.QtCore import QSettings
from PySide6.QtGui import QFontDatabase

from spokenbench.widgets import fonts
from spokenbench.widgets.fonts import languages_without_font, missing_font_advice

WITHOUT = {QFontDatabase.WritingSystem.Korean, QFontDatabase.WritingSystem.SimplifiedChinese}


@pytest.fixture
def no_cjk_font(monkeypatch):
    monkeypatch.setattr(
        fonts.QFontDatabase, "families", staticmethod(lambda system=None: [] if system in WITHOUT else ["Some Font"])
    )


def test_the_languages_whose_script_has_no_font_are_named(qapp, no_cjk_font):
    assert languages_without_font(["en", "ko", "zh-TW", "ru", "sw", "ar"]) == ["ko", "zh-TW"]
    assert languages_without_font(["en", "fr"]) == []
    advice = missing_font_advice(["ko", "zh"])
    assert advice.startswith("No font on this machine shows ko, zh text: it appears as boxes")
    assert "apt-get install fonts-noto-cjk;" in advice
    assert "fonts-noto-core" in missing_font_advice(["th"]) and "cjk" not in missing_font_advice(["th"])


def test_the_status_bar_names_the_project_s_languages_without_a_font(qtbot, tmp_path, no_cjk_font):
    from spokenbench.app.main_window import MainWindow

    window = MainWindow(
        audio_message="off",
        poll_interval_s=0.1,
        settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat),
    )
    qtbot.addWidget(window)
    window.show()
    try:
        window.show_missing_fonts({"en": 36, "ko": 24, "zh": 24})
        assert window.font_label.isVisible() and window.font_label.text() == "No font: ko, zh"
        assert "fonts-noto-cjk" in window.font_label.toolTip()
        window.show_missing_fonts({"en": 36})
        assert not window.font_label.isVisible()
    finally:
        window.shutdown()


@pytest.mark.slow
def test_a_rating_session_with_text_no_font_shows_says_so_in_its_banner(rating_page_on_demo_queue, no_cjk_font):
    page = rating_page_on_demo_queue(SimpleNamespace(annotator="alice"))
    assert page.rating.languages >= {"ko", "zh"}
    assert page.view.banner.isVisible()
    assert page.view.banner.text().startswith("No font on this machine shows ko, zh text")
