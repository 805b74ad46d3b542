"""Issue 45 (s59): a value swap after a question about the earlier rows replaces the one
value the conversation carried into the statement, everywhere it is compared. "how many
trips did each of them make there?" after "Which drivers drove to Leeds?" keeps 'Leeds'
in the earlier rows' sub-query and on the new rows; "switch to York" must change both,
as the question spelled out says York of both. The swap was refused as "could replace
more than one earlier value" although the two were one value said once."""

from __future__ import annotations

import pytest

from services.sql.catalog import Catalog, ColumnInfo, TableInfo
from services.sql.conversation import FollowUpError, Prior, Relation, edited


def _col(name: str, data_type: str = "integer", samples: tuple[str, ...] = ()) -> ColumnInfo:
    return ColumnInfo(name, data_type, True, sample_values=samples)


TRIPS = Catalog(
    "haulage",
    (
        TableInfo(
            "public",
            "trips",
            columns=(
                _col("trip_id"),
                _col("driver", "text", ("ann", "bo")),
                _col("town", "text", ("Leeds", "York", "Hull")),
                _col("origin", "text", ("Leeds", "York", "Hull")),
            ),
            primary_key=("trip_id",),
        ),
    ),
)
# the earlier rows (drivers who drove to Leeds), counted per driver there
CARRIED = (
    "SELECT t0.driver AS driver, COUNT(*) AS count FROM public.trips AS t0 WHERE t0.driver IN "
    "(SELECT earlier.driver FROM (SELECT DISTINCT earlier_t0.driver AS driver FROM "
    "public.trips AS earlier_t0 WHERE (earlier_t0.town = 'Leeds')) AS earlier) "
    "AND t0.town = 'Leeds' GROUP BY t0.driver"
)


def _swap(sql: str, value: str) -> str:
    return edited(sql, Prior(sql, Relation.VALUE_SWAP, value=value), TRIPS)[0]


def test_one_value_carried_into_a_sub_query_is_swapped_everywhere():
    sql = _swap(CARRIED, "York")
    assert sql.count("'York'") == 2 and "'Leeds'" not in sql


@pytest.mark.parametrize(
    "sql",
    [
        # two values of one column: which one the new value replaces is unsaid
        "SELECT COUNT(*) FROM trips WHERE town = 'Leeds' AND trip_id IN "
        "(SELECT trip_id FROM trips WHERE town = 'Hull')",
        # one value of two columns (where to, where from): either could be meant
        "SELECT COUNT(*) FROM trips WHERE town = 'Leeds' AND origin = 'Leeds'",
    ],
)
def test_values_that_are_not_one_value_carried_are_not_swapped(sql: str):
    with pytest.raises(FollowUpError, match="more than one"):
        _swap(sql, "York")
