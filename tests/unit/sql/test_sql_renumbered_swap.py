"""Issue 45 (s62, cold scripts): a value swap said as a number with its noun ("4
cylinder" after cars with 8 cylinders) replaces the number the earlier statement
compares with the column that noun names. A swap replaced stored text values only, so
``cylinders = 8`` could not become ``cylinders = 4`` and the turn was refused."""

from __future__ import annotations

import pytest

from services.sql.catalog import Catalog, ColumnInfo, TableInfo
from services.sql.conversation import FollowUpError, Prior, Relation, edited


def _col(name: str, data_type: str = "integer") -> ColumnInfo:
    return ColumnInfo(name, data_type, True)


CARS = Catalog(
    "garage",
    (
        TableInfo(
            "public",
            "cars",
            columns=(
                _col("car_id"),
                _col("cylinders"),
                _col("doors"),
                _col("weight", "numeric"),
                _col("year"),
            ),
            primary_key=("car_id",),
        ),
    ),
)
EIGHT = (
    "SELECT t0.year AS year, AVG(t0.weight) AS avg_weight FROM public.cars AS t0 "
    "WHERE (t0.cylinders = 8) GROUP BY t0.year"
)


@pytest.mark.parametrize("said", ["4 cylinder", "4 cylinders", "4-cylinder"])
def test_a_number_said_with_its_column_noun_replaces_the_compared_number(said: str):
    sql, _ = edited(EIGHT, Prior(EIGHT, Relation.VALUE_SWAP, value=said), CARS)
    assert "cylinders = 4" in sql and "= 8" not in sql


def test_a_number_whose_noun_names_no_compared_column_is_not_placed():
    # "4 doors": the statement compares no number with doors; nothing is replaced
    with pytest.raises(FollowUpError):
        edited(EIGHT, Prior(EIGHT, Relation.VALUE_SWAP, value="4 doors"), CARS)


def test_two_numbers_compared_with_the_named_column_are_not_guessed_between():
    between = EIGHT.replace("(t0.cylinders = 8)", "t0.cylinders >= 4 AND t0.cylinders <= 8")
    with pytest.raises(FollowUpError):
        edited(between, Prior(between, Relation.VALUE_SWAP, value="6 cylinder"), CARS)
