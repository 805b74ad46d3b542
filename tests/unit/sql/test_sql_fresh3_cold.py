"""What the cold follow-up scripts of s62 (fresh3) caught, each as the general rule that
fixed it: a headless breakdown ("transactions per ticker type", "singers by country")
counts, or is refused, but is never answered by a listing; a grouping phrase whose words
name two columns of one table ("engine type" on planes with ``engine`` and ``type``) is
refused, as asked and in a regroup; a calendar word is not answered by another table's
column of that name while the counted rows have a date; and the rows of an earlier
breakdown's groups keep the conditions that chose them."""

from __future__ import annotations

from datetime import date

import pytest

from services.sql.catalog._catalog import Catalog, ColumnInfo, ForeignKeyInfo, TableInfo
from services.sql.catalog._joins import JoinGraph
from services.sql.conversation._followup import regrouped, restrict, subject
from services.sql.conversation._statement import FollowUpError
from services.sql.linker import LinkError, QuestionLinker, Vocabulary, read_question
from services.sql.linker._rephrasing import counted_bare
from services.sql.linker._shape import _named_apart
from services.sql.linker._vocabulary import Col
from services.sql.verify import verify_statement

TODAY = date(2026, 11, 29)


def _col(name: str, data_type: str = "text") -> ColumnInfo:
    return ColumnInfo(name, data_type, True)


def _table(name: str, *columns: ColumnInfo, fks: tuple[ForeignKeyInfo, ...] = ()) -> TableInfo:
    return TableInfo("public", name, columns=columns, primary_key=(columns[0].name,),
                     foreign_keys=fks)  # fmt: skip


SINGERS = Catalog(
    "concerts",
    (_table("singer", _col("singer_id", "integer"), _col("name"), _col("country"),
            _col("age", "integer")),),
)  # fmt: skip
PLANES = Catalog(
    "air",
    (_table("planes", _col("tailnum"), _col("year", "integer"), _col("type"),
            _col("manufacturer"), _col("engine"), _col("model"), _col("seats", "integer")),),
)  # fmt: skip
DEALER = Catalog(
    "dealer",
    (
        _table("cars", _col("id", "integer"), _col("make"), _col("year", "integer")),
        _table("sales", _col("id", "integer"), _col("car_id", "integer"),
               _col("sale_date", "date"),
               fks=(ForeignKeyInfo(("car_id",), "public.cars", ("id",)),)),
        _table("payments_received", _col("id", "integer"), _col("sale_id", "integer"),
               _col("payment_date", "date"), _col("payment_method"),
               fks=(ForeignKeyInfo(("sale_id",), "public.sales", ("id",)),)),
    ),
)  # fmt: skip
USERS = Catalog(
    "wallet",
    (_table("users", _col("uid", "integer"), _col("username"), _col("country"),
            _col("status")),),
)  # fmt: skip


def _sql(question: str, catalog: Catalog) -> str:
    vocabulary = Vocabulary(catalog, JoinGraph(catalog))
    linked = QuestionLinker(question, vocabulary, TODAY, check=verify_statement).link()
    return " ".join(linked.sql.split())


@pytest.mark.parametrize(
    ("asked", "read"),
    [
        ("transactions per ticker type", "How many transactions per ticker type"),
        ("singers by country", "How many singers by country"),
        ("the users per country", "How many users per country"),
        ("flights to LAX per carrier", "How many flights to LAX per carrier"),
    ],
)
def test_a_headless_breakdown_is_read_as_a_count(asked: str, read: str) -> None:
    assert counted_bare(asked) == read


@pytest.mark.parametrize(
    "question",
    [
        "how many planes per manufacturer",  # a head of its own
        "list singers by country",  # a request: "by" may sort
        "avg weight per year",  # a measure said
        "planes made by Boeing",  # a passive's agent, no breakdown
        "rooms with a price per night over 100",  # a rate, not a breakdown
        "singers older than 30",  # nothing to group by
    ],
)
def test_a_question_with_a_head_or_no_breakdown_is_left_as_it_is(question: str) -> None:
    assert counted_bare(question) == question


def test_singers_by_country_counts_per_country_and_is_never_a_listing() -> None:
    sql = _sql("singers by country", SINGERS)
    assert "COUNT(*)" in sql and "GROUP BY t0.country" in sql


def test_a_listing_with_a_head_of_its_own_is_not_counted() -> None:
    sql = _sql("list the singers by country", SINGERS)
    assert "COUNT" not in sql and "GROUP BY" not in sql


def test_two_columns_named_by_one_grouping_phrase_are_refused() -> None:
    with pytest.raises(LinkError, match=r"may name planes\.engine or planes\.type"):
        _sql("how many planes per engine type", PLANES)


def test_a_grouping_phrase_naming_one_column_still_groups() -> None:
    assert "GROUP BY t0.type" in _sql("how many planes per type", PLANES)
    assert "GROUP BY t0.manufacturer" in _sql("how many planes per manufacturer", PLANES)


BY_MAKER = "SELECT t0.manufacturer, COUNT(*) FROM public.planes AS t0 WHERE t0.year > 2005 GROUP BY t0.manufacturer"  # noqa: E501


def test_a_regroup_whose_words_name_two_columns_is_refused() -> None:
    with pytest.raises(FollowUpError, match=r"may name planes\.engine or planes\.type"):
        regrouped(BY_MAKER, "engine type", PLANES)


