"""Hugging Face `datasets` tables imported without the `datasets` package: a `save_to_disk` folder and a single
.arrow file (Arrow IPC stream), Global-MMLU-Lite's columns mapped as for Parquet; broken ones named, exit 2."""

import pytest
from support import gmmlu_rows, save_to_disk, write_arrow_stream


def hf_rows(count):
    """Global-MMLU-Lite rows with the types `datasets` gives them (is_annotated a bool)."""
    return [{**row, "is_annotated": True} for row in gmmlu_rows(count)]


def test_a_save_to_disk_folder_imports(cli, project, tmp_path):
    folder = save_to_disk(tmp_path / "global-mmlu-lite" / "ko", hf_rows(6), shards=2)
    result = cli("import", project.path, folder, "--format", "gmmlu-lite", "--json")
    assert result.code == 0, result.err
    assert result.json()[0]["imported"] == 6 and result.json()[0]["languages"] == ["ko"]  # from the folder name
    again = cli("import", project.path, folder, "--format", "gmmlu-lite", "--skip-existing", "--json")
    assert again.code == 0 and again.json()[0]["skipped"] == 6


def test_a_single_arrow_file_imports(cli, project, tmp_path):
    file = write_arrow_stream(tmp_path / "data-00000-of-00001.arrow", hf_rows(4))
    result = cli("import", project.path, file, "--format", "gmmlu-lite", "--language", "en", "--json")
    assert result.code == 0, result.err
    assert result.json()[0]["imported"] == 4
    items = cli("items", project.path, "--json").json()
    assert [i["question"] for i in items] == [f"Question number {n}?" for n in range(4)]


def test_a_dataset_dict_folder_names_its_splits(cli, project, tmp_path):
    root = tmp_path / "saved"
    save_to_disk(root / "test", hf_rows(2))
    save_to_disk(root / "dev", hf_rows(2))
    (root / "dataset_dict.json").write_text('{"splits": ["dev", "test"]}', encoding="utf-8")
    result = cli("import", project.path, root, "--format", "gmmlu-lite", "--language", "en")
    assert result.code == 2 and "DatasetDict" in result.err and str(root / "test") in result.err


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda f: (f / "data-00000-of-00001.arrow").write_bytes(b"PAR1 not arrow"), "is not an Arrow stream file"),
        (lambda f: (f / "state.json").write_text('{"_data_files": [{"filename": "../x.arrow"}]}'), "plain .arrow"),
        (lambda f: (f / "state.json").write_text("[]"), "is not a datasets state.json"),
        (lambda f: (f / "data-00000-of-00001.arrow").unlink(), "file not found"),
    ],
)
def test_damaged_datasets_are_named(cli, project, tmp_path, damage, message):
    folder = save_to_disk(tmp_path / "en", hf_rows(2))
    damage(folder)
    result = cli("import", project.path, folder, "--format", "gmmlu-lite")
    assert result.code == 2 and message in result.err, result.err
    assert "Traceback" not in result.err
    assert cli("info", project.path, "--json").json()["items"]["total"] == 0
