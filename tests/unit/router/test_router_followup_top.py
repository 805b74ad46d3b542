"""One row of an earlier answer asked for by the size of its measure (issue 45, s58): "which
one had the most?" and "only the biggest buyer" after a breakdown are its first row by
its own measure; "reduce that to 1" after a list of rows changes how many are shown, not
the data. Each has its negatives: a noun that names other rows, a measure the earlier
question never said, an answer that is no breakdown, a superlative of another column,
and a change that names what it changes.

A superlative said alone (s65) is the same one row: "just the highest" after "average
freight per shipper" (narrowed to orders going to France) was read as a condition ("… that
are highest?") and refused, as no column holds "highest"; "just the highest one" and "only
the top" already were a row limit of one. "best"/"worst" say no end, and "the last" alone
still picks a listed member."""

from __future__ import annotations

import pytest

from services.common.llm import FollowUpKind, PriorTurn
from services.router.offline import BuildsOn, Relation, changes_row_count, resolve
from tests.unit.router.fix_router import make_router

PER_CONCERT = PriorTurn(
    "How many singers performed in each concert?",
    "How many singers performed in each concert?",
    row_count=6,
    sql="SELECT c.concert_name, COUNT(*) AS count FROM singer_in_concert AS s "
    "JOIN concert AS c ON c.concert_id = s.concert_id GROUP BY c.concert_name",
)
PER_VISITOR = PriorTurn(
    "How many tickets did each visitor buy in total?",
    "How many tickets did each visitor buy in total?",
    row_count=5,
    sql="SELECT v.name, SUM(t.num_of_ticket) AS total FROM visit AS t "
    "JOIN visitor AS v ON v.id = t.visitor_id GROUP BY v.name",
)
TOP_USERS = PriorTurn(
    "Which 3 users had the most sessions?",
    "Which 3 users had the most sessions?",
    members=("ann", "bob", "cy"),
    row_count=3,
    sql="SELECT u.username, COUNT(*) AS count FROM sessions AS s JOIN users AS u "
    "ON u.uid = s.user_id GROUP BY u.username ORDER BY count DESC LIMIT 3",
)
PER_SHIPPER = PriorTurn(
    "only orders going to France",
    "average freight per shipper that are orders going to France?",
    row_count=3,
    sql="SELECT t1.shipper_id AS shipper_id, t1.company_name AS company_name, "
    "AVG(t0.freight) AS avg_freight FROM public.orders AS t0 JOIN public.shippers AS t1 "
    "ON t1.shipper_id = t0.shipper_id WHERE (t0.ship_country = 'France') "
    "GROUP BY t1.shipper_id, t1.company_name",
)
TOP_PRODUCTS = PriorTurn(
    "top 5 products by quantity sold",
    "top 5 products by quantity sold",
    members=("Camembert", "Raclette", "Gorgonzola", "Gnocchi", "Pavlova"),
    row_count=5,
    sql="SELECT t1.product_name, SUM(t0.quantity) AS sum_quantity FROM order_details AS t0 "
    "JOIN products AS t1 ON t1.product_id = t0.product_id GROUP BY t1.product_name "
    "ORDER BY sum_quantity DESC LIMIT 5",
)
EXPENSIVE = PriorTurn(
    "Which cars cost more than 50000?",
    "Which cars cost more than 50000?",
    row_count=4,
    sql="SELECT make, model FROM cars WHERE cost > 50000",
)


@pytest.mark.parametrize(
    ("prior", "question", "lowest"),
    [
        (PER_CONCERT, "which one had the most?", False),
        (PER_CONCERT, "Which concert had the fewest?", True),
        (PER_CONCERT, "which of them had the most singers?", False),
        (PER_VISITOR, "who bought the most?", False),
        (PER_VISITOR, "only the biggest buyer", False),
        (PER_VISITOR, "just the smallest visitor", True),
        # the superlative after "with" (s61): the same one row
        (PER_CONCERT, "just the one with the most", False),
        (PER_CONCERT, "only the concert with the fewest singers", True),
        # a superlative alone (s65): the same one row, after any answer, from the end said
        *[
            (prior, question, lowest)
            for prior in (PER_SHIPPER, TOP_PRODUCTS)
            for question, lowest in (
                ("just the highest", False),
                ("only the biggest", False),
                ("just the largest please", False),
                ("only the lowest", True),
                ("just the smallest?", True),
                ("show me only the fewest", True),
            )
        ],
    ],
)
def test_one_group_asked_for_by_its_measure_is_the_breakdowns_first_row(
    prior: PriorTurn, question: str, lowest: bool
) -> None:
    resolution = resolve(question, [prior])
    assert resolution.kind is FollowUpKind.LIMIT
    assert resolution.builds_on == BuildsOn(
        prior.sql, Relation.ROW_LIMIT, limit=1, ascending=lowest
    )


