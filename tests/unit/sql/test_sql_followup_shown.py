"""A follow-up shows the columns its question spelled out shows (issue 45, s62): the
follow-up step and the linker decide what a statement shows in one place
(``results.with_shown``), so a narrowing that adds a range shows the compared column, as
the first question with that range does, and the same rows read as the same rows."""

from __future__ import annotations

import sqlglot

from services.sql.results import as_asked, with_shown
from tests.unit.sql.flights import FLIGHTS, flights_sql

ONE_ENGINE = "List the tail numbers of planes with 1 engine."


def _shown(sql: str) -> list[str]:
    return [e.alias_or_name for e in sqlglot.parse_one(sql, dialect="postgres").expressions]


def test_a_range_added_by_a_follow_up_is_shown_as_the_question_spelled_out_shows_it():
    earlier = flights_sql(ONE_ENGINE)
    # "of those, which were built after 2000?": the filter step adds the condition to
    # the earlier statement; the engine writes the result back as asked
    narrowed = earlier.replace("(t0.engines = 1)", "(t0.engines = 1) AND (t0.year > 2000)")
    followed = as_asked(narrowed, earlier, FLIGHTS)
    spelled = flights_sql("List the tail numbers of planes with 1 engine built after 2000.")
    assert _shown(followed) == _shown(spelled) == ["tailnum", "year"], followed


def test_a_follow_up_that_adds_no_range_shows_what_the_earlier_answer_showed():
    earlier = flights_sql(ONE_ENGINE)
    swapped = earlier.replace("= 1", "= 2")
    assert as_asked(swapped, earlier, FLIGHTS) == swapped
    # the rule leaves a statement that shows what it decides as it is
    assert with_shown(swapped, FLIGHTS) == swapped
