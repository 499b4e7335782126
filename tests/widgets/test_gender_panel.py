"""The gender-probe panel's detail on the Results page, on the demo (its gender study: a male-leaning and a
gender-balanced simulated listener, the balanced one also as their text backbone, binary and neutral-option prompts):
per-category J / Δ with significance marks / ν / κ, the male- vs female-voice answers per question sorted by
disagreement, and the listening view's male, female and neutralized clips handed to the window's player."""

from pathlib import Path

import pytest

from spokenbench.core.store import opened
from spokenbench.core.store.gender_clips import question_clip_rows
from spokenbench.widgets.gender_panel import DISAGREEMENT_COLUMN


@pytest.fixture
def demo(read_only_demo):
    return read_only_demo


@pytest.fixture(autouse=True)
def no_error_dialogs(dialogs):
    yield
    assert dialogs == []


@pytest.fixture
def page(qtbot, results_page):
    page = results_page(1300, 900, timeout_ms=30_000)
    with qtbot.waitSignal(page.gender_ready, timeout=30_000):
        page.show_panel("gender_probe")
    return page


def summary(page, setting: str) -> dict[tuple[str, str], dict]:
    page.gender_panel.choose_setting(setting)
    return {(row["model"], row["category"]): row for row in page.gender_panel.summary_rows()}


def delta_of(cell: str) -> float:
    return float(cell.split("*")[0].split()[0])


@pytest.mark.slow
def test_per_category_j_delta_nu_kappa_show_the_male_leaning_listener(page):
    panel = page.gender_panel
    assert panel.isVisible() and "yours (simulated)" in panel.title.text()
    assert [panel.setting_picker.itemData(i) for i in range(panel.setting_picker.count())] == [
        "binary_option",
        "neutral_option",
        "free_form",
        "neutralized_voice",
    ]
    for setting in ("binary_option", "neutral_option"):
        rows = summary(page, setting)
        backbone = "simulated:gender-balanced (text)"
        models = {"simulated:male-leaning", "simulated:gender-balanced", backbone}
        assert {model for model, _ in rows} == models
        assert {category for _, category in rows} == {"independent", "stereotypical", "dependent"}
        leaning = rows[("simulated:male-leaning", "stereotypical")]
        balanced = rows[("simulated:gender-balanced", "stereotypical")]
        text = rows[(backbone, "stereotypical")]  # the text backbone: Δ over its own answers, one per question
        assert delta_of(leaning["Δ"]) > 0.3  # a male-oriented preference …
        assert abs(delta_of(balanced["Δ"])) < 0.1 and "*" not in balanced["Δ"]  # … and none
        assert "*" not in text["Δ"] and text["J"] == "—" and text["κ"] == "—"  # no voices, no backbone
        for row in (leaning, balanced):
            assert row["J"] != "—" and "[" in row["J"]  # with its 95% interval
            assert row["ν"] != "—" and row["κ"] != "—" and row["backbone"] == backbone
        assert rows[("simulated:male-leaning", "independent")]["Δ"] == "—"  # no oriented options there
    binary = summary(page, "binary_option")
    leaning = binary[("simulated:male-leaning", "stereotypical")]
    # p 0.014: one mark (0.007 and two while two stereotypical probes carried a third, neutral option; issue 25)
    assert leaning["Δ"].startswith("+0.50*") and "**" not in leaning["Δ"] and float(leaning["p (Δ)"]) < 0.05
    free = summary(page, "free_form")[("simulated:male-leaning", "dependent")]  # its own measures, named so
    assert 0 < float(free["J_s"]) <= 1 and 0 < float(free["s"]) <= 1 and delta_of(free["Δ_s"]) > 0.3
    page.gender_panel.choose_setting("binary_option")
    # the numbers are the engine's, as `spokenbench report --kind gender-probe` writes them
    view = page.gender_panel.view
    row = (
        view.summary_for("binary_option")
        .set_index(["model", "category"])
        .loc[("simulated:male-leaning", "stereotypical")]
    )
    assert leaning["J"].startswith(f"{row['J']:.2f}") and leaning["ν"].startswith(f"{row['neutral_rate']:.2f}")
    assert leaning["κ"].startswith(f"{row['kappa']:.2f}")


@pytest.mark.slow
def test_the_detail_belongs_to_the_gender_panel_only_and_adds_its_tabs_once_shown(results_page, qtbot):
    """Before, its tabs were added as the Results page was built: the tab bar reported its first tab selected, and
    Orca 43 said *Per category page tab* over the page's first Ctrl+7, the panel hidden."""
    page = results_page(1300, 900, timeout_ms=30_000)
    page.show_panel("accuracy_by_level")
    assert page.gender_panel.isHidden() and page.gender_panel.tabs.count() == 0
    page.show_panel("gender_probe")
    tabs = page.gender_panel.tabs
    assert page.gender_panel.isVisible() and tabs.currentIndex() == 0 and tabs.currentWidget().isVisible()
    assert [tabs.tabText(index) for index in range(tabs.count())] == ["Per category", "Answers per question", "Listen"]
    chain, widget = [], page.gender_panel.setting_picker  # Tab: the setting, the tab bar, then the tab's page
    while len(chain) < 200 and widget not in chain:
        chain.append(widget)
        widget = widget.nextInFocusChain()
    table = page.gender_panel.summary_table
    assert chain.index(page.gender_panel.setting_picker) < chain.index(tabs.tabBar()) < chain.index(table)


