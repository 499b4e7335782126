"""Answer parsing: every phrasing the issue lists, plus the parse and reparse commands."""

import json

import pytest

from spokenbench.core.evaluation.parsing import map_to_original, parse_answer

OPTIONS = {"A": "Paris", "B": "London", "C": "Berlin", "D": "Madrid"}


@pytest.mark.parametrize(
    "raw",
    [
        "Answer: [[C]]",
        "Answer:[[C]]",
        "Answer: C",
        "answer: [[c]]",
        "(C)",
        "**C**",
        "C",
        "C.",
        "The answer is C.",
        "The correct answer is (C).",
        "The answer is **C**",
        "Final answer: C",
        "I choose C",
        "The correct option is C",
        "C. Berlin",
        "(C) Berlin",
        "Answer: **C**",
        # full-width letters and punctuation
        "Ｃ",
        "（Ｃ）",
        "答案：Ｃ",
        "Answer：［［Ｃ］］",
        # Chinese
        "答案是C",
        "答案是 C。",
        "正确答案是C",
        "答案为C",
        "我选C",
        "选C",
        "选项C",
        "答案：C",
        # Korean
        "정답은 C입니다",
        "정답: C",
        "답: C",
        "C번",
        "C입니다",
        "정답은 C번입니다.",
        # circled option numbers (Korean, Japanese and Chinese tests number options so)
        "정답은 ③입니다",
        "답: ❸",
        "③",
        "答案是③",
        "正解は③です",
        "①은 틀렸고 정답은 ③입니다",
        # chain of thought ending in an answer
        "Let's think. Option A is Paris, which is in France. B is London. D is Madrid.\nSo the capital of Germany is Berlin.\nAnswer: [[C]]",
        "A) is wrong, B) is wrong too.\nTherefore the answer is C.",
        # issue 13: lower case after a cue; Option / choice
        "answer: c",
        "the answer is (c)",
        "Option C",
        "option (c)",
        "choice C",
        "I'd go with option C.",
        # a bare letter first, the explanation after it
        "C\n\nBecause the speaker asks about Germany, whose capital is Berlin.",
        "C. Because the speaker asks about Germany.",
        "C) Berlin is the capital of Germany.",
        # LaTeX and markdown
        "\\boxed{C}",
        "$\\boxed{\\text{C}}$",
        "\\textbf{C}",
        "The final answer is $\\boxed{C}$.",
        "**Answer: C**",
        "**Answer:** C",
        "## Final answer\nC",
        "### Answer\n\n**C** — Berlin",
        # full-width, Chinese, Korean, Japanese
        "答案：（Ｃ）",
        "正确答案：C",
        "答案是c",
        "정답: C",
        "C가 정답입니다.",
        "答えはC",
        "正解はC",
        "正解：Ｃ",
        "Cが正解です。",
        # negations
        "the answer is not A but C",
        "not B; it's C",
        "A is wrong, the answer is C",
        "It's not A, it's C.",
        "答案不是A，而是C。",
        "A가 아니라 C입니다.",
        "AではなくCです。",
        "The answer is A. Wait, no, it's not A, it's C.",
        # repeated answers that agree, or a final one
        "Answer: C\n\nBerlin is the capital of Germany.\n\nAnswer: C",
        "Answer: B\n\nOn reflection the speaker says Germany.\n\nFinal answer: C",
        "I first thought the answer is B, but the final answer is C.",
        # simple-evals chain of thought: reasoning names other letters, the last line answers
        "Let's think step by step. A) Paris is in France, B) London in the UK, D) Madrid in Spain.\n\nAnswer: C",
        "Option A might seem plausible at first, but the speaker mentions the Brandenburg Gate.\nAnswer: c",
    ],
)
def test_letter_phrasings(raw):
    assert parse_answer(raw, "ABCD", OPTIONS) == parse_answer("Answer: [[C]]", "ABCD", OPTIONS)
    assert parse_answer(raw, "ABCD", OPTIONS).letter == "C"


@pytest.mark.parametrize(
    "raw", ["Berlin", "Berlin.", "The answer is Berlin", "Answer: [[Berlin]]", "**berlin**", "柏林"]
)
def test_echoed_option_text(raw):
    options = {**OPTIONS, "C": "Berlin" if raw != "柏林" else "柏林"}
    parsed = parse_answer(raw, "ABCD", options)
    assert (parsed.letter, parsed.status, parsed.detail) == ("C", "ok", "option text")


@pytest.mark.parametrize(
    "raw", ["Answer: A or C", "I think (A) or (C)", "答案是A或C", "Answer: A/B", "Paris or London", "**A** **C**"]
)
def test_several_letters_are_ambiguous(raw):
    parsed = parse_answer(raw, "ABCD", OPTIONS)
    assert parsed.status == "ambiguous" and parsed.letter is None


