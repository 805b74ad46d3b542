"""One catalog shaped as defog's car_dealership is (cars, salespersons, customers and the
sales that refer to all three), for the tests that read a first question or an event's
verb on it through the real linker and verifier: cars keep a model ``year`` of their own
and the sales a ``sale_date``, so a year said with "sold" has two dates it could bound,
and "sold" names a table (``sales``) no column of the cars is called by."""

from __future__ import annotations

from services.sql.catalog import Catalog, ForeignKeyInfo, JoinGraph, TableInfo
from services.sql.linker import Vocabulary
from tests.unit.sql.schemas import col, key


def _person(name: str) -> TableInfo:
    return TableInfo(
        "public",
        name,
        columns=(
            key("id"),
            col("first_name", "text", ("Jane", "Paul")),
            col("last_name", "text", ("Smith", "Jones")),
        ),
        primary_key=("id",),
    )


DEALER = Catalog(
    "dealer",
    (
        TableInfo(
            "public",
            "cars",
            columns=(
                key("id"),
                col("make", "text", ("Toyota", "Ford")),
                col("color", "text", ("Red", "Blue")),
                col("year"),
                col("cost", "numeric"),
            ),
            primary_key=("id",),
        ),
        _person("salespersons"),
        _person("customers"),
        TableInfo(
            "public",
            "sales",
            columns=(
                key("id"),
                key("car_id"),
                key("salesperson_id"),
                key("customer_id"),
                col("sale_price", "numeric"),
                col("sale_date", "date"),
            ),
            primary_key=("id",),
            foreign_keys=(
                ForeignKeyInfo(("car_id",), "public.cars", ("id",)),
                ForeignKeyInfo(("salesperson_id",), "public.salespersons", ("id",)),
                ForeignKeyInfo(("customer_id",), "public.customers", ("id",)),
            ),
        ),
    ),
)
DEALER_WORDS = Vocabulary(DEALER, JoinGraph(DEALER))
