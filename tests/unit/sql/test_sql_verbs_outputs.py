"""What a statement shows held to what a question with an event verb asks (issue 45, s60):
on a schema of its own (no dev set's: a boat yard whose ``rentals`` reference boats and
customers, whose ``inspections`` refer to boats, and whose ``notifications`` have a
``kind`` that may be 'rental'), each confident wrong answer the first-question readers
gave on car_dealership and ewallet is refused, and the right statement passes:

- "how much" answered with a key or a reference (the boats' ids): no amount;
- "who paid for the boats?" answered with what identifies the boats (a verb that takes
  its object with a preposition);
- "which customers rented …" answered with the boats' ids while reading customers;
- "how many rentals …" answered with the notifications whose kind is 'rental', where a
  table of rentals exists.
"""

from __future__ import annotations

from datetime import date

import pytest

from services.sql.catalog import Catalog, ColumnInfo, ForeignKeyInfo, JoinGraph, TableInfo
from services.sql.linker import LinkError, Vocabulary, read_question
from services.sql.verify import verify_statement


def _col(name: str, data_type: str = "integer") -> ColumnInfo:
    return ColumnInfo(name, data_type, False)


BOATS = TableInfo(
    "public",
    "boats",
    columns=(_col("id"), _col("make", "text"), _col("length"), _col("weight")),
    primary_key=("id",),
)
CUSTOMERS = TableInfo(
    "public",
    "customers",
    columns=(_col("id"), _col("name", "text"), _col("country", "text")),
    primary_key=("id",),
)
RENTALS = TableInfo(
    "public",
    "rentals",
    columns=(_col("id"), _col("boat_id"), _col("customer_id"), _col("rental_fee", "numeric")),
    primary_key=("id",),
    foreign_keys=(
        ForeignKeyInfo(("boat_id",), "public.boats", ("id",)),
        ForeignKeyInfo(("customer_id",), "public.customers", ("id",)),
    ),
)
INSPECTIONS = TableInfo(
    "public",
    "inspections",
    columns=(_col("id"), _col("boat_id"), _col("inspected_on", "date")),
    primary_key=("id",),
    foreign_keys=(ForeignKeyInfo(("boat_id",), "public.boats", ("id",)),),
)
NOTIFICATIONS = TableInfo(
    "public",
    "notifications",
    columns=(_col("id"), _col("customer_id"), _col("kind", "text")),
    primary_key=("id",),
    foreign_keys=(ForeignKeyInfo(("customer_id",), "public.customers", ("id",)),),
)
YARD = Catalog("yard", (BOATS, CUSTOMERS, RENTALS, INSPECTIONS, NOTIFICATIONS))
# the same yard keeping no table of rentals
NO_RENTALS = Catalog("yard2", (BOATS, CUSTOMERS, INSPECTIONS, NOTIFICATIONS))


def _verify(question: str, sql: str, catalog: Catalog = YARD) -> None:
    vocab = Vocabulary(catalog, JoinGraph(catalog))
    verify_statement(read_question(question, vocab, date(2026, 11, 30)), sql)


BOAT_IDS = "SELECT t0.id AS id FROM public.boats AS t0"
FEES = (
    "SELECT t0.rental_fee AS rental_fee FROM public.rentals AS t0 "
    "JOIN public.boats AS t1 ON t1.id = t0.boat_id"
)


def test_how_much_answered_with_the_rows_keys_is_refused() -> None:
    with pytest.raises(LinkError, match="no amount for 'how much'"):
        _verify("How much did the boats rent for?", BOAT_IDS)


def test_how_much_answered_with_a_reference_is_refused() -> None:
    sql = (
        "SELECT DISTINCT t0.boat_id AS boat_id FROM public.inspections AS t0 "
        "JOIN public.boats AS t1 ON t1.id = t0.boat_id"
    )
    with pytest.raises(LinkError, match="no amount for 'how much'"):
        _verify("How much did the boats rent for?", sql)


def test_how_much_answered_with_an_amount_passes() -> None:
    _verify("How much did the boats rent for?", FEES)
    # a key shown beside the amount: the amount answers
    _verify("How much does each boat weigh?", "SELECT t0.id, t0.weight FROM public.boats AS t0")


WHO_PAID = "Who paid for the boats?"


def test_who_paid_for_answered_with_the_objects_is_refused() -> None:
    sql = (
        "SELECT DISTINCT t0.boat_id AS boat_id FROM public.inspections AS t0 "
        "JOIN public.boats AS t1 ON t1.id = t0.boat_id"
    )
    with pytest.raises(LinkError, match="who paid the boats") as refused:
        _verify(WHO_PAID, sql)
    assert refused.value.phrase == "paid"


def test_who_paid_for_answered_with_the_payers_passes() -> None:
    sql = (
        "SELECT DISTINCT t0.id, t0.name FROM public.customers AS t0 "
        "JOIN public.rentals AS t1 ON t1.customer_id = t0.id "
        "JOIN public.boats AS t2 ON t2.id = t1.boat_id"
    )
    _verify("Who paid for the boats?", sql)


WHICH_CUSTOMERS = "Which customers rented the boats made by Acme?"
JOINED = (
    "FROM public.boats AS t0 JOIN public.rentals AS t1 ON t1.boat_id = t0.id "
    "JOIN public.customers AS t2 ON t2.id = t1.customer_id WHERE t0.make = 'Acme'"
)


def test_which_rows_answered_with_other_rows_is_refused() -> None:
    with pytest.raises(LinkError, match="asks which customers") as refused:
        _verify(WHICH_CUSTOMERS, f"SELECT DISTINCT t0.id AS id {JOINED}")
    assert refused.value.phrase == "customers"


def test_which_rows_shown_or_referred_to_passes() -> None:
    _verify(WHICH_CUSTOMERS, f"SELECT DISTINCT t2.id, t2.name {JOINED}")
    # the rentals' reference to the customers identifies them
    _verify(WHICH_CUSTOMERS, f"SELECT DISTINCT t1.customer_id {JOINED}")
    # "which country": a column shown, not a table of countries
    _verify(
        "Which country has customers?", "SELECT DISTINCT t0.country FROM public.customers AS t0"
    )


RENTAL_NOTES = (
    "SELECT COUNT(*) AS count FROM public.notifications AS t0 "
    "JOIN public.customers AS t1 ON t1.id = t0.customer_id WHERE t0.kind = 'rental'"
)


def test_counted_noun_read_as_a_value_of_another_table_is_refused() -> None:
    with pytest.raises(LinkError, match="counts rentals, rows of rentals") as refused:
        _verify("How many rentals did the customers make?", RENTAL_NOTES)
    assert refused.value.phrase == "rentals"


def test_counted_noun_no_table_names_may_be_a_value() -> None:
    # no table of rentals: the notifications of that kind are the only rentals said
    _verify("How many rentals did the customers make?", RENTAL_NOTES, NO_RENTALS)
    # the table the noun names counted: passes
    _verify(
        "How many rentals did the customers make?",
        "SELECT COUNT(*) AS count FROM public.rentals AS t0 "
        "JOIN public.customers AS t1 ON t1.id = t0.customer_id",
    )
