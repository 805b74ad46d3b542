"""A value said after the words of a table's reference to itself names the row referred
to ("who reports to Andrew Fuller?": Fuller is the one ``reports_to`` points at): a
statement filtering the rows it answers with by that value is refused; the statement that
joins the referred-to row and filters it passes, and so does the value said before the
words ("who does Andrew Fuller report to?"). Found on northwind's employees
(services/bench/golden/conversations_sql-unseen_v8.json, northwind-e2)."""

from __future__ import annotations

from datetime import date

import pytest

from services.sql.catalog._catalog import Catalog, ColumnInfo, ForeignKeyInfo, TableInfo
from services.sql.catalog._joins import JoinGraph
from services.sql.linker import LinkError, Vocabulary, read_question
from services.sql.verify._phrases import verify_statement


def _col(name: str, data_type: str = "text") -> ColumnInfo:
    return ColumnInfo(name, data_type, True)


STAFF = Catalog(
    "staff",
    (
        TableInfo(
            "public",
            "employees",
            columns=(
                _col("employee_id", "integer"),
                _col("last_name"),
                _col("first_name"),
                _col("title"),
                _col("reports_to", "integer"),
            ),
            primary_key=("employee_id",),
            foreign_keys=(ForeignKeyInfo(("reports_to",), "public.employees", ("employee_id",)),),
        ),
    ),
)
VOCABULARY = Vocabulary(STAFF, JoinGraph(STAFF))
NAMED = "(t0.first_name = 'Andrew') AND (t0.last_name = 'Fuller')"


def _verify(question: str, sql: str) -> None:
    verify_statement(read_question(question, VOCABULARY, date(2026, 12, 1)), sql)


@pytest.mark.parametrize(
    ("question", "sql"),
    [
        (  # the name's own row, shown through its reference: whom Fuller reports to
            "who reports to Andrew Fuller",
            f"SELECT t0.reports_to AS reports_to FROM public.employees AS t0 WHERE {NAMED}",
        ),
        (  # the name's own row listed: Fuller himself
            "Which employees report to Andrew Fuller?",
            "SELECT t0.employee_id AS employee_id, t0.first_name AS first_name, "
            "t0.last_name AS last_name, t0.title AS title "
            f"FROM public.employees AS t0 WHERE {NAMED}",
        ),
    ],
)
def test_a_value_after_the_reference_words_filtering_the_rows_answered_is_refused(
    question: str, sql: str
) -> None:
    with pytest.raises(LinkError, match="reports_to refers to"):
        _verify(question, sql)


@pytest.mark.parametrize(
    ("question", "sql"),
    [
        (  # the referred-to row joined and named: the right reading
            "Which employees report to Andrew Fuller?",
            "SELECT t0.first_name AS first_name, t0.last_name AS last_name "
            "FROM public.employees AS t0 JOIN public.employees AS t1 "
            "ON t1.employee_id = t0.reports_to "
            "WHERE (t1.first_name = 'Andrew') AND (t1.last_name = 'Fuller')",
        ),
        (  # the value before the words: the row asked about is Fuller's own
            "who does Andrew Fuller report to",
            "SELECT t1.first_name AS first_name, t1.last_name AS last_name "
            "FROM public.employees AS t0 JOIN public.employees AS t1 "
            f"ON t1.employee_id = t0.reports_to WHERE {NAMED}",
        ),
    ],
)
def test_the_referred_row_named_or_the_value_before_the_words_passes(
    question: str, sql: str
) -> None:
    _verify(question, sql)
