"""A year said after many words bounds the date column those words name in part, never
one they do not name at all: each unexplained word lowers a column's name score, so
among many words a date named in part ("orders" of ``order_date``) scored below zero,
under dates not named (``required_date``), and "how many orders did Margaret Peacock take
in 1997" counted the orders due in 1997. Found on northwind's employees
(services/bench/golden/conversations_sql-unseen_v8.json, northwind-e7)."""

from __future__ import annotations

from datetime import date

from services.sql.catalog._catalog import Catalog, ColumnInfo, ForeignKeyInfo, TableInfo
from services.sql.catalog._joins import JoinGraph
from services.sql.linker import Vocabulary, read_question
from services.sql.linker._linker import link_question


def _col(name: str, data_type: str = "text") -> ColumnInfo:
    return ColumnInfo(name, data_type, True)


STORE = Catalog(
    "store",
    (
        TableInfo(
            "public",
            "employees",
            columns=(
                _col("employee_id", "integer"),
                ColumnInfo("last_name", "text", True, sample_values=("Peacock", "Fuller")),
                ColumnInfo("first_name", "text", True, sample_values=("Margaret", "Andrew")),
            ),
            primary_key=("employee_id",),
        ),
        TableInfo(
            "public",
            "orders",
            columns=(
                _col("order_id", "integer"),
                _col("employee_id", "integer"),
                _col("order_date", "date"),
                _col("required_date", "date"),
                _col("shipped_date", "date"),
                _col("freight", "numeric"),
            ),
            primary_key=("order_id",),
            foreign_keys=(ForeignKeyInfo(("employee_id",), "public.employees", ("employee_id",)),),
        ),
    ),
)
VOCABULARY = Vocabulary(STORE, JoinGraph(STORE))


def _sql(question: str) -> str:
    return link_question(read_question(question, VOCABULARY, date(2026, 12, 1))).sql


def test_a_year_after_many_words_bounds_the_date_they_name_in_part() -> None:
    sql = _sql("how many orders did Margaret Peacock take in 1997")
    assert "t0.order_date >= '1997-01-01'" in sql, sql
    assert "required_date" not in sql, sql


def test_a_date_named_outright_still_wins() -> None:
    sql = _sql("how many orders were shipped in 1997")
    assert "shipped_date >= '1997-01-01'" in sql, sql
