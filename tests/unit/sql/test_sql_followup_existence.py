"""A follow-up that keeps the earlier rows having any related row, no value said ("only
those with a concert", "just the ones that have at least one concert"): the linker's
plain join or count of at least one, placed as the earlier row's having one (issue 45,
s60). Words that say a value ("with a Pool") or a count above one are no existence and
keep their own reading. The linker is a fake of its seam; its joins must be key edges."""

from __future__ import annotations

import pytest

from services.sql.conversation import FollowUpError
from tests.unit.sql.statements import assert_same_sql
from tests.unit.sql.test_sql_followup_conditions import Linker
from tests.unit.sql.test_sql_followup_semijoin import BIG_HOMES, STADIUMS, _filtered

JOINED = (
    "SELECT DISTINCT t0.stadium_id, t0.name FROM stadium AS t0 "
    "JOIN concert AS t1 ON t1.stadium_id = t0.stadium_id"
)
AT_LEAST_ONE = (
    "SELECT t0.stadium_id, t0.name FROM stadium AS t0 JOIN concert AS t1 "
    "ON t1.stadium_id = t0.stadium_id GROUP BY t0.stadium_id, t0.name "
    "HAVING COUNT(DISTINCT t1.concert_id) >= 1"
)
HAVING_ONE = (
    "SELECT s.name, s.capacity FROM stadium AS s WHERE (EXISTS (SELECT 1 FROM concert AS f_t1 "
    "WHERE f_t1.stadium_id = s.stadium_id))"
)


@pytest.mark.parametrize(
    ("condition", "linked"),
    [
        ("with a concert", JOINED),
        ("that have at least one concert", AT_LEAST_ONE),
        ("which are used by any concert", JOINED),
    ],
)
async def test_having_a_related_row_is_a_semi_join(condition, linked):
    got = await _filtered(STADIUMS, condition, Linker({"stadium": linked}))
    assert_same_sql(got, HAVING_ONE)


async def test_the_earlier_conditions_stay_beside_the_having_one():
    big = "SELECT s.name FROM stadium AS s WHERE s.capacity > 5000"
    got = await _filtered(big, "with at least one concert", Linker({"stadium": AT_LEAST_ONE}))
    assert_same_sql(
        got,
        "SELECT s.name FROM stadium AS s WHERE (s.capacity > 5000) AND (EXISTS (SELECT 1 FROM "
        "concert AS f_t1 WHERE f_t1.stadium_id = s.stadium_id))",
    )


def _joined_features() -> str:
    return (
        "SELECT DISTINCT t0.property_id FROM property AS t0 JOIN property_feature AS t1 "
        "ON t1.property_id = t0.property_id JOIN feature AS t2 ON t2.feature_id = t1.feature_id"
    )


@pytest.mark.parametrize(
    ("sql", "condition", "linked"),
    [
        # "Pool" names no table: a value the linker did not place, not an existence
        (BIG_HOMES, "with a Pool", _joined_features()),
        # more than one is a count, not the having of one
        (
            STADIUMS,
            "with more than 2 concerts",
            AT_LEAST_ONE.replace(">= 1", "> 2"),
        ),
        # the noun names no joined table
        (STADIUMS, "with a sponsor", JOINED),
        # a join that is no key edge of the graph
        (
            STADIUMS,
            "with a concert",
            "SELECT DISTINCT t0.stadium_id FROM stadium AS t0 JOIN concert AS t1 "
            "ON t1.year = t0.capacity",
        ),
    ],
)
async def test_words_or_joins_that_say_more_than_having_one_stay_refused(sql, condition, linked):
    with pytest.raises(FollowUpError):
        await _filtered(sql, condition, Linker({"propert": linked, "stadium": linked}))