@pytest.mark.parametrize(
    "raw, detail",
    [
        ("I'm sorry, I cannot answer this question.", "refusal"),
        ("I don't know.", "refusal"),
        ("我无法回答这个问题。", "refusal"),
        ("죄송하지만 답변할 수 없습니다.", "refusal"),
        ("Cannot be determined.", "neutral"),
        ("无法确定", "neutral"),
        ("알 수 없습니다", "neutral"),
        ("It is not possible to determine the answer from the audio.", "neutral"),
    ],
)
def test_refusals_and_neutral_answers(raw, detail):
    parsed = parse_answer(raw, "ABCD", OPTIONS)
    assert (parsed.status, parsed.detail, parsed.letter) == ("refusal", detail, None)


def test_neutral_option_letter_and_text():
    for raw in ("Answer: [[E]]", "E", "Answer: [[Cannot be determined]]"):
        parsed = parse_answer(raw, "ABCD", OPTIONS, neutral_letter="E", neutral_text="Cannot be determined")
        assert (parsed.status, parsed.detail) == ("refusal", "neutral")


@pytest.mark.parametrize(
    "raw, detail",
    [
        ("", "empty reply"),
        ("   ", "empty reply"),
        (None, "empty reply"),
        ("zxq lorem ipsum 42", "no answer found"),
        ("Answer: [[E]]", "letter E is not an option"),
    ],
)
def test_failures(raw, detail):
    parsed = parse_answer(raw, "ABCD", OPTIONS)
    assert (parsed.status, parsed.detail) == ("failed", detail)


@pytest.mark.parametrize(
    "raw",
    [
        "Answer: B\nAnswer: C",
        "The answer is A. The answer is C.",
        "B\n\nThe speaker mentions Germany, so the answer is C.",
        "Final answer: B\nFinal answer: C",
        "It's A, B or C.",
        "It could be B or D.",
        "\\boxed{A} or \\boxed{C}",
        "C. Paris",  # the letter of one option with the text of another
        "Answer: A and C",
    ],
)
def test_disagreeing_answers_are_ambiguous(raw):
    parsed = parse_answer(raw, "ABCD", OPTIONS)
    assert (parsed.letter, parsed.status) == (None, "ambiguous"), parsed


@pytest.mark.parametrize(
    "raw",
    [
        "it is not A",
        "The answer is not A.",
        "Not B.",
        "It isn't (C).",
        "不是B",
        "A는 정답이 아닙니다.",
        "Aではありません。",
    ],
)
def test_a_negated_letter_is_never_the_answer(raw):
    parsed = parse_answer(raw, "ABCD", OPTIONS)
    assert parsed.letter is None and parsed.status in ("failed", "ambiguous"), parsed


@pytest.mark.parametrize(
    "raw, letter",
    [
        ("The speaker is happy.", "B"),
        ("the speaker is HAPPY", "B"),
        ("Speaker is happy", "B"),  # article dropped
        ("The speaker is hapy", "B"),  # one typo
        ("The speaker is suprised!", "D"),
        ("It's not angry, the speaker is happy.", "B"),
        ("Not the speaker is angry.", None),
        ("The speaker is happy or the speaker is sad", None),
    ],
)
def test_near_exact_option_text(raw, letter):
    options = {
        "A": "The speaker is angry",
        "B": "The speaker is happy",
        "C": "The speaker is sad",
        "D": "The speaker is surprised",
    }
    parsed = parse_answer(raw, "ABCD", options)
    assert parsed.letter == letter, parsed
    if letter:
        assert (parsed.status, parsed.detail) == ("ok", "option text")


def test_a_number_is_never_matched_by_near_spelling():
    options = {"A": "1945", "B": "1939", "C": "1918", "D": "1914"}
    assert parse_answer("1919", "ABCD", options).letter is None
    assert parse_answer("Either 1918 or 1914.", "ABCD", options).status == "ambiguous"
    assert parse_answer("It began in 1914.", "ABCD", options).letter == "D"


@pytest.mark.parametrize(
    "raw",
    [
        "I'm sorry, but I can't determine whether the answer is A or B without hearing the audio.",
        "I am unable to process the audio, so I cannot choose between A, B, C and D.",
        "申し訳ありませんが、この質問にはお答えできません。",
        "I can't hear the audio, so I can't tell if it's Berlin.",
    ],
)
def test_a_refusal_naming_letters_stays_a_refusal(raw):
    assert parse_answer(raw, "ABCD", OPTIONS).status == "refusal"