@pytest.mark.parametrize(
    ("prior", "question"),
    [
        # a noun that names other rows than the groups
        (PER_CONCERT, "which singer had the most concerts?"),
        (PER_VISITOR, "which museum had the most?"),
        (PER_VISITOR, "only the biggest museum"),
        (PER_VISITOR, "just the museum with the most"),
        (PER_CONCERT, "only the one with the most awards"),
        # a measure the earlier question never said
        (PER_CONCERT, "which one had the most awards?"),
        # no breakdown to rank: a list, or a ranking cut already
        (EXPENSIVE, "which one had the most?"),
        (TOP_USERS, "which one had the fewest?"),
        # a superlative of another column, or rows in the plural (how many is not said)
        (PER_VISITOR, "only the oldest visitor"),
        (PER_VISITOR, "only the biggest buyers"),
    ],
)
def test_what_is_no_first_row_by_the_measure_is_not_read_as_one(
    prior: PriorTurn, question: str
) -> None:
    resolution = resolve(question, [prior])
    assert resolution.builds_on is None or resolution.builds_on.relation is not (Relation.ROW_LIMIT)


def test_a_row_count_said_with_a_verb_of_change_after_several_rows_is_no_write() -> None:
    assert changes_row_count("reduce that to 1", [TOP_USERS])
    assert changes_row_count("could you cut it down to 2?", [TOP_USERS])


@pytest.mark.parametrize(
    ("prior", "question"),
    [
        (TOP_USERS, "reduce the price of car 5 to 100"),  # names what it changes
        (TOP_USERS, "reduce prices by 10%"),
        (PriorTurn("What is its price?", "What is its price?", row_count=1,
                   sql="SELECT price FROM cars WHERE id = 5"), "change it to 5"),  # one value
        (PriorTurn("Which orders were cancelled?", "Which orders were cancelled?"),
         "reduce that to 1"),  # no rows shown
    ],
)  # fmt: skip
def test_a_change_of_data_stays_one(prior: PriorTurn, question: str) -> None:
    assert not changes_row_count(question, [prior])


async def test_reduce_that_to_one_after_a_ranking_is_resolved_as_a_row_limit() -> None:
    resolved = await make_router().follow_ups.resolve("reduce that to 1", (TOP_USERS,))
    assert resolved.resolution.kind is FollowUpKind.LIMIT
    assert resolved.resolution.builds_on == BuildsOn(TOP_USERS.sql, Relation.ROW_LIMIT, limit=1)


async def test_a_change_of_data_after_a_ranking_is_still_declined_unresolved() -> None:
    resolved = await make_router().follow_ups.resolve(
        "reduce the price of car 5 to 100", (TOP_USERS,)
    )
    assert resolved.resolution.kind is FollowUpKind.STANDALONE
    assert resolved.resolution.builds_on is None


def test_what_a_contracted_pointer_owns_is_said_of_the_rows() -> None:
    """ "what's that user's email?" after one row: the email of the rows, never "the
    previous answer's rows's email" (the reading the SQL service gets is its own)."""
    one = PriorTurn(
        "Which user had the most sessions?",
        "Which user had the most sessions?",
        members=("ann",),
        row_count=1,
        sql=TOP_USERS.sql.replace("LIMIT 3", "LIMIT 1"),
    )
    resolution = resolve("what's that user's email?", [one])
    assert resolution.kind is FollowUpKind.RESULT_REFERENCE
    assert resolution.question == "What's the email of the previous answer's rows?"


@pytest.mark.parametrize(
    ("question", "rows"),
    [("top 3 only", 3), ("only the top one", 1), ("only the top", 1), ("just the highest one", 1)],
)
def test_a_said_count_is_still_read_as_before(question: str, rows: int) -> None:
    resolution = resolve(question, [PER_SHIPPER])
    assert resolution.builds_on == BuildsOn(PER_SHIPPER.sql, Relation.ROW_LIMIT, limit=rows)


@pytest.mark.parametrize("question", ["just the best", "only the worst"])
def test_best_or_worst_alone_say_no_end(question: str) -> None:
    resolution = resolve(question, [PER_SHIPPER])
    assert resolution.builds_on is None or resolution.builds_on.relation is not Relation.ROW_LIMIT


def test_the_last_alone_still_picks_the_last_member() -> None:
    resolution = resolve("and the last?", [TOP_PRODUCTS])
    assert resolution.kind is FollowUpKind.ORDINAL
    assert "Pavlova" in resolution.question
