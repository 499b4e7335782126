"""The parser's outputs pinned on 1,891 varied replies. Made faster for issue 14 (a batch of 100,800 results is
parsed as it is imported), it must still parse every reply exactly as before.

`parsing_golden.jsonl` holds what parse_answer returned, before it was made faster, for replies of every
style: seeded random compositions of cue words in four languages, boxed, bold and bracketed letters, negations,
letter lists, conditionals, corrections, option texts (some misspelt), refusals and neutral options, full-width
and zero-width characters, long replies; the string literals of the parsing tests; and the corpus's replies
against options they do not name. Its first line holds the option sets the cases name and the parser version
the outputs are pinned for; a reply a later version parses differently keeps its earlier output as `parsed_v1`
(issue 25: three one-line self-corrections, "Answer: C. No wait, B.", now read as their last answer), so a
stored parse of either version can be told apart and reproduced."""

import json
from pathlib import Path

import pytest

from spokenbench.core.evaluation.parsing import PARSER_VERSION, parse_answer

GOLDEN = Path(__file__).with_name("parsing_golden.jsonl")


def _cases():
    header, *lines = GOLDEN.read_text(encoding="utf-8").splitlines()
    option_sets = json.loads(header)["option_sets"]
    return option_sets, [json.loads(line) for line in lines]


def test_the_pinned_outputs_are_this_parser_versions():
    header = json.loads(GOLDEN.read_text(encoding="utf-8").splitlines()[0])
    assert header["parser_version"] == PARSER_VERSION
    _, cases = _cases()
    changed = [case for case in cases if "parsed_v1" in case]
    assert len(changed) == 3  # version 2 changed only one-line self-corrections, from ambiguous to the last
    assert all(case["parsed_v1"][1] == "ambiguous" and case["parsed"][1] == "ok" for case in changed)


def test_every_pinned_reply_parses_as_before():
    option_sets, cases = _cases()
    assert len(cases) > 1800
    changed = []
    for case in cases:
        parsed = parse_answer(case["raw"], case["letters"], option_sets[case["options"]], *case["neutral"])
        if [parsed.letter, parsed.status, parsed.detail] != case["parsed"]:
            changed.append((case["raw"], case["parsed"], parsed))
    assert not changed, f"{len(changed)} replies parse differently, e.g. {changed[:3]}"


FORMS = [  # (the reply the prompts ask for, or a bare letter; the same answer in a form the full rules read)
    ("Answer: [[{}]]", "answer: [[{}]]"),
    ("[[{}]]", "[[ {} ]]"),
    ("Answer: {}", "ANSWER: {}"),
    ("{}", "({})"),
]


@pytest.mark.parametrize(("letters", "neutral_letter"), [("ABCD", None), ("AB", None), ("ABC", "D"), ("ABCD", "E")])
def test_the_instructed_reply_parses_as_the_full_rules_read_it(letters, neutral_letter):
    options = {letter: f"text {letter}" for letter in letters}
    neutral_text = "Cannot be determined" if neutral_letter else None
    for letter in "ABCDEFGHIJKLMNOPQRSTUVWXYZ":
        for quick, full in FORMS:
            assert parse_answer(quick.format(letter), letters, options, neutral_letter, neutral_text) == parse_answer(
                full.format(letter), letters, options, neutral_letter, neutral_text
            ), (quick, letter)
