"""Right or refused, issue 45: a word that names a column of the measured or counted
table itself is read there, not as a look-alike several joins away. Each schema below
has the look-alike on purpose: a second table with a ``month``, a second "type" table
reached through a child table, a stored count per row of a table that refers to the
grouped one. The real linker and verifier read each question; the statements are
checked by what they group, aggregate and join."""

from __future__ import annotations

from datetime import date

import pytest
from sqlglot import exp

from services.sql.catalog import Catalog, ForeignKeyInfo, JoinGraph, TableInfo
from services.sql.linker import LinkError, Vocabulary, read_question
from services.sql.verify import verify_statement
from tests.unit.sql.schemas import col, linked_statement

TODAY = date(2026, 11, 24)


def _statement(question: str, catalog: Catalog) -> exp.Select:
    return linked_statement(question, catalog, TODAY)


def _tables(tree: exp.Select) -> set[str]:
    return {t.name for t in tree.find_all(exp.Table)}


def _grouped(tree: exp.Select) -> set[str]:
    group = tree.args.get("group")
    assert group is not None, "the statement does not group"
    aliases = {t.alias_or_name: t.name for t in tree.find_all(exp.Table)}
    return {f"{aliases[c.table]}.{c.name}" for c in group.find_all(exp.Column)}


# Readings taken at stations each hour, and trips that leave from the stations: both
# hold a month; a trip's month says nothing of when a reading was taken.
STATIONS = Catalog(
    "stations",
    (
        TableInfo(
            "public",
            "stations",
            columns=(col("code", "text", ("NTH", "STH")), col("name", "text")),
            primary_key=("code",),
        ),
        TableInfo(
            "public",
            "trips",
            columns=(
                col("trip_id"),
                col("origin", "text"),
                col("year"),
                col("month"),
                col("day"),
                col("distance"),
            ),
            primary_key=("trip_id",),
            foreign_keys=(ForeignKeyInfo(("origin",), "public.stations", ("code",)),),
        ),
        TableInfo(
            "public",
            "readings",
            columns=(
                col("origin", "text"),
                col("year"),
                col("month"),
                col("day"),
                col("temp", "double precision"),
                col("taken_at", "timestamp with time zone"),
            ),
            primary_key=("origin", "taken_at"),
            foreign_keys=(ForeignKeyInfo(("origin",), "public.stations", ("code",)),),
        ),
    ),
)


def test_each_month_of_a_year_groups_the_measured_rows_by_their_own_month() -> None:
    """ "each month of 2013" named ``trips.month`` as well as ``readings.month``: grouping
    by the trips' month joined every reading to every trip from its station."""
    tree = _statement("What was the average temp in each month of 2013?", STATIONS)
    assert _grouped(tree) == {"readings.month"}
    assert _tables(tree) == {"readings"}


# Houses of a type, and the features a house has (a child table), each feature of a
# type too: "type" names both type tables equally.
HOUSES = Catalog(
    "houses",
    (
        TableInfo(
            "public",
            "ref_house_types",
            columns=(
                col("house_type_code", "text", ("Flat", "Villa")),
                col("house_type_description", "text"),
            ),
            primary_key=("house_type_code",),
        ),
        TableInfo(
            "public",
            "ref_feature_types",
            columns=(
                col("feature_type_code", "text", ("Amenity", "Security")),
                col("feature_type_name", "text"),
            ),
            primary_key=("feature_type_code",),
        ),
        TableInfo(
            "public",
            "features",
            columns=(
                col("feature_id"),
                col("feature_type_code", "text"),
                col("feature_name", "text"),
            ),
            primary_key=("feature_id",),
            foreign_keys=(
                ForeignKeyInfo(
                    ("feature_type_code",), "public.ref_feature_types", ("feature_type_code",)
                ),
            ),
        ),
        TableInfo(
            "public",
            "houses",
            columns=(
                col("house_id"),
                col("house_type_code", "text"),
                col("house_name", "text"),
                col("room_count"),
            ),
            primary_key=("house_id",),
            foreign_keys=(
                ForeignKeyInfo(
                    ("house_type_code",), "public.ref_house_types", ("house_type_code",)
                ),
            ),
        ),
        TableInfo(
            "public",
            "house_features",
            columns=(col("house_id"), col("feature_id"), col("feature_value", "text")),
            foreign_keys=(
                ForeignKeyInfo(("house_id",), "public.houses", ("house_id",)),
                ForeignKeyInfo(("feature_id",), "public.features", ("feature_id",)),
            ),
        ),
    ),
)


