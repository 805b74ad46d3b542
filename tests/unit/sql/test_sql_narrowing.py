"""The tables a question is linked against: copies left out unless named, and a wide
catalog narrowed to the tables (and the part of the warehouse) its words point at."""

from __future__ import annotations

from services.sql import Catalog, ColumnInfo, ForeignKeyInfo, TableInfo
from services.sql.catalog._catalog import JoinInfo, JoinOrigin
from services.sql.catalog._narrowing import NARROW_ABOVE, index_of

_SINGER = (
    ColumnInfo("singer_id", "integer", False),
    ColumnInfo("name", "text", True),
    ColumnInfo("country", "text", True, sample_values=("France", "Netherlands")),
)


def _singers(*extra: TableInfo) -> Catalog:
    copy = "same columns as public.singer, and public.singer is meant: other tables reference it"
    tables = (
        TableInfo(
            "archive",
            "singer",
            columns=_SINGER,
            lookalike_of="public.singer",
            lookalike_evidence=copy,
        ),
        TableInfo(
            "public",
            "concert",
            columns=(ColumnInfo("concert_id", "integer", False), ColumnInfo("year", "text", True)),
            primary_key=("concert_id",),
        ),
        TableInfo("public", "singer", columns=_SINGER, primary_key=("singer_id",)),
        TableInfo(
            "public",
            "singer_archive",
            columns=_SINGER,
            lookalike_of="public.singer",
            lookalike_evidence=copy,
        ),
        TableInfo(
            "public",
            "singer_in_concert",
            columns=(
                ColumnInfo("singer_id", "integer", False),
                ColumnInfo("concert_id", "integer", False),
            ),
            foreign_keys=(
                ForeignKeyInfo(("singer_id",), "public.singer", ("singer_id",)),
                ForeignKeyInfo(("concert_id",), "public.concert", ("concert_id",)),
            ),
        ),
        TableInfo(
            "public",
            "stg_singer",
            columns=_SINGER,
            lookalike_of="public.singer",
            lookalike_evidence=copy,
        ),
        *extra,
    )
    return Catalog("w", tables, joins=())


def _strangers(count: int) -> list[TableInfo]:
    """Tables of another source: travel bookings, each its own shape, one holding a
    country 'France' too."""
    return [
        TableInfo(
            "public",
            f"booking_{i}",
            columns=(
                ColumnInfo(f"booking_{i}_id", "integer", False),
                ColumnInfo("destination", "text", True, sample_values=("France", "Peru")),
                ColumnInfo(f"fare_{i}", "numeric", True),
            ),
        )
        for i in range(count)
    ]


def _names(catalog: Catalog) -> list[str]:
    return [t.qualified for t in catalog.tables]


def test_a_small_catalog_without_copies_is_linked_whole():
    plain = Catalog("w", tuple(t for t in _singers().tables if not t.lookalike_of))
    assert index_of(plain).narrow("How many singers are from France?").catalog is plain


def test_copies_are_left_out_and_named_in_the_answer():
    catalog = _singers()
    narrowed = index_of(catalog).narrow("How many singers are from France?")
    assert _names(narrowed.catalog) == [
        "public.concert",
        "public.singer",
        "public.singer_in_concert",
    ]
    assert narrowed.note(["public.singer"]) == (
        "Read public.singer, passing over its look-alikes archive.singer, "
        "public.singer_archive, public.stg_singer."
    )
    assert narrowed.note(["public.concert"]) == ""


def test_a_copy_the_question_names_stands_in_for_its_table():
    narrowed = index_of(_singers()).narrow("How many singers are in the singer archive?")
    names = _names(narrowed.catalog)
    assert "public.singer_archive" in names and "public.singer" not in names
    assert "archive.singer" not in names  # named by the same words; its own name says less
    assert narrowed.note(["public.singer_archive"]) == (
        "Read public.singer_archive, which the question names, rather than public.singer."
    )
    staged = index_of(_singers()).narrow("Count the stg singer rows")
    assert "public.stg_singer" in _names(staged.catalog)


