"""Verbs whose column lives on the table that records their event (``linker._event_verbs``):
on a schema of its own (no dev set's: a bike shop whose ``purchases`` reference bikes,
clients and vendors), "who bought the bikes?" shows the clients, "who sold them?" the
vendors, "what did the bikes sell for?" the purchase price, "how many sales did the
clients make?" counts the purchases; a verb whose event no table records ("painted"),
or a shop with no table of purchases, is still refused naming the verb. A follow-up
("what did those bikes sell for?") keeps the earlier answer's bikes.

Two readings of rows said with their event's verb (ISSUE-45, s65 events2, on the
car_dealership and museum_visit shapes): "cars sold per make" counts the sales per make
(refused before, naming sales), and "visitors who never visited a museum" lists the
visitors with no visit, never the verb's object (the museums never visited, a confident
wrong on a schema with no visitor table, is refused). Each held statement is what the
engine answered, or the refusal it gave, before the rule."""

from __future__ import annotations

from datetime import date

import pytest

from services.sql.catalog import Catalog, ColumnInfo, ForeignKeyInfo, JoinGraph, TableInfo
from services.sql.conversation import labels, restrict, subject
from services.sql.linker import LinkError, QuestionLinker, Vocabulary, event_asked
from services.sql.verify import verify_statement
from tests.unit.sql.dealer import DEALER
from tests.unit.sql.schemas import linked_sql
from tests.unit.sql.test_sql_linker import MUSEUMS as MUSEUMS_NO_VISITORS
from tests.unit.sql.test_sql_naming_key import MUSEUMS

TODAY = date(2026, 11, 30)

BIKES = TableInfo(
    "public",
    "bikes",
    columns=(
        ColumnInfo("id", "integer", False),
        ColumnInfo("make", "text", False),
        ColumnInfo("model", "text", False),
        ColumnInfo("year", "integer", False),
        ColumnInfo("weight", "numeric", False),
    ),
    primary_key=("id",),
)
CLIENTS = TableInfo(
    "public",
    "clients",
    columns=(
        ColumnInfo("id", "integer", False),
        ColumnInfo("name", "text", False),
        ColumnInfo("city", "text", False),
    ),
    primary_key=("id",),
)
VENDORS = TableInfo(
    "public",
    "vendors",
    columns=(ColumnInfo("id", "integer", False), ColumnInfo("name", "text", False)),
    primary_key=("id",),
)
PURCHASES = TableInfo(
    "public",
    "purchases",
    columns=(
        ColumnInfo("id", "integer", False),
        ColumnInfo("bike_id", "integer", False),
        ColumnInfo("client_id", "integer", False),
        ColumnInfo("vendor_id", "integer", False),
        ColumnInfo("purchase_price", "numeric", False),
        ColumnInfo("purchase_date", "date", False),
    ),
    primary_key=("id",),
    foreign_keys=(
        ForeignKeyInfo(("bike_id",), "public.bikes", ("id",)),
        ForeignKeyInfo(("client_id",), "public.clients", ("id",)),
        ForeignKeyInfo(("vendor_id",), "public.vendors", ("id",)),
    ),
)
SHOP = Catalog("shop", (BIKES, CLIENTS, VENDORS, PURCHASES))
# the same shop keeping no record of its purchases
STOCK = Catalog("stock", (BIKES, CLIENTS, VENDORS))


def _linked(question: str, catalog: Catalog = SHOP) -> tuple[str, str]:
    linked = QuestionLinker(
        question, Vocabulary(catalog, JoinGraph(catalog)), TODAY, check=verify_statement
    ).link()
    return " ".join(linked.sql.split()), linked.explanation


def _refused(question: str, catalog: Catalog = SHOP) -> LinkError:
    with pytest.raises(LinkError) as refused:
        _linked(question, catalog)
    return refused.value


def test_who_did_the_verb_is_the_parent_its_side_names_its_doer_by() -> None:
    bought, said = _linked("Who bought the bikes?")
    assert "FROM public.clients AS t0 WHERE EXISTS(SELECT 1 FROM public.purchases" in bought
    assert "public.bikes" in bought and "vendors" not in bought
    assert "as the client of purchases" in said
    sold, _ = _linked("Who sold the bikes?")
    assert "FROM public.vendors AS t0 WHERE EXISTS(SELECT 1 FROM public.purchases" in sold
    assert "clients" not in sold


def test_what_the_rows_went_for_is_the_event_tables_money_column() -> None:
    sql, said = _linked("What did the bikes sell for?")
    assert "t0.purchase_price" in sql and "JOIN public.bikes" in sql
    assert "purchases.purchase_price" in said


def test_how_much_the_rows_went_for_as_a_first_question_is_the_money_column() -> None:
    # as asked, the first-question readers showed the bikes' ids: no amount, so the
    # question is read through the table recording the sale
    sql, said = _linked("How much did the bikes sell for?")
    assert "t0.purchase_price" in sql and "JOIN public.bikes" in sql
    assert "purchases.purchase_price" in said
    # no table records a sale: refused, not answered with the bikes
    assert "no amount" in str(_refused("How much did the bikes sell for?", STOCK))
    # who paid: the payer is no bike, and nothing here says who paid
    assert _refused("Who paid for the bikes?").phrase == "paid"