@pytest.mark.parametrize("order", [1, -1], ids=["as-listed", "reversed"])
def test_each_type_of_the_counted_rows_is_the_type_they_refer_to(order: int) -> None:
    """ "each type" named ``ref_house_types`` and ``ref_feature_types`` equally, and the
    first listed won; the feature types were reached through ``house_features`` (many
    rows per house), so the count was of features, not houses. The type a house itself
    refers to is one join away, in whatever order the catalog lists the tables."""
    catalog = Catalog("houses", HOUSES.tables[::order])
    tree = _statement("How many houses are there of each type?", catalog)
    assert _tables(tree) == {"houses", "ref_house_types"}
    # the code key, named by its own description column (``results.with_shown``)
    assert _grouped(tree) == {
        "ref_house_types.house_type_code",
        "ref_house_types.house_type_description",
    }


# Visits to galleries, each storing how many tickets were bought on it.
GALLERIES = Catalog(
    "galleries",
    (
        TableInfo(
            "public",
            "gallery",
            columns=(col("gallery_id"), col("name", "text"), col("open_year")),
            primary_key=("gallery_id",),
        ),
        TableInfo(
            "public",
            "visitor",
            columns=(col("id"), col("name", "text"), col("age")),
            primary_key=("id",),
        ),
        TableInfo(
            "public",
            "visit",
            columns=(
                col("gallery_id"),
                col("visitor_id"),
                col("num_of_ticket"),
                col("total_spent", "double precision"),
            ),
            primary_key=("gallery_id", "visitor_id"),
            foreign_keys=(
                ForeignKeyInfo(("gallery_id",), "public.gallery", ("gallery_id",)),
                ForeignKeyInfo(("visitor_id",), "public.visitor", ("id",)),
            ),
        ),
    ),
)


def test_how_many_of_a_stored_count_for_each_referred_row_is_its_sum() -> None:
    """ "How many tickets … at each gallery" over ``visit.num_of_ticket``: listed as it
    was, every gallery came once per visit with that visit's tickets."""
    tree = _statement("How many tickets were bought at each gallery?", GALLERIES)
    sums = list(tree.find_all(exp.Sum))
    assert len(sums) == 1 and sums[0].this.name == "num_of_ticket"
    assert "gallery.gallery_id" in _grouped(tree)


def _verified(question: str, sql: str) -> bool:
    vocabulary = Vocabulary(GALLERIES, JoinGraph(GALLERIES))
    try:
        verify_statement(read_question(question, vocabulary, TODAY), sql)
    except LinkError:
        return False
    return True


VISITS = "FROM public.visit AS t0 JOIN public.gallery AS t1 ON t1.gallery_id = t0.gallery_id"


@pytest.mark.parametrize(
    ("question", "sql", "passes"),
    [
        # the visits listed: each gallery once per visit, none with one count
        (
            "How many tickets were bought at each gallery?",
            f"SELECT t0.num_of_ticket AS num_of_ticket, t1.name AS name {VISITS}",
            False,
        ),
        (
            "How many tickets were bought at each gallery?",
            f"SELECT DISTINCT t0.num_of_ticket AS num_of_ticket {VISITS}",
            False,
        ),
        (
            "How many tickets were bought at each gallery?",
            f"SELECT t1.name AS name, SUM(t0.num_of_ticket) AS tickets {VISITS} "
            "GROUP BY t1.name, t1.gallery_id",
            True,
        ),
        # the named table's own rows: one row per gallery
        (
            "How many years has each gallery been open?",
            "SELECT t0.name AS name, 2026 - t0.open_year AS years FROM public.gallery AS t0",
            True,
        ),
    ],
)
def test_a_count_for_each_row_is_not_answered_by_the_rows_that_refer_to_it(
    question: str, sql: str, passes: bool
) -> None:
    assert _verified(question, sql) is passes


