"""The multiple-choice report's tables are computed and written without pandas (issue 28, round 4): every
table file must keep the bytes pandas wrote. The digests below were taken from the tables the code before that
change (commit 8a597ee) wrote for the same cases: a subject column, names that need CSV quoting, missing
factor combinations (empty Δ cells), one model, failures as a category, bootstrap intervals."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from metrics_helpers import random_design

from spokenbench.core.metrics.analysis import analyze_mcq
from spokenbench.core.metrics.report import Report, _mcq_tables

FACTORS = ["language", "accent", "gender", "order"]


def case_table(case: str) -> tuple[pd.DataFrame, dict]:
    """A responses table and the analysis options of one case."""
    if case == "subjects-quoted-names-bootstrap":
        table = random_design(np.random.default_rng(5), n_questions=5, models=("m,1", 'm"2', "m3"), failure_rate=0.2)
        table["subject"] = np.where(table["question_id"].isin(["q0", "q3"]), 'law, "civil"', "math")
        table["cultural_label"] = np.where(table["question_id"] == "q1", "CS", "CA")
        return table, {"n_resamples": 30}
    if case == "missing-combinations":
        table = random_design(np.random.default_rng(7), n_questions=4, models=("b", "a"))
        dropped = (table["model"] == "a") & (table["language"] == "zh") & (table["gender"] == "m")
        dropped |= (table["question_id"] == "q2") & (table["order"] == "reversed")
        return table[~dropped].reset_index(drop=True), {"n_resamples": 0}
    if case == "one-model-failures-as-category":
        table = random_design(np.random.default_rng(9), n_questions=3, models=("solo",), failure_rate=0.3, nested=False)
        return table, {"n_resamples": 0, "failures_as_category": True}
    raise ValueError(case)


CASES = ["subjects-quoted-names-bootstrap", "missing-combinations", "one-model-failures-as-category"]
TABLES_BEFORE = {  # sha256[:16] of each file, from commit 8a597ee
    "subjects-quoted-names-bootstrap": {
        "accuracy_by_accent.csv": "543d6b4b0a5046fd",
        "accuracy_by_accent.md": "e145aaee7a14bfad",
        "accuracy_by_accent.tex": "ada658b33791bc5e",
        "accuracy_by_factor_level.csv": "4d884aa4185de0d6",
        "accuracy_by_factor_level.md": "2ed644cebf0b9bf0",
        "accuracy_by_factor_level.tex": "7bbeccb863abfb7a",
        "accuracy_by_gender.csv": "1263e8ba55bc22d5",
        "accuracy_by_gender.md": "4421ffd27cdc2ee8",
        "accuracy_by_gender.tex": "30216e75ee1304da",
        "accuracy_by_language.csv": "83e2b14130db1cbe",
        "accuracy_by_language.md": "931e88d8d4e47ed1",
        "accuracy_by_language.tex": "1384f537c022d4ee",
        "accuracy_by_order.csv": "28c5c35d881a3057",
        "accuracy_by_order.md": "ed7ce2286dc8d8d3",
        "accuracy_by_order.tex": "7fab6f5b9224143e",
        "accuracy_by_subject.csv": "7f430125004b3e63",
        "accuracy_by_subject.md": "5f633eb27ab422a7",
        "accuracy_by_subject.tex": "2a2fd2b90dea2fe0",
        "apes_by_stratum.csv": "1e5694a58601fdd3",
        "apes_by_stratum.md": "9f3da20f82543dbc",
        "apes_by_stratum.tex": "7d25d239d2ce3f67",
        "entropy_cs_ca.csv": "97efcd2d4993c729",
        "entropy_cs_ca.md": "ac20448f4dd44e3e",
        "entropy_cs_ca.tex": "68cf7e56ad851c4f",
        "level_entropy_by_level.csv": "8d4285180c5a4802",
        "level_entropy_by_level.md": "f4a0f7b71c7371c0",
        "level_entropy_by_level.tex": "ce6197216a62998c",
        "mcnemar_original_vs_reversed.csv": "7b427759c0f02f18",
        "mcnemar_original_vs_reversed.md": "409d947b3a3d9cfe",
        "mcnemar_original_vs_reversed.tex": "cad372363864af88",
        "model_ranking.csv": "4ba3cebdb829c9fc",
        "model_ranking.md": "14b9747c1558c559",
        "model_ranking.tex": "705ee7ed244f246b",
        "per_question.csv": "576fd6acc3b4c3bc",
        "permutation_voting.csv": "1e8cdbdbffe914b8",
        "permutation_voting.md": "667b477cdcb00ac6",
        "permutation_voting.tex": "94adf8b270c0d4dd",
        "ranking_kendall_tau.csv": "0c63c4c663ddaad4",
        "ranking_kendall_tau.md": "cdd7cd069ba550a3",
        "ranking_kendall_tau.tex": "6d4e4569ba0ccce2",
        "robustness_by_factor.csv": "d58bab103844bd85",
        "robustness_by_factor.md": "bfdb03b56beb692a",
        "robustness_by_factor.tex": "536b7b12226aedd2",
        "selection_bias_by_position.csv": "84c52dca727c2151",
        "selection_bias_by_position.md": "4bbb661e0845a50c",
        "selection_bias_by_position.tex": "6544f297f50f1a40",
        "summary.csv": "bc8db7aec3ef056a",
        "summary.md": "d06f1542220cd0a2",
        "summary.tex": "21f737872b272665",
    },
    "missing-combinations": {
        "accuracy_by_accent.csv": "7bb7fa616cea064f",
        "accuracy_by_accent.md": "8c67db3005f35c03",
        "accuracy_by_accent.tex": "a60613e09f86d87a",
        "accuracy_by_factor_level.csv": "fc8d8485d6b7ab7b",
        "accuracy_by_factor_level.md": "475944267e65f6c7",
        "accuracy_by_factor_level.tex": "ede11b9c0eec9083",
        "accuracy_by_gender.csv": "9cb12619e2fab575",
        "accuracy_by_gender.md": "972defe7908e70a4",
        "accuracy_by_gender.tex": "5d7f19aec32256f8",
        "accuracy_by_language.csv": "ee283d5fdfe6032a",
        "accuracy_by_language.md": "aa75550da98879f3",
        "accuracy_by_language.tex": "c5bbdb894bda6999",
        "accuracy_by_order.csv": "cb687c25fb3af893",
        "accuracy_by_order.md": "8991945493b36cae",
        "accuracy_by_order.tex": "3b8140b8da4ef64c",
        "apes_by_stratum.csv": "23af31264c210f1c",
        "apes_by_stratum.md": "baeda6223f32ee2b",
        "apes_by_stratum.tex": "ab141a90511fdc57",
        "level_entropy_by_level.csv": "48fd25106e6068e6",
        "level_entropy_by_level.md": "46e0730d6e1e547b",
        "level_entropy_by_level.tex": "e64ae5256ad1e29a",
        "mcnemar_original_vs_reversed.csv": "5ff706b1e47f1467",
        "mcnemar_original_vs_reversed.md": "3386b26b4f070bec",
        "mcnemar_original_vs_reversed.tex": "c7048ec36592b851",
        "model_ranking.csv": "f12630f8fb75e6b9",
        "model_ranking.md": "c61dd045e706071f",
        "model_ranking.tex": "e4974f65af56e56c",
        "per_question.csv": "d5811df968f20bdb",
        "permutation_voting.csv": "da8922333c33824e",
        "permutation_voting.md": "8c810f03ca127763",
        "permutation_voting.tex": "91176bdb69967b06",
        "ranking_kendall_tau.csv": "f0a079436778844a",
        "ranking_kendall_tau.md": "592ae2e80aaa5962",
        "ranking_kendall_tau.tex": "ebecb7047d524c25",
        "robustness_by_factor.csv": "93200673825661f5",
        "robustness_by_factor.md": "735eac36fbda9eab",
        "robustness_by_factor.tex": "9f4dedbb1c260fcf",
        "selection_bias_by_position.csv": "47694018e22bf47b",
        "selection_bias_by_position.md": "4c5f01f73982eb59",
        "selection_bias_by_position.tex": "6fc6c43ac348a356",
        "summary.csv": "bd0e567121c2a3c5",
        "summary.md": "f523558e1e9104b0",
        "summary.tex": "44c4e840fede1fd4",
    },
    "one-model-failures-as-category": {
        "accuracy_by_accent.csv": "ba51f32194f420c5",
        "accuracy_by_accent.md": "ea1093e7f1dd3c53",
        "accuracy_by_accent.tex": "cc43f942d231530d",
        "accuracy_by_factor_level.csv": "e49685a2f7bcfe9d",
        "accuracy_by_factor_level.md": "2c16e6641cce7d2e",
        "accuracy_by_factor_level.tex": "4973796b457a042c",
        "accuracy_by_gender.csv": "19645bf3c709e360",
        "accuracy_by_gender.md": "395fd9bb578d1c28",
        "accuracy_by_gender.tex": "ea00ad055c7732dc",
        "accuracy_by_language.csv": "633ba673efefd7eb",
        "accuracy_by_language.md": "27b2e881b912515b",
        "accuracy_by_language.tex": "713c731930a43ed4",
        "accuracy_by_order.csv": "393efaf6020f4e5c",
        "accuracy_by_order.md": "c6873a424c3428de",
        "accuracy_by_order.tex": "f99f2c52dea25fda",
        "apes_by_stratum.csv": "f2eb313fbb9c20f6",
        "apes_by_stratum.md": "a2fe888286198078",
        "apes_by_stratum.tex": "90ab606081f539e1",
        "level_entropy_by_level.csv": "9fc05f8dd2c2dd17",
        "level_entropy_by_level.md": "b081f23def80acce",
        "level_entropy_by_level.tex": "684fa61eee7ea7d7",
        "mcnemar_original_vs_reversed.csv": "a2d379dccd2a8b5f",
        "mcnemar_original_vs_reversed.md": "061ce919d7244635",
        "mcnemar_original_vs_reversed.tex": "2846a66749fb4f9d",
        "model_ranking.csv": "a0479abc1f3ba2a7",
        "model_ranking.md": "a5e1f453d4de3e36",
        "model_ranking.tex": "5aa1311123fb5159",
        "per_question.csv": "a2564e3e9fcaf635",
        "permutation_voting.csv": "b467af1142d5574c",
        "permutation_voting.md": "55270b7464ae16a5",
        "permutation_voting.tex": "2be5774f959528c9",
        "ranking_kendall_tau.csv": "f1bf46e65be5cac5",
        "ranking_kendall_tau.md": "b0f629d5aaa18eb0",
        "ranking_kendall_tau.tex": "6c9768fc08be81cb",
        "robustness_by_factor.csv": "2863a2f62032510d",
        "robustness_by_factor.md": "40397cf33fe23aab",
        "robustness_by_factor.tex": "066da8329cc361a4",
        "selection_bias_by_position.csv": "f1744b64cab8c4af",
        "selection_bias_by_position.md": "ca6ddda8dd3bea24",
        "selection_bias_by_position.tex": "39cdedd98a1219a2",
        "summary.csv": "c8ccbd263bea7f43",
        "summary.md": "474e8ca5cb74d771",
        "summary.tex": "dbfe02dee0d04fe9",
    },
}


def table_digests(case: str, folder) -> dict[str, str]:
    table, options = case_table(case)
    _mcq_tables(analyze_mcq(table, FACTORS, **options), Report(out_dir=folder, kind="mcq"))
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()[:16] for p in sorted(folder.iterdir())}


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_tables_keep_the_bytes_pandas_wrote(case, tmp_path):
    assert table_digests(case, tmp_path) == TABLES_BEFORE[case]


@pytest.mark.slow
def test_the_multiple_choice_tables_import_no_pandas(tmp_path):
    script = (
        "import sys; from pathlib import Path; from spokenbench.core.metrics.report import Report, _mcq_tables;"
        "from spokenbench.core.metrics.analysis import analyze_mcq;"
        "from spokenbench.core.metrics.loading import read_responses_columns;"
        f"analysis = analyze_mcq(read_responses_columns(sys.argv[1]), {FACTORS!r}, n_resamples=0);"
        "_mcq_tables(analysis, Report(out_dir=Path(sys.argv[2]), kind='mcq'));"
        "print('pandas' in sys.modules, len(list(Path(sys.argv[2]).iterdir())))"
    )
    source = tmp_path / "responses.csv"
    case_table("missing-combinations")[0].to_csv(source, index=False)
    (tmp_path / "out").mkdir()
    done = subprocess.run(
        [sys.executable, "-c", script, str(source), str(tmp_path / "out")], capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["False", "43"]


EDGE_COLUMNS = {
    "text": ["a,b", 'x"y', "", "line\nbreak", "plain", "ü"],
    "mixed": ["a", None, 1.5, np.nan, 3, 0.1 + 0.2],
    "floats": [1.0, np.nan, np.inf, -np.inf, -0.0, 0.1 + 0.2],
    "ints": np.arange(6),
    "float_array": np.array([1e-20, 123456789012.5, 2.0, 0.5, 1e300, -1.25e-7]),
    "bools": [True, False, True, True, False, False],
    "numbers_and_none": [1, None, 2.5, 4, None, 0],
    "all_none": [None] * 6,
    "unicode_array": np.array(["u", "v", "w", "x", "y", "z"]),
}


@pytest.mark.parametrize("rows", [6, 1, 0])
def test_plain_columns_are_written_as_pandas_writes_them(tmp_path, rows):
    from spokenbench.core.metrics.table_formats import column_table, write_table

    columns = {name: values[:rows] for name, values in EDGE_COLUMNS.items()}
    plain, frame = tmp_path / "plain", tmp_path / "frame"
    written = write_table(column_table(columns), plain, "t", caption="edge cases")
    write_table(pd.DataFrame(columns), frame, "t", caption="edge cases")
    for path in written:
        assert path.read_bytes() == (frame / path.name).read_bytes(), path.name
