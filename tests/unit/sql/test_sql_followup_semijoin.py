"""A follow-up's condition on rows each earlier row has many of (a stadium's concerts, a
teacher's courses), or on a table two joins away through one the words never name (a car
maker's continent): placed as the earlier row's having one, so the rows counted or listed
stay those rows, once each (issue 45, s60). The linker is a fake of its seam; the joins it
reads must be key edges of the catalog's join graph."""

from __future__ import annotations

import pytest

from services.sql.catalog._catalog import Catalog, ColumnInfo, ForeignKeyInfo, TableInfo
from services.sql.conversation import FollowUpError, Prior, Relation, built
from tests.unit.sql.statements import assert_same_sql
from tests.unit.sql.test_sql_followup_conditions import Linker

STADIUM = TableInfo(
    "public", "stadium",
    columns=(
        ColumnInfo("stadium_id", "integer", False),
        ColumnInfo("name", "text", False, sample_values=("Balmoor", "Glebe Park")),
        ColumnInfo("capacity", "integer", False),
    ),
    primary_key=("stadium_id",),
)  # fmt: skip
CONCERT = TableInfo(
    "public", "concert",
    columns=(
        ColumnInfo("concert_id", "integer", False),
        ColumnInfo("stadium_id", "integer", False),
        ColumnInfo("year", "integer", False),
    ),
    primary_key=("concert_id",),
    foreign_keys=(ForeignKeyInfo(("stadium_id",), "public.stadium", ("stadium_id",)),),
)  # fmt: skip
FEATURE = TableInfo(
    "public", "feature",
    columns=(
        ColumnInfo("feature_id", "integer", False),
        ColumnInfo("feature_name", "text", False, sample_values=("Pool", "AirCon")),
    ),
    primary_key=("feature_id",),
)  # fmt: skip
HAS_FEATURE = TableInfo(
    "public", "property_feature",
    columns=(
        ColumnInfo("property_id", "integer", False),
        ColumnInfo("feature_id", "integer", False),
    ),
    foreign_keys=(
        ForeignKeyInfo(("property_id",), "public.property", ("property_id",)),
        ForeignKeyInfo(("feature_id",), "public.feature", ("feature_id",)),
    ),
)  # fmt: skip
PROPERTY = TableInfo(
    "public", "property",
    columns=(
        ColumnInfo("property_id", "integer", False),
        ColumnInfo("property_name", "text", False),
        ColumnInfo("room_count", "integer", False),
    ),
    primary_key=("property_id",),
)  # fmt: skip
CATALOG = Catalog("venues", (STADIUM, CONCERT, FEATURE, HAS_FEATURE, PROPERTY))

STADIUMS = "SELECT s.name, s.capacity FROM stadium AS s"
HOSTED_2015 = (
    "SELECT t0.stadium_id FROM stadium AS t0 JOIN concert AS t1 ON t1.stadium_id = t0.stadium_id "
    "WHERE t1.year = 2015"
)
BIG_HOMES = "SELECT p.property_name FROM property AS p WHERE p.room_count > 5"


def _with_feature(name: str) -> str:
    return (
        "SELECT t0.property_id FROM property AS t0 JOIN property_feature AS t1 "
        "ON t1.property_id = t0.property_id JOIN feature AS t2 ON t2.feature_id = t1.feature_id "
        f"WHERE t2.feature_name = '{name}'"
    )


async def _filtered(sql: str, condition: str, linker: Linker) -> str:
    return (await built(sql, Prior(sql, Relation.FILTER, condition=condition), CATALOG, linker))[0]


async def test_a_condition_on_rows_each_earlier_row_has_many_of_is_having_one():
    got = await _filtered(
        STADIUMS, "that hosted a concert in 2015", Linker({"stadium": HOSTED_2015})
    )
    assert_same_sql(
        got,
        "SELECT s.name, s.capacity FROM stadium AS s WHERE (EXISTS (SELECT 1 FROM concert AS "
        "f_t1 WHERE f_t1.stadium_id = s.stadium_id AND f_t1.year = 2015))",
    )


async def test_a_value_two_joins_away_is_reached_through_the_table_between():
    got = await _filtered(BIG_HOMES, "with a Pool", Linker({"propert": _with_feature("Pool")}))
    assert_same_sql(
        got,
        "SELECT p.property_name FROM property AS p WHERE (p.room_count > 5) AND (EXISTS (SELECT 1 "
        "FROM property_feature AS f_t1 JOIN feature AS f_t2 ON f_t2.feature_id = f_t1.feature_id "
        "WHERE f_t1.property_id = p.property_id AND f_t2.feature_name = 'Pool'))",
    )


async def test_a_count_of_the_earlier_rows_keeps_counting_them_once():
    count = "SELECT COUNT(*) FROM stadium AS s"
    got = await _filtered(count, "that hosted a concert in 2015", Linker({"stadium": HOSTED_2015}))
    assert got.upper().startswith("SELECT COUNT(*) FROM STADIUM AS S WHERE")
    assert "JOIN CONCERT" not in got.upper().split("EXISTS")[0]


@pytest.mark.parametrize(
    "linked",
    [
        # not a key edge of the join graph: two numbers that happen to be equal
        "SELECT t0.stadium_id FROM stadium AS t0 JOIN concert AS t1 ON t1.year = t0.capacity "
        "WHERE t1.year = 2015",
        # an outer join keeps stadiums with no concert: no "having one"
        "SELECT t0.stadium_id FROM stadium AS t0 LEFT JOIN concert AS t1 "
        "ON t1.stadium_id = t0.stadium_id WHERE t1.year = 2015",
        # a join on something other than column equalities
        "SELECT t0.stadium_id FROM stadium AS t0 JOIN concert AS t1 "
        "ON t1.stadium_id > t0.stadium_id WHERE t1.year = 2015",
    ],
)
async def test_a_reading_that_is_no_key_path_stays_refused(linked):
    with pytest.raises(FollowUpError, match="cannot take"):
        await _filtered(STADIUMS, "that hosted a concert in 2015", Linker({"stadium": linked}))


async def test_another_related_value_added_or_swapped_is_not_guessed():
    """ "and with AirCon?" after "only those with a Pool": a property may have both, so
    the words may add AirCon or put it in place of the Pool; neither is guessed."""
    pool = await _filtered(BIG_HOMES, "with a Pool", Linker({"propert": _with_feature("Pool")}))
    with pytest.raises(FollowUpError, match="add to the related rows"):
        await _filtered(pool, "with AirCon", Linker({"propert": _with_feature("AirCon")}))