def test_an_event_noun_no_table_is_named_by_reads_as_the_events_table() -> None:
    sql, said = _linked("How many sales did the clients make altogether?")
    assert sql.startswith("SELECT COUNT(*) AS count FROM public.purchases")
    assert "JOIN public.clients" in sql
    assert "Read 'sales' as purchases." in said
    # "make" there is the light verb of "make a sale", not the bikes' ``make``
    assert "make" not in sql and "JOIN public.bikes" not in sql
    named, said = _linked("How many purchases did the clients make?")
    assert named.startswith("SELECT COUNT(*) AS count FROM public.purchases")
    assert "light verb" in said


def test_a_verb_whose_event_no_table_records_is_still_refused_naming_it() -> None:
    assert _refused("Who painted the bikes?").phrase == "painted"
    # the shop without its purchases: bought by whom, nothing records
    assert _refused("Who bought the bikes?", STOCK).phrase == "bought"
    assert "sell" in _refused("What did the bikes sell for?", STOCK).phrase
    assert "sales" in _refused("How many sales did the clients make?", STOCK).phrase


def test_a_reading_not_showing_what_the_verb_asked_is_not_taken() -> None:
    words = Vocabulary(SHOP, JoinGraph(SHOP))
    doer = event_asked(words, "Who bought the bikes made by Trek?")
    assert doer is not None and doer.question == "Which client bought the bikes made by Trek?"
    # the bikes' keys where the clients were asked for: what was bought, not who bought
    bikes = (
        "SELECT DISTINCT t0.id AS id FROM public.bikes AS t0 JOIN public.purchases AS t1 "
        "ON t1.bike_id = t0.id JOIN public.clients AS t2 ON t2.id = t1.client_id"
    )
    assert not doer.answered_by(bikes)
    assert doer.answered_by(bikes.replace("SELECT DISTINCT t0.id", "SELECT DISTINCT t2.id"))
    price = event_asked(words, "What did the bikes sell for?")
    assert price is not None and not price.answered_by(
        "SELECT t0.id AS id FROM public.purchases AS t0"
    )


def test_a_follow_up_on_what_the_earlier_rows_sold_for_keeps_them() -> None:
    earlier = "SELECT t0.model AS model FROM public.bikes AS t0 WHERE t0.year = 2021"
    about = subject(earlier, SHOP)
    # "what did those bikes sell for?" as pointed at the earlier rows' table
    linked, _ = _linked("What did the bikes sell for?")
    sql = restrict(linked, earlier, about, labels(earlier, about, SHOP), catalog=SHOP)
    assert "purchase_price" in sql and "2021" in sql


SALES_PER = (
    "SELECT t1.{0} AS {0}, COUNT(*) AS count FROM public.sales AS t0 "
    "JOIN public.cars AS t1 ON t1.id = t0.car_id GROUP BY t1.{0}"
)


@pytest.mark.parametrize(
    ("question", "column"),
    [
        ("cars sold per make", "make"),
        ("number of cars sold per make", "make"),
        ("How many cars were sold per color?", "color"),
    ],
)
def test_rows_said_with_their_events_verb_per_a_column_count_the_events(
    question: str, column: str
) -> None:
    """Without the rule: refused, "'sold' is what the sales rows record of the cars
    rows, and the statement does not read sales" (s64 probes4's check)."""
    assert linked_sql(question, DEALER, TODAY) == SALES_PER.format(column)


def test_rows_said_with_a_qualifier_and_their_events_verb_stay_refused() -> None:
    # "red cars sold per make": the sales said instead would drop "red"
    with pytest.raises(LinkError, match="'sold' is what the sales rows record"):
        linked_sql("red cars sold per make", DEALER, TODAY)


VISITORS_WITH_NO_VISIT = (
    "SELECT {0} FROM public.visitor AS t0 WHERE (NOT EXISTS (SELECT 1 FROM public.visit AS x "
    "WHERE x.visitor_id = t0.id))"
)


@pytest.mark.parametrize(
    ("question", "shown"),
    [
        ("visitors who never visited a museum", "t0.name AS name"),
        ("list visitors that have not visited any museum", "t0.name AS name"),
        ("Find the visitors who did not visit any museum", "t0.name AS name"),
        ("How many visitors never visited a museum?", "COUNT(*) AS count"),
    ],
)
def test_rows_that_never_did_the_event_are_those_said_before_the_negation(
    question: str, shown: str
) -> None:
    """Without the reading: refused ("the statement shows what the visitors refer to,
    not the visitors", "no direct key links visitor and museum"); the statement read as
    asked listed the visits' museum ids with no museum."""
    assert linked_sql(question, MUSEUMS, TODAY) == VISITORS_WITH_NO_VISIT.format(shown)


def test_the_verbs_object_is_not_taken_for_the_rows_never_visited() -> None:
    """Without the refusal: ``SELECT t0.name FROM museum AS t0 WHERE NOT EXISTS (SELECT 1
    FROM visit …)``, the museums never visited for "visitors who never visited a museum"
    on a schema with no visitor table — a confident wrong answer."""
    with pytest.raises(LinkError, match="could not place the rows that never visited museum"):
        linked_sql("visitors who never visited a museum", MUSEUMS_NO_VISITORS, TODAY)


def test_rows_never_said_with_an_object_keep_their_reading() -> None:
    assert linked_sql("museums that were never visited", MUSEUMS, TODAY) == (
        "SELECT t0.name AS name FROM public.museum AS t0 WHERE (NOT EXISTS (SELECT 1 "
        "FROM public.visit AS x WHERE x.museum_id = t0.museum_id))"
    )
