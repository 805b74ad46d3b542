"""Refusals that help: a refused phrase is said with the names it found or those nearest
to it, and never as absent when a table or column of that name exists — checked on every
refusal of the defog set and Spider's study half, with the plain check of
``tandem eval refusals``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import date
from pathlib import Path

import numpy as np
import pytest

from services.bench.sql_refusals import absence_claims, false_absences, name_keys
from services.sql import (
    Catalog,
    ColumnInfo,
    ForeignKeyInfo,
    OfflineGenerator,
    SchemaView,
    TableInfo,
)
from services.sql.ask._refusals import RefusalExplainer
from services.sql.catalog import JoinGraph
from services.sql.linker import LinkError, Vocabulary

DATASETS = Path(__file__).resolve().parents[3].parent / "shared" / "datasets"
STUDY = ("car_1", "cre_doc_template_mgt", "concert_singer", "course_teach", "museum_visit",
         "real_estate_properties")  # fmt: skip
TODAY = date(2025, 6, 30)

C = ColumnInfo
SHOP = Catalog(
    "shop",
    (
        TableInfo(
            "public",
            "customers",
            columns=(
                C("customer_id", "integer", False),
                C("name", "text", False, known_values=("Ada Lovelace", "Bo Chen")),
                C("country", "text", False, sample_values=("DE", "NL")),
            ),
            primary_key=("customer_id",),
        ),
        TableInfo(
            "public",
            "orders",
            columns=(
                C("order_id", "integer", False),
                C("customer_id", "integer", False),
                C("product_id", "integer", False),
                C("quantity", "integer", False),
                C("status", "text", False, sample_values=("cancelled", "placed", "shipped")),
                C("placed_at", "timestamp with time zone", False),
            ),
            primary_key=("order_id",),
            foreign_keys=(
                ForeignKeyInfo(("customer_id",), "public.customers", ("customer_id",)),
                ForeignKeyInfo(("product_id",), "public.products", ("product_id",)),
            ),
        ),
        TableInfo(
            "public",
            "products",
            columns=(
                C("product_id", "integer", False),
                C("name", "text", False),
                C("unit_count", "integer", False),
                C("fullname", "text", True),
            ),
            primary_key=("product_id",),
        ),
    ),
)
VOCAB = Vocabulary(SHOP, JoinGraph(SHOP))
EXPLAIN = RefusalExplainer(VOCAB)


def refused(phrase: str, question: str = "") -> str:
    return EXPLAIN.explain(LinkError(f"nothing in the schema matches {phrase!r}", phrase=phrase))


def test_a_phrase_naming_a_column_is_said_as_found():
    # the "nothing in the schema matches 'quantity'" with orders.quantity there
    said = refused("quantity")
    assert said == "found 'quantity' (orders.quantity) but could not read the question around it"
    assert refused("quantities").startswith("found 'quantities' (orders.quantity)")
    # a table by its plural, a stored value, a name written as one run said in two words
    assert refused("order") == "found 'order' (orders) but could not read the question around it"
    # the table itself, not every column named after it (products.product_id, …)
    assert refused("product") == (
        "found 'product' (products) but could not read the question around it"
    )
    assert "'cancelled' (a value of orders.status)" in refused("cancelled")
    assert "'Ada Lovelace' (a value of customers.name)" in refused("Ada Lovelace")
    assert "'full name' (products.fullname)" in refused("full name")


def test_a_phrase_naming_nothing_offers_the_nearest_names():
    # "…matches 'place'": placed_at is near; an abbreviation; a typo; part of a name
    assert refused("place") == (
        "could not place 'place' — nearest: orders.placed_at, 'placed' (orders.status)?"
    )
    assert refused("qty") == "could not place 'qty' — nearest: orders.quantity?"
    assert refused("custmers").startswith("could not place 'custmers' — nearest: customers")
    assert refused("Ada Lovelase") == (
        "could not place 'Lovelase' — nearest: 'Ada Lovelace' (customers.name)?"
    )
    assert refused("weather") == (
        "could not place 'weather' (no table, column or stored value is near it)"
    )


def test_names_near_in_meaning_come_first_and_words_that_name_nothing_get_none():
    error = LinkError("nothing in the schema matches 'attendance'", phrase="attendance")
    nearby = {"attendance": [("public.orders", "quantity", 0.62), ("public.products", "", 0.55)]}
    assert EXPLAIN.explain(error, nearby) == (
        "could not place 'attendance' — nearest: orders.quantity, products?"
    )
    # the words that could name something first, and no suggestion for "but"
    said = refused("shipped but rerouted")
    assert said.startswith("could not place 'rerouted'") and said.endswith("nor 'but'")
    assert EXPLAIN.unplaced(LinkError("x", phrase="shipped but rerouted")) == ("rerouted",)


def test_a_refusal_without_a_phrase_is_said_as_it_was():
    error = LinkError("no join path connects the tables the question names")
    assert EXPLAIN.explain(error) == str(error)
    # a phrase of grammar alone
    assert refused("In 1980") == "could not read the question around 'In 1980'"


class _Embedder:
    """Unit vectors by text: 'attendance' 0.6 alike to orders.quantity and 0.55 to the
    orders table (near both, too near a tie to be read as either), every other name on
    an axis of its own."""

    async def embed_phrases(self, texts: Sequence[str]) -> np.ndarray:
        rows = []
        for text in texts:
            row = np.zeros(4, dtype=np.float32)
            if text == "attendance":
                row[0], row[1], row[3] = 0.6, 0.55, 0.58
            else:
                row[0 if text == "quantity" else 1 if text == "order" else 2] = 1
            rows.append(row)
        return np.array(rows)


async def test_the_offline_generator_says_the_names_near_in_meaning():
    view = SchemaView("shop", SHOP, SHOP.tables, "", TODAY)
    question = "What is the average attendance of each order?"
    offline = OfflineGenerator().read(question, view)
    assert offline.reason.startswith("could not place 'attendance'")
    reading = await OfflineGenerator(_Embedder()).reading(question, view)
    assert not reading.sql
    assert reading.reason == "could not place 'attendance' — nearest: orders.quantity, orders?"


def test_the_plain_check_finds_a_refusal_calling_a_name_absent():
    """The check the dev-set test and ``tandem eval refusals`` count with: the issue's
    refusals are caught, and the explained ones pass."""
    keys = name_keys(["orders", "orders.quantity", "cars_data", "car_makers.fullname"])
    assert false_absences("nothing in the schema matches 'quantity'", "", keys)
    assert false_absences("nothing in the schema matches 'car'", "", keys)
    assert false_absences("nothing read 'full name'", "", keys)
    assert false_absences("the question names no column or table of this database",
                          "Which orders?", keys)  # fmt: skip
    assert not false_absences(refused("quantity"), "", keys)
    assert not false_absences("nothing in the schema matches 'weather'", "", keys)
    assert absence_claims(refused("weather"), "") == ["weather"]


def _json_catalog(path: Path) -> Catalog:
    """A database's catalog from the dataset's own metadata file (no database needed)."""
    metadata = json.loads(path.read_text())["table_metadata"]
    tables = []
    for qualified, columns in metadata.items():
        schema, _, name = qualified.rpartition(".")
        tables.append(
            TableInfo(
                schema or "public",
                name,
                columns=tuple(
                    C(
                        c["column_name"],
                        c["data_type"].lower(),
                        True,
                        comment=c["column_description"],
                    )
                    for c in columns
                ),
            )
        )
    return Catalog(path.stem, tuple(sorted(tables, key=lambda t: (t.schema, t.name))))


@pytest.mark.skipif(not (DATASETS / "sql").exists(), reason="the dev sets are not checked out")
def test_no_refusal_on_the_dev_sets_calls_an_existing_name_absent():
    """Every question of the defog set and of Spider's study half, read by the offline
    generator on catalogs made from the datasets' metadata: 0 refusals say a phrase
    names nothing while one of its words names a table or column."""
    generator = OfflineGenerator()
    refusals, false = 0, []
    for folder, keep in (("sql", None), ("sql-spider", STUDY)):
        root = DATASETS / folder
        for line in (root / "questions.jsonl").read_text().splitlines():
            item = json.loads(line)
            if keep is not None and item["db"] not in keep:
                continue
            catalog = _json_catalog(root / "databases" / f"{item['db']}.json")
            view = SchemaView(
                item["db"], catalog, catalog.tables, "", TODAY, instructions=item["instructions"]
            )
            reading = generator.read(item["question"], view)
            if reading.sql:
                continue
            refusals += 1
            keys = name_keys(
                [t.name for t in catalog.tables]
                + [f"{t.name}.{c.name}" for t in catalog.tables for c in t.columns]
            )
            if found := false_absences(reading.reason, item["question"], keys):
                false.append((item["id"], found))
    assert refusals >= 50  # the check reads real refusals
    assert false == []
