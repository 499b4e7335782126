"""JSON from others within bounds: depth, containers, number sizes and length are refused with a message saying
which bound, never a RecursionError or a ValueError from int(); brackets inside strings are text."""

import pytest

from spokenbench.core.foundation.bounded_json import JsonBoundError, loads_bounded


def parse(text, **bounds):
    return loads_bounded(text, **({"max_chars": 10_000_000, "max_depth": 4, "max_containers": 100} | bounds))


def test_well_formed_json_within_the_bounds_is_parsed_as_json_loads_would():
    text = '{"a": [1, 2.5, -3, "x[{"], "b": {"c": null, "d": true}, "e": "\\"]]]]]"}'
    assert parse(text) == {"a": [1, 2.5, -3, "x[{"], "b": {"c": None, "d": True}, "e": '"]]]]]'}
    assert parse("[" * 4 + "]" * 4) == [[[[]]]]
    assert parse(str(2**70)) == 2**70  # a field's own check decides the range (and names the field)


@pytest.mark.parametrize(
    ("text", "bounds", "message"),
    [
        ("[" * 100_000 + "]" * 100_000, {"max_containers": 10**6}, "nested more than 4 levels"),
        ("[" * 5 + "]" * 5, {}, "nested more than 4 levels"),
        ("[" + ",".join(["[]"] * 200) + "]", {}, "201 lists and objects"),
        ("7" * 5000, {}, "5,000 digits"),
        ("-" + "7" * 41, {}, "41 digits"),
        ("1." + "1" * 60, {}, "62 characters"),
        ("1e999", {}, "too large"),
        ("[NaN]", {}, "NaN"),
        ("[-Infinity]", {}, "-Infinity"),
        ('"' + "x" * 100 + '"', {"max_chars": 50}, "102 characters long"),
        ('{"a": }', {}, "not valid JSON"),
    ],
)
def test_json_beyond_a_bound_is_refused_saying_which(text, bounds, message):
    with pytest.raises(JsonBoundError, match=message):
        parse(text, **bounds)


def test_brackets_inside_strings_count_neither_for_depth_nor_containers():
    text = '["' + "[{" * 10_000 + '\\"' + '"]'
    assert parse(text, max_containers=1, max_depth=1) == ["[{" * 10_000 + '"']
