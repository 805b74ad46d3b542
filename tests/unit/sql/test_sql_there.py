"""'there' in a question about the earlier rows keeps the earlier statement's conditions
(services/sql/conversation/_there.py)."""

from __future__ import annotations

import pytest

from services.sql.conversation import FollowUpError, kept_there, points_at_a_place

# "how many flights did each of them have?" about the carriers that flew to DEN, as the
# engine restricts it to the earlier rows
PER_CARRIER = (
    "SELECT t1.carrier AS carrier, COUNT(*) AS count FROM public.flights AS t0 "
    "JOIN public.airlines AS t1 ON t1.carrier = t0.carrier WHERE t1.carrier IN "
    "(SELECT earlier.carrier FROM (SELECT DISTINCT earlier_t0.carrier AS carrier "
    "FROM public.flights AS earlier_t0 WHERE (earlier_t0.dest = 'DEN')) AS earlier) "
    "GROUP BY t1.carrier"
)
TO_DEN = "SELECT DISTINCT t0.carrier AS carrier FROM public.flights AS t0 WHERE (t0.dest = 'DEN')"


@pytest.mark.parametrize(
    ("question", "place"),
    [
        ("how many flights did each of them have there?", True),
        ("How much did visitors spend there in total?", True),
        ("how many flights are there?", False),
        ("are there any late ones?", False),
        ("how many were there in 2013?", False),
        ("what are their names?", False),
    ],
)
def test_there_said_of_a_place_is_told_from_the_there_of_being(question: str, place: bool) -> None:
    assert points_at_a_place(question) is place


def test_the_earlier_place_is_kept_on_the_table_that_reads_it() -> None:
    sql = kept_there(PER_CARRIER, TO_DEN)
    assert sql.endswith("AND t0.dest = 'DEN' GROUP BY t1.carrier"), sql
    # unqualified columns of a one-table statement are that table's
    assert kept_there(PER_CARRIER, "SELECT DISTINCT carrier FROM flights WHERE dest = 'DEN'") == sql


def test_the_earlier_rows_as_the_place_keep_their_own_conditions() -> None:
    spent = (
        "SELECT SUM(t0.total_spent) AS total FROM public.visit AS t0 JOIN public.museum AS t1 "
        "ON t1.museum_id = t0.museum_id WHERE t1.museum_id IN (SELECT 1)"
    )
    earlier = "SELECT t0.museum_id, t0.name FROM public.museum AS t0 WHERE (t0.open_year = 2011)"
    assert kept_there(spent, earlier).endswith("AND t1.open_year = 2011")


def test_a_place_on_a_table_the_question_does_not_read_is_refused() -> None:
    earlier = "SELECT t0.museum_id FROM public.museum AS t0 WHERE (t0.open_year = 2011)"
    with pytest.raises(FollowUpError, match="'there'"):
        kept_there(PER_CARRIER, earlier)


def test_without_earlier_conditions_there_is_the_earlier_rows() -> None:
    earlier = "SELECT t0.carrier FROM public.airlines AS t0 ORDER BY t0.name LIMIT 3"
    assert kept_there(PER_CARRIER, earlier) == PER_CARRIER