@pytest.mark.slow
def test_answers_per_question_sort_by_disagreement(page):
    panel = page.gender_panel
    panel.choose_setting("binary_option")
    panel.show_tab(1)
    rows = panel.question_rows()
    assert len(rows) == 12 * 2  # every probe for each voiced model (the text backbone has no voices)
    disagreement = [float(r["disagreement"]) for r in rows]
    assert disagreement == sorted(disagreement, reverse=True) and disagreement[0] > disagreement[-1]
    first = rows[0]
    assert first["male voice answered"] and first["female voice answered"]  # e.g. 'F 2 · N 1' vs 'M 3'
    panel.question_table.sortItems(DISAGREEMENT_COLUMN)  # a header click: ascending
    assert float(panel.question_rows()[0]["disagreement"]) == min(disagreement)
    panel.sort_button.click()
    assert [float(r["disagreement"]) for r in panel.question_rows()] == disagreement
    panel.model_picker.setCurrentIndex(panel.model_picker.findData("simulated:male-leaning"))
    only = panel.question_rows()
    assert len(only) == 12 and {r["model"] for r in only} == {"simulated:male-leaning"}
    stereotypical = [r for r in only if r["category"] == "stereotypical"]
    assert all(float(r["male voice: share M"]) >= 0 for r in stereotypical)


@pytest.mark.slow
def test_the_listening_view_plays_the_male_female_and_neutralized_versions(page, qtbot, played, demo):
    panel = page.gender_panel
    panel.show_tab(1)
    panel.question_table.selectRow(0)
    question = panel.selected_question()
    with qtbot.waitSignal(page.versions_ready, timeout=10_000) as ready:
        panel.listen_button.click()
    versions = ready.args[0]
    assert panel.tabs.currentIndex() == 2 and versions.question_id == question
    labels = panel.version_labels()
    assert labels["male"][0].startswith("espeak-male · american")
    assert labels["female"][0].startswith("espeak-female · american")
    assert len(labels["neutralized"]) == 2 and "from male" in labels["neutralized"][0]
    assert "signal-approximation" in panel.listen_note.text()
    answers = panel.answers_table  # how each voiced model answered it, in every setting (neutralized voices too)
    assert answers.rowCount() == 8 and {answers.item(r, 1).text() for r in range(8)} == {  # 4 settings × 2 models
        "simulated:male-leaning",
        "simulated:gender-balanced",
    }
    assert {len(labels["male"]), len(labels["female"])} == {3}  # the second voice and the British accent too

    with opened(demo) as project:
        clips = {Path(c["sha256"]).name: c for c in question_clip_rows(project.conn, versions.item_id)}
    for kind in ("male", "female", "neutralized"):
        panel.play_buttons[kind].click()
    assert len(played) == 3
    heard = [clips[Path(path).stem] for path in played]
    assert all(Path(path).is_file() for path in played)
    assert [c["speaker_gender"] for c in heard[:2]] == ["male", "female"]
    assert not heard[0]["neutralization"] and not heard[1]["neutralization"]
    assert heard[2]["neutralization"] == "signal-approximation"
    assert len({c["accent"] for c in heard}) == 1  # the three side by side in one accent

    # another voice of a kind: the picker's choice is what plays
    panel.version_pickers["neutralized"].setCurrentIndex(1)
    panel.play_buttons["neutralized"].click()
    assert clips[Path(played[-1]).stem]["voice"] == "espeak-female-neutral-approx"

    # the question picker reads another probe's clips
    other = panel.question_picker.findData(versions.item_id) ^ 1
    with qtbot.waitSignal(page.versions_ready, timeout=10_000) as again:
        panel.question_picker.setCurrentIndex(other)
    assert again.args[0].item_id == panel.question_picker.itemData(other) != versions.item_id


@pytest.mark.slow
def test_the_detail_follows_the_run_picker(page, qtbot):
    runs = {r["name"]: r["id"] for r in page.runs}
    binary_leaning = runs["gender study: simulated:male-leaning (audio+text-options, gender-paper)"]
    with qtbot.waitSignal(page.gender_ready, timeout=30_000):
        page.select_runs([binary_leaning])
    panel = page.gender_panel
    assert [panel.setting_picker.itemData(i) for i in range(panel.setting_picker.count())] == ["binary_option"]
    rows = panel.summary_rows()
    assert {r["model"] for r in rows} == {"simulated:male-leaning"} and all(r["κ"] == "—" for r in rows)
    with qtbot.waitSignal(page.gender_ready, timeout=30_000):
        page.select_runs([1, 2, 3])  # the multiple-choice listeners: no probes answered
    assert "No gender-probe answers" in panel.title.text() and panel.summary_table.rowCount() == 0


@pytest.mark.slow
def test_the_neutralized_voices_setting(page):
    """The paper's Table 4 in the detail: the speech listeners on the neutralized clips, by the gender of the voice
    each was made from, κ against the backbone's binary answers."""
    rows = summary(page, "neutralized_voice")
    assert {model for model, _ in rows} == {"simulated:male-leaning", "simulated:gender-balanced"}
    assert all(row["κ"] != "—" and row["backbone"] == "simulated:gender-balanced (text)" for row in rows.values())
    assert delta_of(rows[("simulated:male-leaning", "stereotypical")]["Δ"]) > 0.3  # the preference persists
    panel = page.gender_panel
    panel.show_tab(1)
    table = panel.question_table
    headers = [table.horizontalHeaderItem(c).text() for c in range(table.columnCount())]
    assert "neutralized from male answered" in headers and "neutralized from female answered" in headers
    assert len(panel.question_rows()) == 12 * 2
    panel.choose_setting("binary_option")
    assert table.horizontalHeaderItem(3).text() == "male voice answered"
