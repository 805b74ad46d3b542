"""Verbs whose column lives on the table that records their event (``linker._event_verbs``):
on a schema of its own (no dev set's: a bike shop whose ``purchases`` reference bikes,
clients and vendors), "who bought the bikes?" shows the clients, "who sold them?" the
vendors, "what did the bikes sell for?" the purchase price, "how many sales did the
clients make?" counts the purchases; a verb whose event no table records ("painted"),
or a shop with no table of purchases, is still refused naming the verb. A follow-up
("what did those bikes sell for?") keeps the earlier answer's bikes."""

from __future__ import annotations

from datetime import date

import pytest

from services.sql.catalog import Catalog, ColumnInfo, ForeignKeyInfo, JoinGraph, TableInfo
from services.sql.conversation import labels, restrict, subject
from services.sql.linker import LinkError, QuestionLinker, Vocabulary, event_asked
from services.sql.verify import verify_statement

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