# The same stations, the code now stored in all three tables, trips listed first: a value
# the question names is held by the measured rows and by two look-alikes a join or two
# away (the first listed of them a table of trips, many per station).
STORED = Catalog(
    "stored",
    (
        TableInfo(
            "public",
            "trips",
            columns=(
                col("trip_id"),
                col("origin", "text", ("NTH", "STH", "WST")),
                col("month"),
                col("distance"),
            ),
            primary_key=("trip_id",),
            foreign_keys=(ForeignKeyInfo(("origin",), "public.stations", ("code",)),),
        ),
        TableInfo(
            "public",
            "stations",
            columns=(col("code", "text", ("NTH", "STH", "WST")), col("name", "text")),
            primary_key=("code",),
        ),
        TableInfo(
            "public",
            "readings",
            columns=(
                col("origin", "text", ("NTH", "STH", "WST")),
                col("year"),
                col("month"),
                col("temp", "double precision"),
                col("taken_at", "timestamp with time zone"),
            ),
            primary_key=("origin", "taken_at"),
            foreign_keys=(ForeignKeyInfo(("origin",), "public.stations", ("code",)),),
        ),
    ),
)

# Readings that refer to a site and to a zone, both coded 'NTH'/'STH': either is one join
# from the readings, and nothing says which the code names.
TIED = Catalog(
    "tied",
    (
        TableInfo(
            "public",
            "sites",
            columns=(col("code", "text", ("NTH", "STH")), col("name", "text")),
            primary_key=("code",),
        ),
        TableInfo(
            "public",
            "zones",
            columns=(col("code", "text", ("NTH", "STH")), col("label", "text")),
            primary_key=("code",),
        ),
        TableInfo(
            "public",
            "readings",
            columns=(
                col("reading_id"),
                col("site", "text"),
                col("zone", "text"),
                col("temp", "double precision"),
            ),
            primary_key=("reading_id",),
            foreign_keys=(
                ForeignKeyInfo(("site",), "public.sites", ("code",)),
                ForeignKeyInfo(("zone",), "public.zones", ("code",)),
            ),
        ),
    ),
)


def _filtered(tree: exp.Select) -> set[str]:
    where = tree.args.get("where")
    assert where is not None, "the statement has no condition"
    aliases = {t.alias_or_name: t.name for t in tree.find_all(exp.Table)}
    return {
        f"{aliases[c.table]}.{c.name}"
        for eq in where.find_all(exp.EQ)
        for c in eq.find_all(exp.Column)
    }


@pytest.mark.parametrize(
    "question",
    [
        "What was the average temp at NTH in each month of 2013?",
        "How many NTH readings were there in each month?",
        "How many NTH readings were there?",
    ],
)
def test_a_value_the_measured_rows_hold_is_read_on_them(question: str) -> None:
    """'NTH' is stored in ``readings.origin`` and in two look-alikes; the first listed,
    ``trips.origin``, joined every reading to every trip from its station (a SUM or a
    COUNT multiplied). The measured rows' own column needs no join."""
    tree = _statement(question, STORED)
    assert _tables(tree) == {"readings"}
    assert _filtered(tree) == {"readings.origin"}


def test_a_value_equally_near_in_two_tables_is_refused() -> None:
    """'NTH' is a site's code and a zone's, each one join from the readings: taking the
    first listed would be a guess, and a wrong one half the time."""
    with pytest.raises(LinkError):
        _statement("What was the average temp at NTH?", TIED)


def test_a_value_only_a_joined_table_holds_is_still_read_there() -> None:
    """The nearest rule places a value among the columns holding it, measured rows
    first: a sum over trips filters the trips' own ``origin``, not the readings'."""
    tree = _statement("What was the total distance of trips from WST?", STORED)
    assert _filtered(tree) == {"trips.origin"}
