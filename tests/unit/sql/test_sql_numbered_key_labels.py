"""Which columns show a table's rows (issue 45, s67): read from the data and the schema,
one definition for every reader.

A text key that stores only numbers (northwind's ``territory_id``: '01581') says no
territory; the table's description does, whatever the key's name ends in
(``results.numbered_key``). An employee is shown by first and last name on every path:
"average freight per employee" (the entity reader, ``_lookup.label_columns``) and the
same question spelled out with a filter (the clause reader, ``grouped_labels``) show the
same columns, not the job titles many employees share. A table the rows refer to, named
by a word that names a column of theirs too ("orders *shipped*": ``shippers`` and the
orders' ``ship_name``) and used for nothing, is not joined (``clauses._referred``)."""

from __future__ import annotations

from datetime import date

from services.sql.catalog import Catalog, ColumnInfo, ForeignKeyInfo, TableInfo
from services.sql.linker import entity_columns
from tests.unit.sql.schemas import col, key, linked_sql, linked_statement

TODAY = date(2026, 12, 1)

EMPLOYEES = TableInfo(
    "public", "employees",
    columns=(key("employee_id"),
             col("last_name", "text", ("Davolio", "Fuller", "Leverling", "Peacock", "King")),
             col("first_name", "text", ("Nancy", "Andrew", "Janet", "Margaret", "Robert")),
             col("title", "text", ("Sales Representative", "Vice President, Sales")),
             col("title_of_courtesy", "text", ("Ms.", "Dr.", "Mr.")),
             col("city", "text", ("Seattle", "Tacoma", "London"))),
    primary_key=("employee_id",),
    row_estimate=9,
)  # fmt: skip
SHIPPERS = TableInfo(
    "public", "shippers",
    columns=(key("shipper_id"),
             col("company_name", "text", ("Speedy Express", "United Package", "Federal Shipping")),
             col("phone", "text", ("(503) 555-9831", "(503) 555-3199", "(503) 555-9931"))),
    primary_key=("shipper_id",),
    row_estimate=3,
)  # fmt: skip
ORDERS = TableInfo(
    "public", "orders",
    columns=(key("order_id"), col("employee_id"), col("shipper_id"),
             col("shipped_date", "date"),
             col("ship_name", "text", ("Alfreds Futterkiste", "Ernst Handel")),
             col("freight", "numeric(10,2)"),
             col("ship_country", "text", ("Germany", "France", "Brazil"))),
    primary_key=("order_id",),
    foreign_keys=(ForeignKeyInfo(("employee_id",), "public.employees", ("employee_id",)),
                  ForeignKeyInfo(("shipper_id",), "public.shippers", ("shipper_id",))),
    row_estimate=830,
)  # fmt: skip
TERRITORIES = TableInfo(
    "public", "territories",
    columns=(ColumnInfo("territory_id", "text", False,
                        sample_values=("01581", "01730", "02116", "48075")),
             col("territory_description", "text", ("Westboro", "Bedford", "Boston", "Southfield")),
             col("region_id")),
    primary_key=("territory_id",),
    row_estimate=53,
)  # fmt: skip
COVERS = TableInfo(
    "public", "employee_territories",
    columns=(ColumnInfo("employee_id", "integer", False),
             ColumnInfo("territory_id", "text", False)),
    primary_key=("employee_id", "territory_id"),
    foreign_keys=(
        ForeignKeyInfo(("employee_id",), "public.employees", ("employee_id",)),
        ForeignKeyInfo(("territory_id",), "public.territories", ("territory_id",)),
    ),
)  # fmt: skip
STORE = Catalog("store", (EMPLOYEES, SHIPPERS, ORDERS, TERRITORIES, COVERS))


def _shown(question: str) -> list[str]:
    return [e.alias_or_name for e in linked_statement(question, STORE, TODAY).expressions]


def test_a_text_key_of_digits_is_shown_by_its_description():
    assert entity_columns(TERRITORIES) == ["territory_id", "territory_description"]
    assert _shown("Which territories does Robert King cover?") == ["territory_description"]


def test_a_text_key_of_letters_stays_what_a_row_is_read_by():
    # the same shape keyed by letter codes ('JFK'): the key is a label a person reads,
    # and a listing shows it, as before
    airports = TableInfo(
        "public", "airport_list",
        columns=(ColumnInfo("airport_id", "text", False, sample_values=("JFK", "LGA", "EWR")),
                 col("airport_description", "text", ("Kennedy", "LaGuardia", "Newark"))),
        primary_key=("airport_id",),
        row_estimate=3,
    )  # fmt: skip
    assert entity_columns(airports) == ["airport_id"]


def test_an_employee_is_shown_by_name_on_both_readers():
    alone = _shown("average freight per employee")
    spelled = _shown("What is the average freight of the orders shipped to Germany, per employee?")
    assert alone == spelled == ["employee_id", "first_name", "last_name", "avg_freight"]


def test_a_table_the_rows_refer_to_named_and_used_for_nothing_is_not_joined():
    # "shipped" names the shippers too; each order refers to its one shipper, so the join
    # would only drop orders without one, which no word asked
    sql = linked_sql("What is the average freight of the orders shipped to Germany?", STORE, TODAY)
    assert "shippers" not in sql, sql
    assert "ship_country = 'Germany'" in sql, sql


def test_rows_said_to_have_a_row_of_the_table_they_refer_to_keep_the_restriction():
    sql = linked_sql("Which orders have a shipper?", STORE, TODAY)
    assert "shippers" in sql, sql
