"""Issue 45 (s59): a count per earlier row names each row by the column the earlier answer
named it by. "how many models does each of them have?" after "Which car makers are based
in germany?" (listed by ``maker``) was grouped per maker and labelled with ``fullname``
only: each count right, said of rows the earlier answer never named so, and scored wrong
against the question spelled out, which shows ``maker``. The real linker reads each
question; the follow-up's statement is built as the engine builds it."""

from __future__ import annotations

from datetime import date

import sqlglot
from sqlglot import exp

from services.sql.catalog import Catalog, ForeignKeyInfo, TableInfo
from services.sql.conversation import deciding, labels, named_as_before, restrict, subject
from tests.unit.sql.schemas import col, linked_statement

TODAY = date(2026, 11, 30)

CARS = Catalog(
    "cars",
    (
        TableInfo(
            "public",
            "countries",
            columns=(col("countryid"), col("countryname", "text", ("germany", "japan"))),
            primary_key=("countryid",),
        ),
        TableInfo(
            "public",
            "car_makers",
            columns=(
                col("id"),
                col("maker", "text", ("bmw", "opel", "honda")),
                col("fullname", "text", ("BMW", "Opel", "Honda")),
                col("country"),
            ),
            primary_key=("id",),
            foreign_keys=(ForeignKeyInfo(("country",), "public.countries", ("countryid",)),),
        ),
        TableInfo(
            "public",
            "model_list",
            columns=(col("modelid"), col("maker"), col("model", "text", ("amc", "audi"))),
            primary_key=("modelid",),
            foreign_keys=(ForeignKeyInfo(("maker",), "public.car_makers", ("id",)),),
        ),
    ),
)


def _sql(question: str) -> str:
    return linked_statement(question, CARS, TODAY).sql(dialect="postgres")


def _follow_up(earlier: str, asked: str) -> str:
    """The result reference's statement as the engine builds it."""
    about = subject(earlier, CARS)
    linked = _sql(asked)
    sql = restrict(
        linked, earlier, about, labels(earlier, about, CARS), deciding(earlier, about, CARS),
        catalog=CARS,
    )  # fmt: skip
    return named_as_before(sql, earlier, about, CARS)


def _tree(sql: str) -> exp.Select:
    tree = sqlglot.parse_one(sql, dialect="postgres")
    assert isinstance(tree, exp.Select)
    return tree


def _shown(sql: str) -> list[str]:
    return [e.alias_or_name for e in _tree(sql).expressions]


def test_a_count_per_earlier_row_names_it_as_the_earlier_answer_did():
    earlier = _sql("Which car makers are based in germany?")
    assert _shown(earlier) == ["maker"]
    sql = _follow_up(earlier, "How many models does each of the car makers have?")
    shown = _shown(sql)
    assert "maker" in shown and "count" in shown
    grouped = {c.name for c in _tree(sql).args["group"].expressions}
    assert {"id", "maker"} <= grouped  # grouped by the key: the column changes no group


def test_a_count_per_earlier_row_already_named_so_is_left_alone():
    # the earlier answer named the makers by their full names, which the count shows
    earlier = _sql("What are the full names of the car makers based in germany?")
    about = subject(earlier, CARS)
    sql = restrict(_sql("How many models does each of the car makers have?"), earlier, about,
                   catalog=CARS)  # fmt: skip
    assert named_as_before(sql, earlier, about, CARS) == sql


def test_a_listing_and_a_total_get_no_column_from_it():
    earlier = _sql("Which car makers are based in germany?")
    about = subject(earlier, CARS)
    # one total over the earlier rows: no group per row to name
    total = restrict(_sql("How many models do the car makers have?"), earlier, about,
                     catalog=CARS)  # fmt: skip
    assert named_as_before(total, earlier, about, CARS) == total
    # grouped by something other than the earlier rows' key: a column could split groups
    other = "SELECT t0.fullname AS fullname, COUNT(*) AS count FROM public.car_makers AS t0 GROUP BY t0.fullname"  # noqa: E501
    assert named_as_before(other, earlier, about, CARS) == other