def test_a_wide_catalog_is_narrowed_to_the_part_the_words_point_at():
    catalog = _singers(*_strangers(NARROW_ABOVE + 4))
    narrowed = index_of(catalog).narrow("Which singers from France sang in each concert?")
    # the strangers hold 'France' too, but the singers' part of the warehouse explains
    # more of the question; the bridge table comes along as a neighbour
    assert _names(narrowed.catalog) == [
        "public.concert",
        "public.singer",
        "public.singer_in_concert",
    ]
    fares = index_of(catalog).narrow("What is the average fare_3 of bookings to Peru?")
    assert "public.booking_3" in _names(fares.catalog)
    assert not {"public.singer", "public.concert"} & set(_names(fares.catalog))


def test_joins_and_instructions_point_at_tables_too():
    strangers = _strangers(NARROW_ABOVE + 4)
    # booking_0 and booking_1 are joined by an inferred key; nothing else joins them
    link = JoinInfo(
        "public.booking_1",
        ("booking_0_id",),
        "public.booking_0",
        ("booking_0_id",),
        JoinOrigin.INFERRED,
        "booking_0_id names the table",
    )
    # booking_2 and booking_3 only share values in a same-named column: a join path of
    # last resort, still one part of the warehouse
    shared = JoinInfo(
        "public.booking_3", ("destination",), "public.booking_2", ("destination",),
        JoinOrigin.INFERRED, "same name and shared values",
    )  # fmt: skip
    catalog = Catalog("w", _singers(*strangers).tables, joins=(link, shared))
    narrowed = index_of(catalog).narrow("What is the average fare_0?")
    assert {"public.booking_0", "public.booking_1"} <= set(_names(narrowed.catalog))
    assert narrowed.catalog.joins == (link,)
    assert "public.booking_3" in _names(index_of(catalog).narrow("What is the fare_2?").catalog)
    # "TSC" is a term only the request's instructions explain
    bare = index_of(catalog).narrow("What is the TSC?")
    told = index_of(catalog).narrow("What is the TSC?", context="TSC = count of singers")
    assert "public.singer" not in _names(bare.catalog)
    assert "public.singer" in _names(told.catalog)


def test_parts_the_words_fit_about_as_well_are_all_kept():
    # two unjoined tables the word "cars" names alike: the linker, not the narrowing,
    # tells which one "produced in 1980" is about
    makers = TableInfo(
        "public",
        "car_makers",
        columns=(ColumnInfo("maker_id", "integer", False), ColumnInfo("maker", "text", True)),
        primary_key=("maker_id",),
    )
    data = TableInfo(
        "public",
        "cars_data",
        columns=(ColumnInfo("car_id", "integer", False), ColumnInfo("year", "integer", True)),
        primary_key=("car_id",),
    )
    catalog = _singers(makers, data, *_strangers(NARROW_ABOVE + 4))
    narrowed = index_of(catalog).narrow("How many cars were produced in 1980?")
    assert {"public.car_makers", "public.cars_data"} <= set(_names(narrowed.catalog))
    assert "public.singer" not in _names(narrowed.catalog)


