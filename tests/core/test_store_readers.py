"""The small store functions that replaced SQL written inline by their callers: project settings kept in
project_meta, and item lookups by language, key and part."""

import pytest

from spokenbench.core.domain.items import Item, Option
from spokenbench.core.store.items import (
    insert_items,
    item_id_by_key,
    item_part_text,
    items_in_languages,
    option_letters,
)
from spokenbench.core.store.meta import delete_meta, read_meta, write_meta


def _item(source_id: str, language: str, question: str = "What is 2 + 2?") -> Item:
    return Item("test", source_id, language, question, (Option("B", "four"), Option("A", "five")), "B")


@pytest.fixture
def stored(project):
    with project.transaction() as conn:
        ids = insert_items(conn, [_item("q1", "en"), _item("q1", "zh", "2 加 2 等于几？"), _item("q2", "ko")])
    return project, ids


def test_meta_values_are_written_replaced_and_deleted(project):
    assert read_meta(project.conn, "some_setting") is None
    with project.transaction() as conn:
        write_meta(conn, "some_setting", "first")
        write_meta(conn, "some_setting", "second")
        write_meta(conn, "empty_setting", "")
    assert read_meta(project.conn, "some_setting") == "second"
    assert read_meta(project.conn, "empty_setting") == ""  # stored, so not the same as absent
    with project.transaction() as conn:
        delete_meta(conn, "some_setting")
        delete_meta(conn, "never_stored")
    assert read_meta(project.conn, "some_setting") is None


def test_items_in_languages_filters_and_keeps_id_order(stored):
    project, ids = stored
    assert [item_id for item_id, _ in items_in_languages(project.conn)] == ids
    assert [item_id for item_id, _ in items_in_languages(project.conn, ())] == ids
    assert [item.language for _, item in items_in_languages(project.conn, ["ko", "en"])] == ["en", "ko"]
    assert list(items_in_languages(project.conn, ["fr"])) == []


def test_item_lookups_by_key_and_part(stored):
    project, ids = stored
    assert item_id_by_key(project.conn, "test", "q1", "zh") == ids[1]
    assert item_id_by_key(project.conn, "test", "q1", "ko") is None
    assert item_part_text(project.conn, ids[1], "question") == "2 加 2 等于几？"
    assert item_part_text(project.conn, ids[0], "option_A") == "five"
    assert item_part_text(project.conn, ids[0], "option_C") is None
    assert item_part_text(project.conn, 999, "question") is None
    assert option_letters(project.conn, ids[0]) == ["B", "A"]  # original order, not alphabetical


def test_cli_items_lists_one_language(cli, stored):
    project, _ = stored
    result = cli("items", project.path, "--language", "zh", "--json")
    assert result.code == 0
    assert [(row["id"], row["language"]) for row in result.json()] == [("q1", "zh")]
    assert len(cli("items", project.path, "--json").json()) == 3