def test_a_regroup_by_one_column_keeps_its_reading() -> None:
    assert "GROUP BY t0.engine" in regrouped(BY_MAKER, "engine", PLANES)
    assert "GROUP BY t0.type" in regrouped(BY_MAKER, "type", PLANES)
    # a head read alone: the other word names no column, or the head is no noun of kinds
    assert "GROUP BY t0.year" in regrouped(BY_MAKER, "build year", PLANES)
    assert "GROUP BY t0.year" in regrouped(BY_MAKER, "model year", PLANES)


def test_per_year_of_dated_rows_is_their_own_year_not_a_joined_year_column() -> None:
    sql = _sql("How many payments received per year?", DEALER)
    assert "cars" not in sql and "payment_date" in sql and "GROUP BY" in sql


def test_per_year_of_a_table_without_a_date_keeps_its_year_column() -> None:
    assert "GROUP BY t0.year" in _sql("How many cars per year?", DEALER)


ACTIVE_BY_COUNTRY = (
    "SELECT t0.country AS country, COUNT(*) AS count FROM users AS t0 "
    "WHERE (t0.status = 'active') GROUP BY t0.country"
)


def test_the_rows_of_earlier_groups_keep_the_conditions_that_chose_them() -> None:
    about = subject(ACTIVE_BY_COUNTRY, USERS)
    sql = restrict("SELECT t0.username FROM users AS t0", ACTIVE_BY_COUNTRY, about)
    kept = sql.split("IN (SELECT")[0]  # the follow-up's own conditions, not the earlier's
    assert "t0.status = 'active'" in kept and "t0.country IN" in sql


def test_groups_read_without_conditions_are_kept_by_their_values_alone() -> None:
    plain = "SELECT t0.country AS country, COUNT(*) AS count FROM users AS t0 GROUP BY t0.country"
    about = subject(plain, USERS)
    sql = restrict("SELECT t0.username FROM users AS t0", plain, about)
    assert "status" not in sql and "t0.country IN" in sql


def test_only_a_noun_of_kinds_makes_a_two_column_phrase_ambiguous() -> None:
    """ "model year" on a table with ``model`` and ``year`` is the year (a defog
    follow-up, 'and by model year as well', is right so); "engine type" is refused."""
    planes = PLANES.tables[0]
    by_name = {c.name: c for c in planes.columns}
    context = Vocabulary(PLANES, JoinGraph(PLANES))
    ctx = read_question("how many planes per model year", context, TODAY)
    _named_apart(ctx, "model year", ["model", "year"], Col(planes, by_name["year"]))
    with pytest.raises(LinkError, match="may name"):
        _named_apart(ctx, "engine type", ["engine", "type"], Col(planes, by_name["type"]))


CARS_DATA = Catalog(
    "cars",
    (_table("cars_data", _col("id", "integer"), _col("cylinders", "integer"),
            _col("weight", "integer"), ColumnInfo("year", "integer", True, span=(1970, 1982))),),
)  # fmt: skip
PROPERTIES = Catalog(
    "estate",
    (_table("properties", _col("property_id", "integer"), _col("property_type_code"),
            _col("property_name"), _col("room_count", "integer"),
            _col("agreed_selling_price", "numeric")),),
)  # fmt: skip


@pytest.mark.parametrize("question", ["avg weight per year", "average weight per year"])
def test_a_calendar_word_on_rows_without_a_date_groups_by_its_column(question: str) -> None:
    """ "per year" of ``cars_data``, which has no date, is its ``year`` column."""
    assert _sql(question, CARS_DATA).endswith("GROUP BY t0.year")


def test_a_calendar_word_on_dated_rows_still_takes_their_date() -> None:
    sql = _sql("How many payments received per year?", DEALER)
    assert "CAST(EXTRACT(YEAR FROM t0.payment_date) AS INTEGER)" in sql


def test_per_a_column_named_after_the_measured_table_groups_by_the_column() -> None:
    """ "per property type" names ``property_type_code`` of the measured rows, not a rate
    over them ("per property")."""
    sql = _sql("avg agreed selling price per property type", PROPERTIES)
    assert sql.endswith("GROUP BY t0.property_type_code")


def test_per_the_measured_table_alone_is_still_a_rate() -> None:
    with pytest.raises(LinkError, match="per"):
        _sql("average room count per property", PROPERTIES)


LISTED = Catalog(
    "estate",
    (_table("properties", _col("property_id", "integer"), _col("property_name"),
            _col("agreed_selling_price", "numeric"),
            _col("date_on_market", "timestamp without time zone")),),
)  # fmt: skip
_ASKED = "What is the average agreed selling price of properties on the market {} 2000?"


@pytest.mark.parametrize(
    ("words", "bound"),
    [
        ("since the start of", "WHERE (t0.date_on_market >= '2000-01-01')"),
        ("after the beginning of", "WHERE (t0.date_on_market >= '2000-01-01')"),
        ("before the start of", "WHERE (t0.date_on_market < '2000-01-01')"),
        ("since", "WHERE (t0.date_on_market >= '2000-01-01')"),
    ],
)
def test_the_start_of_a_year_is_a_bound_not_the_year(words: str, bound: str) -> None:
    """ "since the start of 2000" was read as the year 2000 alone ("of 2000"), a wrong."""
    assert _sql(_ASKED.format(words), LISTED).endswith(bound)


def test_in_a_year_is_still_that_year() -> None:
    sql = _sql(_ASKED.format("in"), LISTED)
    assert "'2000-01-01' AND t0.date_on_market < '2001-01-01'" in sql