def test_a_word_keeps_the_table_it_names_when_other_words_choose_the_part():
    # makers and their models are joined; the cars stand alone (a warehouse without keys).
    # "makers" and "models" choose the makers' part, but "cars" names cars_data as
    # strongly as it names car_makers: the linker, which sees both in a small catalog,
    # must see both here, or it reads "cars" as the makers' rows
    makers = TableInfo(
        "public",
        "car_makers",
        columns=(ColumnInfo("id", "integer", False), ColumnInfo("maker", "text", True)),
        primary_key=("id",),
    )
    models = TableInfo(
        "public",
        "model_list",
        columns=(
            ColumnInfo("model_id", "integer", False),
            ColumnInfo("maker", "integer", True),
            ColumnInfo("model", "text", True),
        ),
        foreign_keys=(ForeignKeyInfo(("maker",), "public.car_makers", ("id",)),),
    )
    data = TableInfo(
        "public",
        "cars_data",
        columns=(ColumnInfo("car_id", "integer", False), ColumnInfo("year", "integer", True)),
        primary_key=("car_id",),
    )
    # strangers whose longer names say "car" and "maker" more weakly than the kept
    # tables' names do: neither is brought in
    stranger = TableInfo(
        "public",
        "stg_fleet_car_rental_2021",
        columns=(ColumnInfo("rental_id", "integer", False),),
    )
    workshop = TableInfo(
        "public",
        "maker_space_booking",
        columns=(ColumnInfo("space_id", "integer", False),),
    )
    catalog = _singers(makers, models, data, stranger, workshop, *_strangers(NARROW_ABOVE + 4))
    index = index_of(catalog)
    narrowed = _names(
        index.narrow("Which makers have at least 2 models and more than 3 cars?").catalog
    )
    assert {"public.car_makers", "public.model_list", "public.cars_data"} <= set(narrowed)
    assert not {"public.stg_fleet_car_rental_2021", "public.maker_space_booking"} & set(narrowed)
    assert "public.singer" not in narrowed


def test_a_stored_value_keeps_the_other_table_storing_the_same_kind_of_values():
    # shipments and their carriers are joined; the ports stand alone (no key declared,
    # and no shared values the join inference trusts). "shipments" and "Maersk" choose the
    # shipments' part, but 'RTM' is stored both as a shipment's origin and as the key of
    # the ports, two columns of the same codes: a small catalog's linker sees both
    # places, so the narrowing must not pick one for it
    codes = ("ANR", "FXT", "HAM", "RTM")
    carriers = TableInfo(
        "public",
        "carriers",
        columns=(
            ColumnInfo("carrier_id", "integer", False),
            ColumnInfo("carrier_name", "text", True, sample_values=("MSC", "Maersk")),
        ),
        primary_key=("carrier_id",),
    )
    shipments = TableInfo(
        "public",
        "shipments",
        columns=(
            ColumnInfo("shipment_id", "integer", False),
            ColumnInfo("carrier_id", "integer", True),
            ColumnInfo("origin", "text", True, sample_values=codes),
        ),
        foreign_keys=(ForeignKeyInfo(("carrier_id",), "public.carriers", ("carrier_id",)),),
    )
    ports = TableInfo(
        "public",
        "ports",
        columns=(
            ColumnInfo("port_code", "text", False, sample_values=(*codes, "SIN")),
            ColumnInfo("harbour", "text", True),
        ),
        primary_key=("port_code",),
    )
    # a stranger whose key stores 'RTM' among codes of other things (cities): it stays out
    venues = TableInfo(
        "public",
        "conference_venues",
        columns=(
            ColumnInfo("city", "text", False, sample_values=("BER", "LON", "NYC", "PAR", "RTM")),
            ColumnInfo("venue", "text", True),
        ),
        primary_key=("city",),
    )
    # a stranger storing the same codes in a column that is no key (its members' home
    # ports, repeated): an attribute of other things, not the list of ports; it stays out
    members = TableInfo(
        "public",
        "club_members",
        columns=(
            ColumnInfo("member_id", "integer", False),
            ColumnInfo("home_port", "text", True, sample_values=codes),
        ),
        primary_key=("member_id",),
    )
    catalog = _singers(carriers, shipments, ports, venues, members, *_strangers(NARROW_ABOVE + 4))
    index = index_of(catalog)
    narrowed = set(_names(index.narrow("How many shipments by Maersk left from RTM?").catalog))
    assert {"public.carriers", "public.shipments", "public.ports"} <= narrowed
    assert not {"public.conference_venues", "public.club_members"} & narrowed
    assert "public.singer" not in narrowed
    # the question's own words, not its instructions', keep such a table
    told = index.narrow("How many shipments by Maersk?", context="RTM and HAM only")
    assert "public.ports" not in _names(told.catalog)