def test_words_that_look_like_letters_are_not_answers():
    for raw in ("the answer is a dog barking.", "Answer: I think it is hard to tell.", "Is the answer A?"):
        assert parse_answer(raw, "ABCD", OPTIONS).letter is None, raw
    assert parse_answer("Answer: I believe it's D.", "ABCD", OPTIONS).letter == "D"


def test_an_article_is_not_an_answer():
    assert parse_answer("A dog barked in the night.", "ABCD", OPTIONS).status == "failed"


def test_map_to_original_follows_the_permutation():
    assert (
        map_to_original("A", "DCBA") == "D"
        and map_to_original("B", "CABD") == "A"
        and map_to_original(None, "ABCD") is None
    )


def test_parse_command_on_outside_outputs(cli, tmp_path):
    rows = [
        {"id": 1, "raw_response": "Answer: [[B]]", "option_order": "DCBA"},
        {"id": 2, "raw_response": "Berlin", "options": ["Paris", "London", "Berlin", "Madrid"]},
        {
            "id": 3,
            "raw_response": "정답은 A입니다",
            "option_order": "BACD",
            "options": json.dumps(["x", "y", "z", "w"]),
        },
        {"id": 4, "raw_response": "A or B"},
        {"id": 5, "raw_response": "I cannot help with that."},
        {"id": 6, "raw_response": "no idea lol"},
    ]
    source = tmp_path / "outputs.jsonl"
    source.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "parsed.jsonl"
    result = cli("parse", source, "--out", out)
    assert result.code == 0, result.err
    parsed = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [(p["id"], p["prediction"], p["parse_status"]) for p in parsed] == [
        (1, "B", "ok"),
        (2, "C", "ok"),
        (3, "A", "ok"),
        (4, None, "ambiguous"),
        (5, None, "refusal"),
        (6, None, "failed"),
    ]
    assert (
        parsed[0]["mapped_option"] == "C" and parsed[2]["mapped_option"] == "B" and parsed[1]["mapped_option"] == "C"
    )  # no permutation: presented = original


def test_parse_command_reports_bad_rows(cli, tmp_path):
    source = tmp_path / "bad.jsonl"
    source.write_text(json.dumps({"raw_response": "A", "option_order": "ABCE"}) + "\n", encoding="utf-8")
    result = cli("parse", source, "--out", tmp_path / "o.jsonl")
    assert result.code == 2 and "row 1" in result.err and "option_order" in result.err
    missing = tmp_path / "missing.csv"
    missing.write_text("text\nA\n", encoding="utf-8")
    result = cli("parse", missing, "--out", tmp_path / "o.csv")
    assert result.code == 2 and "raw_response" in result.err


def test_reparse_updates_stored_answers_without_asking_a_model(audio_project, cli, stub):
    from spokenbench.core.evaluation.preparation import RunSettings
    from spokenbench.core.evaluation.runner import evaluate

    stub.state.answer_fn = lambda body: "The answer is B, I am fairly sure."
    evaluate(audio_project, RunSettings(model="vllm:m", base_url=stub.openai_url, mode="audio"))
    sent = len(stub.requests)
    with audio_project.transaction() as conn:  # pretend an older parser got these wrong
        conn.execute("UPDATE responses SET parsed_letter = NULL, parse_status = 'failed', mapped_option = NULL")
    result = cli("reparse", audio_project.path, "--json")
    assert result.code == 0 and result.json()["changed"] == 6
    rows = audio_project.conn.execute(
        "SELECT parsed_letter, parse_status, option_order, mapped_option FROM responses"
    ).fetchall()
    assert all(r[0] == "B" and r[1] == "ok" and r[3] == r[2][1] for r in rows), [tuple(r) for r in rows]
    assert len(stub.requests) == sent


def test_reparse_reads_stored_answers_with_the_current_parser(audio_project, cli, stub):
    """Stored replies the old parser could not read ('**Answer:** option (b)') are read after `reparse`."""
    from spokenbench.core.evaluation.preparation import RunSettings
    from spokenbench.core.evaluation.runner import evaluate

    stub.state.answer_fn = lambda body: "Let me think.\n\n**Answer:** option (b)"
    evaluate(audio_project, RunSettings(model="vllm:m", base_url=stub.openai_url, mode="audio"))
    with audio_project.transaction() as conn:  # as an older parser stored them
        conn.execute("UPDATE responses SET parsed_letter = NULL, parse_status = 'failed', mapped_option = NULL")
    result = cli("reparse", audio_project.path, "--json")
    assert result.code == 0 and result.json()["parse_counts"] == {"ok": 6}
    rows = audio_project.conn.execute("SELECT parsed_letter, parse_status FROM responses").fetchall()
    assert {tuple(r) for r in rows} == {("B", "ok")}
