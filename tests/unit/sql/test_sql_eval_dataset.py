"""The dataset eval's scorer (defog sql-eval's rule), its value normalisation, the order
rule, the dataset loader and the summary counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from google.protobuf import struct_pb2

from services.bench.sql_dataset import (
    cell,
    load_dataset,
    matches,
    order_sensitive,
    render,
    summarize,
)
from tandem.v1 import common_pb2 as cpb

GOLD = [("USA", 14.0, 268600.0), ("UK", 3.0, 1200.5)]


def test_identical_results_match():
    assert matches(GOLD, GOLD)


def test_extra_predicted_columns_and_any_column_order_are_allowed():
    predicted = [(268600.0, "x", "USA", 14.0), (1200.5, "y", "UK", 3.0)]
    assert matches(GOLD, predicted)


def test_a_missing_gold_column_fails():
    assert not matches(GOLD, [("USA", 14.0), ("UK", 3.0)])


def test_floats_match_within_a_relative_1e_5():
    close = [("USA", 14.0, 268600.0 * (1 + 9e-6)), ("UK", 3.0, 1200.5)]
    far = [("USA", 14.0, 268600.0 * (1 + 2e-5)), ("UK", 3.0, 1200.5)]
    assert matches(GOLD, close)
    assert not matches(GOLD, far)


def test_a_wrong_value_fails():
    assert not matches(GOLD, [("USA", 14.0, 268600.0), ("UK", 4.0, 1200.5)])


def test_a_row_count_mismatch_fails():
    assert not matches(GOLD, GOLD[:1])
    assert not matches(GOLD[:1], GOLD)


def test_nulls_must_line_up():
    gold = [("a", None), ("b", 2.0)]
    assert matches(gold, [("b", 2.0), ("a", None)])
    assert not matches(gold, [("a", 2.0), ("b", None)])
    assert not matches(gold, [("a", 0.0), ("b", 2.0)])


def test_values_must_share_rows_not_just_columns():
    gold = [("a", 1.0), ("b", 2.0)]
    # Each column's values are right, but paired wrongly across rows.
    assert not matches(gold, [("a", 2.0), ("b", 1.0)])


def test_duplicate_rows_are_dropped_before_the_row_check():
    gold = [("a", 1.0), ("a", 1.0), ("b", 2.0)]
    # Same multisets per column; duplicates collapse on both sides.
    assert matches(gold, [("b", 2.0), ("a", 1.0), ("a", 1.0)])
    # A different duplicate on the predicted side changes the column multisets.
    assert not matches(gold, [("a", 1.0), ("b", 2.0), ("b", 2.0)])


def test_duplicates_of_the_paired_columns_collapse_even_when_extras_differ():
    gold = [("a",), ("a",)]
    assert matches(gold, [("a", 1.0), ("a", 2.0)])


def test_row_order_counts_only_when_asked():
    reversed_rows = list(reversed(GOLD))
    assert matches(GOLD, reversed_rows, ordered=False)
    assert not matches(GOLD, reversed_rows, ordered=True)
    assert matches(GOLD, GOLD, ordered=True)


def test_an_empty_gold_result_matches_only_an_empty_prediction():
    assert matches([], [])
    assert not matches([], [("x",)])


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Return the names, in order of signup date", True),
        ("SORT them by amount", True),
        ("Arrange from highest to lowest", True),
        ("Return the names ordered by date", False),
        ("Return the names sorted by date", False),
        ("Return the top 3 by orders placed", False),
    ],
)
def test_order_sensitivity_is_the_whole_word(question, expected):
    assert order_sensitive(question) is expected


def test_the_order_by_category_is_order_sensitive():
    assert order_sensitive("anything", "order_by")


def test_cells_normalise_numbers_times_and_nulls():
    ts = cpb.SqlValue()
    ts.timestamp_value.FromJsonString("2024-05-01T13:45:00Z")
    values = [
        (cpb.SqlValue(null_value=struct_pb2.NULL_VALUE), None),
        (cpb.SqlValue(int_value=14), 14.0),
        (cpb.SqlValue(decimal_value="268600.50"), 268600.5),
        (cpb.SqlValue(double_value=0.5), 0.5),
        (cpb.SqlValue(bool_value=True), True),
        (cpb.SqlValue(date_value="2024-05-01"), "2024-05-01"),
        (cpb.SqlValue(datetime_value="2024-05-01T13:45:00"), "2024-05-01T13:45:00"),
        (ts, "2024-05-01T13:45:00+00:00"),
        (cpb.SqlValue(string_value="USA"), "USA"),
    ]
    for value, expected in values:
        assert cell(value) == expected and type(cell(value)) is type(expected)


def test_an_integer_matches_the_same_numeric():
    assert matches(
        [(cell(cpb.SqlValue(int_value=3)),)], [(cell(cpb.SqlValue(decimal_value="3.0")),)]
    )


def test_text_never_equals_a_number():
    assert not matches([("3.0",)], [(3.0,)])
    assert not matches([(True,)], [(1.0,)])


def test_a_predicted_column_pairs_with_one_gold_column_only():
    gold = [(1.0, 1.0), (2.0, 2.0)]
    assert not matches(gold, [(1.0,), (2.0,)])
    assert matches(gold, [(1.0, 1.0), (2.0, 2.0)])


def _dataset(root: Path, questions: list[dict[str, object]]) -> Path:
    (root / "databases").mkdir(parents=True)
    (root / "databases" / "shop.sql").write_text("CREATE TABLE t (x int);\n")
    (root / "questions.jsonl").write_text("\n".join(json.dumps(q) for q in questions) + "\n")
    return root


def test_load_dataset_reads_questions_and_gold_variants(tmp_path):
    root = _dataset(
        tmp_path,
        [
            {
                "id": "advanced-3",
                "db": "shop",
                "category": "keywords_ratio",
                "question": "q?",
                "instructions": "ratio = a / b",
                "gold_sql": ["SELECT 1", "SELECT 2"],
            }
        ],
    )
    dataset = load_dataset(root)
    (item,) = dataset.questions
    assert dataset.databases == ("shop",)
    assert item.gold_sql == ("SELECT 1", "SELECT 2") and item.instructions == "ratio = a / b"
    assert item.subset == "advanced"


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ({"id": "b-1", "db": "nowhere", "category": "c", "question": "q", "gold_sql": ["x"]},
         "database 'nowhere' has no .sql file"),
        ({"id": "b-1", "db": "shop", "category": "c", "question": "q", "gold_sql": []},
         "gold_sql is empty"),
        ({"id": "b-1", "db": "shop", "question": "q", "gold_sql": ["x"]}, "not a question"),
    ],
)  # fmt: skip
def test_load_dataset_names_the_bad_line(tmp_path, question, expected):
    root = _dataset(tmp_path, [question])
    with pytest.raises(ValueError, match=expected) as err:
        load_dataset(root)
    assert "questions.jsonl:1" in str(err.value)


def test_summary_counts_answered_correct_and_refused_per_group():
    def record(id_: str, db: str, outcome: str, correct: bool, ms: float) -> dict[str, object]:
        return {"id": id_, "db": db, "set": id_.split("-", maxsplit=1)[0], "category": "c" + db,
                "outcome": outcome, "correct": correct, "latency_ms": ms}  # fmt: skip

    report = summarize(
        [
            record("basic-0", "a", "ANSWERED", True, 10.0),
            record("basic-1", "a", "ANSWERED", False, 20.0),
            record("advanced-0", "b", "UNANSWERABLE", False, 30.0),
            record("advanced-1", "b", "ATTEMPTS_EXHAUSTED", False, 40.0),
        ]
    )
    assert (report["questions"], report["answered"], report["correct"]) == (4, 2, 1)
    assert (report["refused"], report["exhausted"], report["accuracy"]) == (1, 1, 0.25)
    assert report["by_database"]["a"]["accuracy"] == 0.5
    # right or refused: precision is correct over answered, beside accuracy
    assert (report["wrong"], report["precision"]) == (1, 0.5)
    assert report["by_database"]["b"]["precision"] == 0.0  # nothing answered there
    assert report["by_set"]["advanced"]["refused"] == 1
    assert (report["latency_ms_p50"], report["latency_ms_p95"]) == (30.0, 40.0)
    text = render(report)
    assert "overall" in text and "basic" in text and "ca" in text
    assert "precision" in text and "no statistics (not analysed)" in text
