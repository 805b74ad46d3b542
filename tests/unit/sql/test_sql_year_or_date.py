"""Whole years said of a table that keeps both a date and a year: ``cars.crtd_ts`` (when
the row was written) and ``cars.year`` (the model year). "Which cars were built after
2021?" was read on the timestamp, a confident wrong (defog v4 filter script, s59): the
words name neither column, so the question is refused naming both; words that name one
("the model year", "created") take it. A table with only a date, or only a year, keeps
its one reading. On a schema of its own."""

from __future__ import annotations

from dataclasses import replace
from datetime import date

import pytest

from services.sql.catalog import Catalog, ColumnInfo, TableInfo
from services.sql.linker import LinkError
from tests.unit.sql.schemas import col, linked_statement

TODAY = date(2026, 11, 30)


def _garage(*, stamp: bool = True, year: bool = True) -> Catalog:
    columns = [
        ColumnInfo("car_id", "integer", False),
        col("make", "text", ("Toyota", "Ford")),
        col("model", "text", ("Camry", "Focus")),
    ]
    if year:
        columns.append(replace(col("year"), span=(2015, 2023)))
    if stamp:
        columns.append(ColumnInfo("crtd_ts", "timestamp without time zone", False))
    return Catalog(
        "garage", (TableInfo("public", "cars", columns=tuple(columns), primary_key=("car_id",)),)
    )


def test_years_said_of_a_table_with_both_are_refused_naming_both() -> None:
    with pytest.raises(LinkError, match=r"cars\.year or cars\.crtd_ts"):
        linked_statement("Which cars were built after 2021?", _garage(), TODAY)


def test_words_that_name_the_year_column_take_it() -> None:
    sql = linked_statement("Which cars have a model year after 2021?", _garage(), TODAY).sql()
    assert "year > 2021" in sql or "year >= 2022" in sql, sql


def test_a_table_with_one_of_them_keeps_its_reading() -> None:
    only_stamp = linked_statement("Which cars were built after 2021?", _garage(year=False), TODAY)
    assert "crtd_ts" in only_stamp.sql()
    only_year = linked_statement("Which cars were built after 2021?", _garage(stamp=False), TODAY)
    assert "year" in only_year.sql()


def test_a_year_spelled_out_beside_the_other_parts_of_the_date_is_the_same_date() -> None:
    """``weather.year`` beside ``month``, ``day`` and ``time_hour`` is the year of the
    reading's own time: no second reading, "of 2013" is read as before."""
    weather = Catalog(
        "weather",
        (
            TableInfo(
                "public",
                "weather",
                columns=(
                    ColumnInfo("reading_id", "integer", False),
                    replace(col("year"), span=(2013, 2013)),
                    col("month"),
                    col("day"),
                    col("temp", "numeric"),
                    ColumnInfo("time_hour", "timestamp with time zone", False),
                ),
                primary_key=("reading_id",),
            ),
        ),
    )
    sql = linked_statement("What was the average temp in each month of 2013?", weather, TODAY).sql()
    assert "AVG(" in sql and "2013" in sql, sql
