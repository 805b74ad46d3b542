"""First questions the readers refused for grammar, not for a name (issue 45, s58): on
schemas of their own (no dev set's), "have N <quantity>" is the rows whose quantity
column holds N, as "with N <quantity>" is; "list the N <superlative> <rows>" lists the
rows, ranked and cut at N; "onto" is a preposition like "into"; "Who <verb> X?" asks for
the rows of the one table named by the verb's agent noun ("teach" -> ``teacher``); and a
group of rows shows the column called what its table is called beside its name; "list
the <rows> older than N" lists the rows the comparative says (s59)."""

from __future__ import annotations

from datetime import date

from sqlglot import exp

from services.sql.catalog import Catalog, ColumnInfo, ForeignKeyInfo, JoinGraph, TableInfo
from services.sql.linker import LinkError, Vocabulary, agent_nouns, agent_table
from tests.unit.sql.schemas import col, key, linked_statement

TODAY = date(2026, 11, 30)


HARBOUR = Catalog(
    "harbour",
    (
        TableInfo(
            "public",
            "boats",
            columns=(
                key("boat_id"),
                col("name", "text", ("Aurora", "Selkie")),
                col("engines"),
                col("berths"),
                ColumnInfo("year", "integer", True, span=(1960, 2020)),
                col("date_on_register", "date"),
                col("skipper_id"),
            ),
            primary_key=("boat_id",),
            foreign_keys=(ForeignKeyInfo(("skipper_id",), "public.skippers", ("skipper_id",)),),
        ),
        TableInfo(
            "public",
            "skippers",
            columns=(key("skipper_id"), col("name", "text", ("Ines", "Ravi")), col("age")),
            primary_key=("skipper_id",),
        ),
    ),
)

ACADEMY = Catalog(
    "academy",
    (
        TableInfo(
            "public",
            "instructor",
            columns=(key("instructor_id"), col("name", "text", ("Mara", "Tove")), col("age")),
            primary_key=("instructor_id",),
        ),
        TableInfo(
            "public",
            "subject",
            columns=(key("subject_id"), col("subject", "text", ("Chemistry", "Latin"))),
            primary_key=("subject_id",),
        ),
        TableInfo(
            "public",
            "lesson_plan",
            columns=(key("instructor_id"), key("subject_id"), col("level")),
            primary_key=("instructor_id", "subject_id"),
            foreign_keys=(
                ForeignKeyInfo(("instructor_id",), "public.instructor", ("instructor_id",)),
                ForeignKeyInfo(("subject_id",), "public.subject", ("subject_id",)),
            ),
        ),
    ),
)


def _where(tree: exp.Select) -> str:
    where = tree.args.get("where")
    return where.sql(dialect="postgres") if where is not None else ""


def test_having_a_number_of_a_quantity_is_the_rows_whose_column_holds_it() -> None:
    tree = linked_statement("How many boats have 2 engines?", HARBOUR, TODAY)
    assert tree.find(exp.Count) is not None
    assert _where(tree) == "WHERE (t0.engines = 2)"


def test_having_a_number_of_rows_of_a_table_is_no_column_value() -> None:
    # "skippers" names a table: "have 2 skippers" is no value of a quantity column
    try:
        tree = linked_statement("How many boats have 2 skippers?", HARBOUR, TODAY)
    except LinkError:
        return
    assert "= 2" not in _where(tree)


def test_the_n_superlative_rows_lists_the_rows_ranked_and_cut() -> None:
    tree = linked_statement("List the 2 youngest skippers.", HARBOUR, TODAY)
    shown = [e.alias_or_name for e in tree.expressions]
    assert "name" in shown
    order = tree.args["order"].expressions[0]
    assert order.this.name == "age" and not order.args.get("desc")
    assert tree.args["limit"].expression.name == "2"


def test_onto_is_a_preposition_not_a_name() -> None:
    tree = linked_statement("How many boats went onto the register in 2019?", HARBOUR, TODAY)
    assert "date_on_register" in _where(tree)
    assert "2019-01-01" in _where(tree)


def test_agent_nouns_are_made_as_english_makes_them() -> None:
    assert {"teacher", "instructor", "creator", "runner"} <= (
        agent_nouns("teaches") | agent_nouns("instructs") | agent_nouns("creates")
        | agent_nouns("runs")
    )  # fmt: skip


def test_who_and_a_verb_whose_agent_noun_is_a_table_asks_for_its_rows() -> None:
    words = Vocabulary(ACADEMY, JoinGraph(ACADEMY))
    assert agent_table(words, "Who instructs Chemistry?") == "Which instructor instructs Chemistry?"
    assert agent_table(words, "Who is Mara?") is None
    assert agent_table(words, "Who studies Latin?") is None  # no table is a "studier"
    tree = linked_statement("Who instructs Chemistry?", ACADEMY, TODAY)
    # one row per instructor: the instructors having such a lesson (an EXISTS), shown by
    # name as "of those, who instructs Chemistry?" after the instructors shows them
    assert [e.alias_or_name for e in tree.expressions] == ["name"]
    assert tree.find(exp.Exists) is not None
    assert {t.name for t in tree.find_all(exp.Table)} == {"instructor", "lesson_plan", "subject"}
    assert "'Chemistry'" in _where(tree)


YARDS = Catalog(
    "yards",
    (
        TableInfo(
            "public",
            "boat_builders",
            columns=(
                key("id"),
                col("builder", "text", ("feadship", "lurssen")),
                col("fullname", "text", ("Koninklijke De Vries", "Lurssen Werft")),
            ),
            primary_key=("id",),
        ),
        TableInfo(
            "public",
            "hulls",
            columns=(key("hull_id"), col("builder"), col("length")),
            primary_key=("hull_id",),
            foreign_keys=(ForeignKeyInfo(("builder",), "public.boat_builders", ("id",)),),
        ),
    ),
)


def test_a_group_of_rows_shows_the_column_called_what_its_table_is_called() -> None:
    # "boat_builders.builder" names a builder as much as its "fullname" does: grouped by
    # the key, both are shown (no row changes); a listing is left as it was
    tree = linked_statement("How many hulls does each boat builder have?", YARDS, TODAY)
    shown = [e.alias_or_name for e in tree.expressions]
    assert {"fullname", "builder", "count"} <= set(shown)


def test_rows_then_a_comparative_list_the_rows_that_compare() -> None:
    # "the skippers older than 40": a relative clause without its "who are"
    tree = linked_statement("List the skippers older than 40.", HARBOUR, TODAY)
    assert _where(tree) == "WHERE (t0.age > 40)"
    assert "name" in [e.alias_or_name for e in tree.expressions]
    tree = linked_statement("Show the skippers younger than 40.", HARBOUR, TODAY)
    assert _where(tree) == "WHERE (t0.age < 40)"
