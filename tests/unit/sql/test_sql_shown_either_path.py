"""The same columns shown whichever reading answered (issue 45, s63 shown): a count per
code-keyed type shows the type's description whether the code was read on the reference
table or on the table that refers to it, and a listing of rows named by a name glued into
one word (``countryname``, as a schema written in one case stores ``CountryName``) shows
the names alone, whether the question said "list the countries …" or "which countries …"."""

from __future__ import annotations

from datetime import date

from sqlglot import exp

from services.sql.catalog import Catalog, ColumnInfo, ForeignKeyInfo, TableInfo
from services.sql.results import name_columns
from tests.unit.sql.schemas import col, key, linked_statement

TODAY = date(2026, 11, 30)

# real_estate_properties' shape: properties refer to a type by its text code, and the
# reference table says what each code means
TYPES = TableInfo(
    "public", "ref_property_types",
    columns=(ColumnInfo("property_type_code", "text", False, sample_values=("House", "Flat")),
             ColumnInfo("property_type_description", "text", False,
                        sample_values=("Detached house", "Apartment"))),
    primary_key=("property_type_code",),
)  # fmt: skip
PROPERTIES = TableInfo(
    "public", "properties",
    columns=(key("property_id"), ColumnInfo("property_type_code", "text", False),
             col("property_name", "text", ("park avenue", "the cottage")), col("room_count")),
    primary_key=("property_id",),
    foreign_keys=(
        ForeignKeyInfo(("property_type_code",), "public.ref_property_types",
                       ("property_type_code",)),
    ),
)  # fmt: skip
ESTATE = Catalog("estate", (TYPES, PROPERTIES))

# car_1's shape: a country named by ``countryname``, in a continent by number
CONTINENTS = TableInfo(
    "public", "continents",
    columns=(key("contid"), col("continent", "text", ("america", "europe", "asia"))),
    primary_key=("contid",),
)  # fmt: skip
COUNTRIES = TableInfo(
    "public", "countries",
    columns=(key("countryid"), col("countryname", "text", ("usa", "germany", "france")),
             col("continent")),
    primary_key=("countryid",),
    foreign_keys=(ForeignKeyInfo(("continent",), "public.continents", ("contid",)),),
)  # fmt: skip
CARS = Catalog("cars", (CONTINENTS, COUNTRIES))


def _shown(tree: exp.Select) -> list[str]:
    return [e.alias_or_name for e in tree.expressions]


def test_a_count_per_referring_code_shows_the_description_as_the_reference_table_does():
    by_table = linked_statement("How many properties are there per property type?", ESTATE, TODAY)
    by_code = linked_statement(
        "How many properties are there per property type code?", ESTATE, TODAY
    )
    assert _shown(by_code) == _shown(by_table) == [
        "property_type_code", "property_type_description", "count",
    ], by_code.sql()  # fmt: skip
    # read from the referring column, the description comes by a LEFT JOIN on the key:
    # a code nothing describes keeps its row
    (join,) = by_code.args["joins"]
    assert join.side == "LEFT" and join.this.name == "ref_property_types"


def test_a_code_without_a_description_of_its_own_is_shown_alone():
    # the reference table's text beside its code is not the code's description
    plain = TableInfo(
        "public", "ref_property_types",
        columns=(ColumnInfo("property_type_code", "text", False, sample_values=("House",)),
                 ColumnInfo("notes", "text", True)),
        primary_key=("property_type_code",),
    )  # fmt: skip
    catalog = Catalog("estate", (plain, PROPERTIES))
    tree = linked_statement("How many properties are there per property type code?", catalog, TODAY)
    assert _shown(tree) == ["property_type_code", "count"], tree.sql()
    assert not tree.args.get("joins")


def test_a_name_glued_into_one_word_names_the_rows():
    assert name_columns(COUNTRIES) == ["countryname"]
    # glued onto another word it is left whole: a singer's "songname" names a song
    songs = TableInfo(
        "public", "singer",
        columns=(key("singer_id"), col("songname", "text"), col("country", "text")),
        primary_key=("singer_id",),
    )  # fmt: skip
    assert name_columns(songs) == []


def test_a_listing_said_with_list_shows_the_names_as_which_does():
    listed = linked_statement("list the countries whose continent is europe", CARS, TODAY)
    asked = linked_statement("Which countries are in Europe?", CARS, TODAY)
    assert _shown(listed) == _shown(asked) == ["countryname"], listed.sql()
