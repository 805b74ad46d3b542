"""Issue 45 (s61, exists2): which columns a listing shows follows from the statement's
shape, not from which reader linked its words. "Which museums did the visitors visit?"
names its rows by the table, read as what names a museum (its key and its name); "Which
museums did the visitors older than 30 visit?" is read by the clause reader, which names
a museum by its name. Both list the museums having such a visit: the key read only as a
name is left to the label rule (``linker._unasked``, ``results.with_labels``), so both
show the names over one EXISTS, as a follow-up about the earlier visitors does. The key
stays where it tells groups apart, where it is asked for, and where a DISTINCT the words
asked for would merge two rows of one name without it. The real linker reads each."""

from __future__ import annotations

from sqlglot import exp

from services.sql.catalog import Catalog, ForeignKeyInfo, TableInfo
from tests.unit.sql.schemas import col, linked_statement
from tests.unit.sql.test_sql_row_labels import TODAY

MUSEUMS = Catalog(
    "museums",
    (
        TableInfo(
            "public",
            "museum",
            columns=(
                col("museum_id"),
                col("name", "text", ("Plaza Museum", "Capital Plaza Museum")),
                col("num_of_staff"),
                col("open_year", "text", ("2000", "2012")),
            ),
            primary_key=("museum_id",),
        ),
        TableInfo(
            "public",
            "visitor",
            columns=(
                col("id"),
                col("name", "text", ("Gonzalo Higuaín", "Fernando Gago")),
                col("level_of_membership"),
                col("age"),
            ),
            primary_key=("id",),
        ),
        TableInfo(
            "public",
            "visit",
            columns=(col("museum_id"), col("visitor_id"), col("num_of_ticket")),
            primary_key=("museum_id", "visitor_id"),
            foreign_keys=(
                ForeignKeyInfo(("museum_id",), "public.museum", ("museum_id",)),
                ForeignKeyInfo(("visitor_id",), "public.visitor", ("id",)),
            ),
        ),
    ),
)


def _shown(tree: exp.Expr) -> list[str]:
    return [e.alias_or_name for e in tree.expressions]


def test_the_museums_the_visitors_visited_show_alike_whatever_the_wording():
    for question in (
        "Which museums did the visitors visit?",
        "Which museums did the visitors with membership level 6 visit?",
    ):
        tree = linked_statement(question, MUSEUMS, TODAY)
        assert tree.find(exp.Exists) is not None and not tree.args.get("joins"), question
        assert "museum_id" not in _shown(tree) and "name" in _shown(tree), question
    # visitors a range chose are several that differ by more than it says: each visit is
    # a pair the visit table records, shown with the visitor's name (``results._pairs``,
    # s64), still without the key
    ranged = linked_statement("Which museums did the visitors older than 30 visit?", MUSEUMS, TODAY)
    assert _shown(ranged) == ["visitor_name", "museum_name"]


def test_the_key_stays_where_it_tells_groups_apart_or_is_asked_for():
    grouped = linked_statement("How many visits does each museum have?", MUSEUMS, TODAY)
    assert "museum_id" in _shown(grouped)
    asked = linked_statement("List the ids and names of all museums.", MUSEUMS, TODAY)
    assert _shown(asked)[:2] == ["museum_id", "name"]


def test_a_text_key_and_a_key_beside_stated_names_stay():
    """An airport's ``faa`` is what airports are said by, not a row number; and "the
    museums called Plaza Museum" states the names, so the key is what the answer shows."""
    from tests.unit.sql.flights import FLIGHTS

    airports = linked_statement(
        "Which airports are in the America/Chicago time zone?", FLIGHTS, TODAY
    )
    assert _shown(airports)[:2] == ["faa", "name"]
    called = linked_statement("Which museums are called Plaza Museum?", MUSEUMS, TODAY)
    assert _shown(called) == ["museum_id", "name"]
