"""Issue 45 (s64, nw1): of several columns that name a row, the one unique per row.

Northwind's ``customers`` has a ``company_name`` and a ``contact_name`` and no column
called just ``name``: "which customers are in Mexico" listed the text key alone, as a
tie between names was left to the key. The data decides: the first declared name whose
stored values are one per row names the row. A name many rows share (a match's
``tourney_name``) names something else the row has, and the key stays. The real linker
reads each."""

from __future__ import annotations

from dataclasses import replace

from services.sql.catalog import Catalog, ColumnInfo, TableInfo
from tests.unit.sql.schemas import col, linked_statement
from tests.unit.sql.test_sql_row_labels import TODAY


def _text(name: str, values: tuple[str, ...]) -> ColumnInfo:
    return replace(col(name, "text"), known_values=values)


COMPANIES = ("Ana Trujillo", "Antonio Moreno", "Centro comercial", "Pericles", "Tortuga")
CONTACTS = ("Ana T", "Antonio M", "Francisco C", "Guillermo F", "Miguel A")


def _customers(company: tuple[str, ...]) -> Catalog:
    return Catalog(
        "store",
        (
            TableInfo(
                "public",
                "customers",
                columns=(
                    ColumnInfo("customer_id", "text", False),
                    _text("company_name", company),
                    _text("contact_name", CONTACTS),
                    col("country", "text", ("Mexico", "Argentina", "France")),
                ),
                primary_key=("customer_id",),
                row_estimate=5,
            ),
        ),
    )


def _shown(catalog: Catalog) -> list[str]:
    tree = linked_statement("which customers are in Mexico", catalog, TODAY)
    return [e.alias_or_name for e in tree.expressions]


def test_the_first_name_unique_per_row_names_the_row() -> None:
    assert _shown(_customers(COMPANIES)) == ["company_name"]


def test_a_name_rows_share_is_passed_over_for_the_next() -> None:
    # three companies over five customers: the contact is what is one per row
    assert _shown(_customers(COMPANIES[:3])) == ["contact_name"]
