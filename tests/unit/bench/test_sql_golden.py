"""The execution-accuracy comparison and the golden set's shape."""

from __future__ import annotations

from decimal import Decimal

from services.bench.sql_golden import load_golden, normalize, results_match
from tandem.v1 import common_pb2 as cpb


def test_extra_columns_and_column_order_do_not_matter():
    gold = [("a", Decimal(1)), ("b", Decimal(2))]
    predicted = [(Decimal(2), "b", "x"), (Decimal(1), "a", "y")]
    assert results_match(gold, predicted, ordered=False)
    assert not results_match(gold, predicted, ordered=True)
    assert results_match(gold, list(reversed(predicted)), ordered=True)


def test_values_rows_and_counts_must_match():
    gold = [("a", Decimal(1))]
    assert not results_match(gold, [("a", Decimal(2))], ordered=False)
    assert not results_match(gold, [("a",)], ordered=False)
    assert not results_match(gold, [("a", Decimal(1)), ("a", Decimal(1))], ordered=False)
    assert results_match([], [], ordered=True)


def test_a_column_cannot_stand_for_two_gold_columns():
    assert not results_match([(1, 1)], [(1, 2)], ordered=False)


def test_numbers_compare_at_four_places():
    assert normalize(cpb.SqlValue(decimal_value="2.5")) == Decimal("2.5000")
    assert normalize(cpb.SqlValue(double_value=1.00001)) == normalize(
        cpb.SqlValue(decimal_value="1.0000")
    )
    assert normalize(cpb.SqlValue(int_value=3)) == normalize(cpb.SqlValue(decimal_value="3.00"))
    assert normalize(cpb.SqlValue()) is None


def test_golden_set_shape():
    golden = load_golden()
    assert len(golden.questions) >= 60
    assert len({q.id for q in golden.questions}) == len(golden.questions)
    hard = {"join", "date", "group_by", "ratio"}
    assert sum(1 for q in golden.questions if hard & set(q.categories)) * 2 >= len(golden.questions)
    assert {q.split for q in golden.questions} == {"dev", "heldout"}
