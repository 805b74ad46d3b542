"""Right or refused, issue 45: a row of an entity table shown as a group of the answer is
identified by its key and what names it, never by a bare key a reader cannot read, nor by
a bare name that two rows may share. The statement groups by the key either way, so the
rows are the same; only what identifies them changes. The real linker and verifier read
each question; the statements are checked by what they show and group."""

from __future__ import annotations

from datetime import date

from sqlglot import exp

from services.sql.catalog import Catalog, ForeignKeyInfo, TableInfo
from tests.unit.sql.schemas import col, linked_statement

TODAY = date(2026, 11, 29)


def _statement(question: str, catalog: Catalog) -> exp.Select:
    return linked_statement(question, catalog, TODAY)


def _shown(tree: exp.Select) -> list[str]:
    """The plain columns the statement shows, as ``table.column``."""
    aliases = {t.alias_or_name: t.name for t in tree.find_all(exp.Table)}
    return [
        f"{aliases[e.unalias().table]}.{e.unalias().name}"
        for e in tree.expressions
        if isinstance(e.unalias(), exp.Column)
    ]


def _grouped(tree: exp.Select) -> set[str]:
    group = tree.args.get("group")
    assert group is not None, "the statement does not group"
    aliases = {t.alias_or_name: t.name for t in tree.find_all(exp.Table)}
    return {f"{aliases[c.table]}.{c.name}" for c in group.find_all(exp.Column)}


# A maker's short name is also what the table is called; its whole name is ``fullname``,
# whose last letters spell ``lname`` without being a last name.
CARS = Catalog(
    "cars",
    (
        TableInfo(
            "public",
            "car_makers",
            columns=(
                col("id"),
                col("maker", "text", ("amc", "volkswagen")),
                col("fullname", "text", ("American Motor Company", "Volkswagen")),
                col("country"),
            ),
            primary_key=("id",),
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

# Stadiums named by ``name``; two stadiums may be called alike.
ARENAS = Catalog(
    "arenas",
    (
        TableInfo(
            "public",
            "stadium",
            columns=(col("stadium_id"), col("name", "text", ("Hampden Park", "Glebe Park"))),
            primary_key=("stadium_id",),
        ),
        TableInfo(
            "public",
            "concert",
            columns=(
                col("concert_id"),
                col("concert_name", "text", ("Auditions", "Super bootcamp")),
                col("stadium_id"),
            ),
            primary_key=("concert_id",),
            foreign_keys=(ForeignKeyInfo(("stadium_id",), "public.stadium", ("stadium_id",)),),
        ),
    ),
)

# A product named twice over: its trade name and its generic name; neither is the name.
DRUGS = Catalog(
    "derm",
    (
        TableInfo(
            "public",
            "drugs",
            columns=(
                col("drug_id"),
                col("brand_name", "text", ("Dupixent", "Humira")),
                col("generic_name", "text", ("dupilumab", "adalimumab")),
            ),
            primary_key=("drug_id",),
        ),
        TableInfo(
            "public",
            "treatments",
            columns=(col("treatment_id"), col("drug_id"), col("dose", "numeric")),
            primary_key=("treatment_id",),
            foreign_keys=(ForeignKeyInfo(("drug_id",), "public.drugs", ("drug_id",)),),
        ),
    ),
)


def test_a_group_per_row_shows_its_key_beside_its_name():
    tree = _statement("How many concerts are there in each stadium?", ARENAS)
    assert _shown(tree) == ["stadium.stadium_id", "stadium.name"]
    assert _grouped(tree) == {"stadium.stadium_id", "stadium.name"}


def test_the_row_ranked_first_is_shown_by_key_and_name():
    tree = _statement("Which stadium has the most concerts?", ARENAS)
    assert _shown(tree) == ["stadium.stadium_id", "stadium.name"]
    # ties at the cut are still broken by the name first
    order = tree.args["order"].expressions
    assert [o.this.name for o in order[1:]] == ["name", "stadium_id"]


def test_a_whole_name_is_not_read_as_a_last_name():
    # ``fullname`` names the maker: shown beside the key, not the key alone (and beside
    # ``maker``, the column called what the table is called: test_sql_first_turns)
    tree = _statement("How many models does each car maker have?", CARS)
    assert _shown(tree) == ["car_makers.id", "car_makers.fullname", "car_makers.maker"]


def test_two_names_that_tie_are_both_shown_with_the_key():
    tree = _statement("How many treatments does each drug have?", DRUGS)
    assert _shown(tree) == ["drugs.drug_id", "drugs.brand_name", "drugs.generic_name"]
    assert _grouped(tree) >= {"drugs.drug_id"}


def test_a_listing_without_groups_is_left_as_asked():
    # no grouping: each row once, by its name; the names alone are what it asks, so no
    # key is shown beside them (results.with_labels adds one where names label a value)
    tree = _statement("List the names of all stadiums.", ARENAS)
    assert _shown(tree) == ["stadium.name"]
