"""Right or refused, issue 45: a row of an entity table shown as a group of the answer is
identified by its key and what names it, never by a bare key a reader cannot read, nor by
a bare name that two rows may share. The statement groups by the key either way, so the
rows are the same; only what identifies them changes. The real linker and verifier read
each question; the statements are checked by what they show and group."""

from __future__ import annotations

from datetime import date

import sqlglot
from sqlglot import exp

from services.sql.catalog import Catalog, ColumnInfo, ForeignKeyInfo, JoinGraph, TableInfo
from services.sql.linker import QuestionLinker, Vocabulary
from services.sql.verify import verify_statement

TODAY = date(2026, 11, 29)


def _col(name: str, data_type: str = "integer", samples: tuple[str, ...] = ()) -> ColumnInfo:
    return ColumnInfo(name, data_type, True, sample_values=samples)


def _statement(question: str, catalog: Catalog) -> exp.Select:
    vocabulary = Vocabulary(catalog, JoinGraph(catalog))
    linked = QuestionLinker(question, vocabulary, TODAY, check=verify_statement).link()
    tree = sqlglot.parse_one(linked.sql, dialect="postgres")
    assert isinstance(tree, exp.Select)
    return tree


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
                _col("id"),
                _col("maker", "text", ("amc", "volkswagen")),
                _col("fullname", "text", ("American Motor Company", "Volkswagen")),
                _col("country"),
            ),
            primary_key=("id",),
        ),
        TableInfo(
            "public",
            "model_list",
            columns=(_col("modelid"), _col("maker"), _col("model", "text", ("amc", "audi"))),
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
            columns=(_col("stadium_id"), _col("name", "text", ("Hampden Park", "Glebe Park"))),
            primary_key=("stadium_id",),
        ),
        TableInfo(
            "public",
            "concert",
            columns=(
                _col("concert_id"),
                _col("concert_name", "text", ("Auditions", "Super bootcamp")),
                _col("stadium_id"),
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
                _col("drug_id"),
                _col("brand_name", "text", ("Dupixent", "Humira")),
                _col("generic_name", "text", ("dupilumab", "adalimumab")),
            ),
            primary_key=("drug_id",),
        ),
        TableInfo(
            "public",
            "treatments",
            columns=(_col("treatment_id"), _col("drug_id"), _col("dose", "numeric")),
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
    # ``fullname`` names the maker: shown beside the key, not the key alone
    tree = _statement("How many models does each car maker have?", CARS)
    assert _shown(tree) == ["car_makers.id", "car_makers.fullname"]


def test_two_names_that_tie_are_both_shown_with_the_key():
    tree = _statement("How many treatments does each drug have?", DRUGS)
    assert _shown(tree) == ["drugs.drug_id", "drugs.brand_name", "drugs.generic_name"]
    assert _grouped(tree) >= {"drugs.drug_id"}


def test_a_listing_without_groups_is_left_as_asked():
    # no grouping: each row once, by its name; a key added here could change the rows
    tree = _statement("List the names of all stadiums.", ARENAS)
    assert _shown(tree) == ["stadium.name"]
