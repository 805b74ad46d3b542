"""A time grouping is shown one way on every path (``results._periods``): "per year" is
the year's number, a finer period the date it starts on — for the first question's
linker, the intents a model fills, the checks that read a statement back, and the
follow-ups that move its window."""

from __future__ import annotations

from datetime import date

from services.sql import Group, Intent, IntentKind, TimeGrain, compile_intent
from services.sql.catalog._catalog import Catalog, ColumnInfo, ForeignKeyInfo, TableInfo
from services.sql.catalog._joins import JoinGraph
from services.sql.conversation import Prior, Relation, built
from services.sql.linker import QuestionLinker, Vocabulary
from services.sql.verify import verify_statement
from tests.unit.sql.statements import assert_same_sql

TODAY = date(2026, 11, 29)


def _col(name: str, data_type: str = "text") -> ColumnInfo:
    return ColumnInfo(name, data_type, True)


DEALER = Catalog(
    "dealer",
    (
        TableInfo("public", "sales", columns=(_col("id", "integer"), _col("sale_date", "date"),
                  _col("sale_price", "numeric")), primary_key=("id",)),
        TableInfo("public", "payments_received",
                  columns=(_col("id", "integer"), _col("sale_id", "integer"),
                           _col("payment_date", "date"), _col("payment_method")),
                  primary_key=("id",),
                  foreign_keys=(ForeignKeyInfo(("sale_id",), "public.sales", ("id",)),)),
    ),
)  # fmt: skip
YEAR = "CAST(EXTRACT(YEAR FROM t0.payment_date) AS INTEGER)"


def _linked(question: str) -> tuple[str, str]:
    vocabulary = Vocabulary(DEALER, JoinGraph(DEALER))
    linked = QuestionLinker(question, vocabulary, TODAY, check=verify_statement).link()
    return " ".join(linked.sql.split()), linked.explanation


def test_per_year_groups_by_the_years_number_and_says_so() -> None:
    """2023, not 2023-01-01: the answer a reader and an ``EXTRACT(YEAR …)`` gold both
    give; a day would read as a day."""
    sql, interpretation = _linked("How many payments were received per year?")
    assert sql.startswith(f"SELECT {YEAR} AS year, COUNT(*)")
    assert sql.endswith(f"GROUP BY {YEAR} ORDER BY year ASC NULLS LAST")
    assert "DATE_TRUNC" not in sql
    assert "year of payment_date (as a number)" in interpretation


def test_per_month_keeps_its_year_as_the_months_first_day() -> None:
    """March 2023 and March 2024 are two months: the first day carries both parts."""
    sql, interpretation = _linked("How many payments were received per month?")
    assert "DATE_TRUNC('month', t0.payment_date) AS month" in sql
    assert "EXTRACT" not in sql
    assert "month of payment_date (its first day)" in interpretation
    assert sql.endswith("ORDER BY month ASC NULLS LAST")  # time order, said by the statement


def test_the_intents_path_groups_a_year_by_its_number() -> None:
    """A model's intent says the same year as the linker does; a month stays a date."""
    by_year = Intent(IntentKind.GROUP_BY, "sales", group_by=(Group("sale_date", TimeGrain.YEAR),))
    sql = compile_intent(by_year, DEALER, row_cap=50).sql
    assert "CAST(EXTRACT(YEAR FROM sales.sale_date) AS INT) AS sale_date_year" in sql
    by_month = Intent(IntentKind.GROUP_BY, "sales", group_by=(Group("sale_date", TimeGrain.MONTH),))
    sql = compile_intent(by_month, DEALER, row_cap=50).sql
    assert "CAST(DATE_TRUNC('month', sales.sale_date) AS DATE) AS sale_date_month" in sql


async def _unused_linker(question: str) -> str | None:
    return None


async def test_a_time_shift_moves_the_window_of_a_per_year_grouping() -> None:
    """ "and the year before" moves the compared window and keeps the years' numbers."""
    per_year = (
        "SELECT CAST(EXTRACT(YEAR FROM p.payment_date) AS INTEGER) AS year, COUNT(*) AS count "
        "FROM payments_received AS p WHERE p.payment_date >= '2023-01-01' "
        "AND p.payment_date < '2024-01-01' GROUP BY CAST(EXTRACT(YEAR FROM p.payment_date) "
        "AS INTEGER)"
    )
    prior = Prior(per_year, Relation.TIME_SHIFT, period="the year before")
    shifted = (await built(per_year, prior, DEALER, _unused_linker))[0]
    before = per_year.replace("'2023-01-01'", "'2022-01-01'").replace(
        "'2024-01-01'", "'2023-01-01'"
    )
    assert_same_sql(shifted, before)


def test_in_each_year_is_read_back_as_a_grouping_by_the_year() -> None:
    """The checks read the period of an ``EXTRACT`` back as they read a ``DATE_TRUNC``'s:
    "in each year" is answered by the year's number, not refused as grouped by no year."""
    sql, _ = _linked("How many payments were received in each year?")
    assert sql.endswith(f"GROUP BY {YEAR} ORDER BY year ASC NULLS LAST")
