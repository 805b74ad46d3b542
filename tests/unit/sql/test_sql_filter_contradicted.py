"""A narrowing that says another value for a column the earlier statement compared
with one (conversation._conditions): "only the ones with 1 engine" after "planes with 4
engines" replaces the value; kept, the two conditions would answer with no rows."""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from services.sql.conversation._conditions import Linked, with_conditions
from tests.unit.sql.statements import assert_same_sql

FOUR = "SELECT COUNT(*) FROM planes AS t0 WHERE t0.engines = 4 AND t0.year > 2000"


def _linked(condition: str) -> Linked:
    tree = sqlglot.parse_one(f"SELECT 1 FROM planes AS t0 WHERE {condition}", dialect="postgres")
    where = tree.args["where"].this
    columns = frozenset((c.table, c.name) for c in where.find_all(exp.Column))
    return Linked((where,), (), columns)


def test_another_value_for_a_compared_column_replaces_it() -> None:
    assert_same_sql(
        with_conditions(FOUR, _linked("t0.engines = 1")),
        "SELECT COUNT(*) FROM planes AS t0 WHERE (t0.year > 2000) AND (t0.engines = 1)",
    )


def test_a_condition_that_can_hold_with_the_earlier_one_is_added() -> None:
    # the same value, another comparison, another column: all narrow the rows
    for condition in ("t0.engines = 4", "t0.engines > 1", "t0.seats = 100"):
        assert_same_sql(
            with_conditions(FOUR, _linked(condition)),
            f"SELECT COUNT(*) FROM planes AS t0 WHERE (t0.engines = 4) AND (t0.year > 2000) "
            f"AND ({condition})",
        )
    # leaving out the rows of another value keeps the earlier condition
    assert_same_sql(
        with_conditions(FOUR, _linked("t0.engines = 1"), exclude=True),
        "SELECT COUNT(*) FROM planes AS t0 WHERE (t0.engines = 4) AND (t0.year > 2000) "
        "AND NOT (t0.engines = 1)",
    )
