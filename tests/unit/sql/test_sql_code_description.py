"""A row kept by a code is said by what the code means (issue 45, s62): a reference table
keyed by a text code and named by nothing else ("template types": ``template_type_code``,
``template_type_description``) shows its description beside the code wherever a grouped
answer shows that entity — a count per type, a ranking of types, and a follow-up regrouped
onto the types (``linker.entity_columns``, the one rule)."""

from __future__ import annotations

from datetime import date

import sqlglot
from sqlglot import exp

from services.sql.catalog import Catalog, ColumnInfo, ForeignKeyInfo, TableInfo
from services.sql.conversation._followup import regrouped
from services.sql.linker import entity_columns
from tests.unit.sql.schemas import key, linked_statement

TODAY = date(2026, 11, 30)

TYPES = TableInfo(
    "public", "ref_template_types",
    columns=(ColumnInfo("template_type_code", "text", False, sample_values=("PP", "BK", "AD")),
             ColumnInfo("template_type_description", "text", False,
                        sample_values=("Presentation", "Book", "Advertisement"))),
    primary_key=("template_type_code",),
)  # fmt: skip
TEMPLATES = TableInfo(
    "public", "templates",
    columns=(key("template_id"), ColumnInfo("version_number", "integer", False),
             ColumnInfo("template_type_code", "text", False)),
    primary_key=("template_id",),
    foreign_keys=(
        ForeignKeyInfo(("template_type_code",), "public.ref_template_types",
                       ("template_type_code",)),
    ),
)  # fmt: skip
DOCS = Catalog("docs", (TYPES, TEMPLATES))


def _shown(tree: exp.Select) -> list[str]:
    return [e.alias_or_name for e in tree.expressions]


def test_a_ranking_of_rows_kept_by_a_code_shows_what_the_code_means():
    tree = linked_statement("Which template type has the most templates?", DOCS, TODAY)
    assert _shown(tree)[:2] == ["template_type_code", "template_type_description"], tree.sql()
    assert tree.args["limit"] is not None


def test_the_description_is_the_keys_own_and_only_beside_a_code():
    assert entity_columns(TYPES) == ["template_type_code", "template_type_description"]
    # a number key with free text beside it is no code: nothing is read as what it means
    notes = TableInfo(
        "public", "notes",
        columns=(key("id"), ColumnInfo("description", "text", True)),
        primary_key=("id",),
    )  # fmt: skip
    assert entity_columns(notes) == ["id"]


def test_a_follow_up_regrouped_onto_the_types_shows_them_as_the_linker_does():
    per_version = (
        "SELECT t0.version_number, COUNT(*) AS count FROM public.templates AS t0 "
        "GROUP BY t0.version_number"
    )
    tree = linked_statement("How many templates does each template type have?", DOCS, TODAY)
    followed = sqlglot.parse_one(regrouped(per_version, "template type", DOCS), dialect="postgres")
    assert isinstance(followed, exp.Select)
    assert _shown(followed) == _shown(tree) == [
        "template_type_code", "template_type_description", "count",
    ], followed.sql()  # fmt: skip
