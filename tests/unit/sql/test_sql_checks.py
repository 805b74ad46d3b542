"""The verification checks' own logic, on a catalog written here: what a statement shows
(names asked for, averages of keys, counts the joins multiply) and what the data checks
derive from a statement (the literals to test and how, the ranked keys a cut is tested
on, the conditions an empty result is relaxed by, the joins held to keys). Each check is
shown refusing the statement it guards against and passing the right one; the database
side is tested in tests/integration/sql/test_sql_checks.py."""

from __future__ import annotations

from datetime import date

import pytest
import sqlglot

from services.sql.catalog._catalog import Catalog, ColumnInfo, ForeignKeyInfo, TableInfo
from services.sql.catalog._joins import JoinGraph
from services.sql.linker import LinkError, Vocabulary, read_question
from services.sql.verify import verify_statement
from services.sql.verify._joins import join_pairs, join_refusal
from services.sql.verify._outputs import check_outputs
from services.sql.verify._restricted import check_restricted
from services.sql.verify._rows import conditions, refusal, relaxations
from services.sql.verify._statement import StatementNodes, read_statement
from services.sql.verify._ties import ties_test
from services.sql.verify._values import ValueTest, settled, value_tests
from services.sql.words import measure_name
from tests.unit.sql.dealer import DEALER_WORDS


def _col(name: str, data_type: str = "integer", **kw: object) -> ColumnInfo:
    return ColumnInfo(name, data_type, True, **kw)  # type: ignore[arg-type]


CATALOG = Catalog(
    "docs",
    (
        TableInfo(
            "public",
            "templates",
            columns=(
                _col("template_id"),
                _col("template_type_code", "text", sample_values=("CV", "PPT")),
                _col("version_number"),
            ),
            primary_key=("template_id",),
        ),
        TableInfo(
            "public",
            "documents",
            columns=(
                _col("document_id"),
                _col("template_id"),
                _col("document_name", "text"),
                _col("page_count"),
                _col("created_on", "date"),
            ),
            primary_key=("document_id",),
            foreign_keys=(ForeignKeyInfo(("template_id",), "public.templates", ("template_id",)),),
        ),
        TableInfo(
            "public",
            "makers",
            columns=(_col("id"), _col("maker", "text"), _col("fullname", "text")),
            primary_key=("id",),
        ),
    ),
)
VOCABULARY = Vocabulary(CATALOG, JoinGraph(CATALOG))


def _outputs(question: str, sql: str) -> None:
    ctx = read_question(question, VOCABULARY, date(2026, 11, 24))
    check_outputs(ctx, sqlglot.parse_one(sql, read="postgres"))


def _tree(sql: str) -> sqlglot.exp.Expr:
    return sqlglot.parse_one(sql, read="postgres")


def _read(sql: str) -> StatementNodes:
    return read_statement(_tree(sql), CATALOG)


# --- what a statement shows -----------------------------------------------------------


def test_names_asked_and_only_ids_shown_is_refused() -> None:
    question = "What are the names and ids of all makers?"
    with pytest.raises(LinkError, match="asks for names; the statement shows no name"):
        _outputs(question, "SELECT t0.id AS id FROM public.makers AS t0")
    _outputs(question, "SELECT t0.fullname AS fullname, t0.id AS id FROM public.makers AS t0")
    # names said in a condition are no item asked for
    _outputs(
        "What are the ids of makers with the name Ford?", "SELECT t0.id FROM public.makers AS t0"
    )


def test_names_asked_in_a_later_sentence_count_too() -> None:
    question = (
        "How many documents does each template have? "
        "List the template id, the template name and the number."
    )
    counted = (
        "SELECT t1.template_id, t0.template_id, COUNT(*) FROM public.documents AS t0 "
        "JOIN public.templates AS t1 ON t1.template_id = t0.template_id GROUP BY 1, 2"
    )
    with pytest.raises(LinkError, match="asks for names"):
        _outputs(question, counted)


def test_a_count_of_references_is_refused_where_the_referred_rows_are_meant() -> None:
    question = "How many templates are used by documents named Plan?"
    with pytest.raises(LinkError, match="the documents rows that refer to templates"):
        _outputs(
            question,
            "SELECT COUNT(t0.template_id) FROM public.documents AS t0 "
            "WHERE t0.document_name = 'Plan'",
        )
    # distinct, or per group, each is what it says
    _outputs(
        question,
        "SELECT COUNT(DISTINCT t0.template_id) FROM public.documents AS t0 "
        "WHERE t0.document_name = 'Plan'",
    )
    _outputs(
        "How many documents use each template?",
        "SELECT t0.template_id, COUNT(t0.template_id) FROM public.documents AS t0 GROUP BY 1",
    )


def test_a_count_beside_a_subquery_over_referring_rows_is_not_multiplied() -> None:
    """ "How many templates are not used by any document?": the documents are read only
    inside the NOT EXISTS, which joins nothing to the counted rows; the check once took
    every table of the statement for the counting SELECT's and refused it."""
    question = "How many templates are not used by any document?"
    _outputs(
        question,
        "SELECT COUNT(*) FROM public.templates AS t0 WHERE NOT EXISTS "
        "(SELECT 1 FROM public.documents AS x WHERE x.template_id = t0.template_id)",
    )
    # the same count joined to the documents is still multiplied by them
    with pytest.raises(LinkError, match="counted once per documents row"):
        _outputs(
            question,
            "SELECT COUNT(*) FROM public.templates AS t0 JOIN public.documents AS t1 "
            "ON t1.template_id = t0.template_id",
        )


def test_an_average_of_keys_is_refused() -> None:
    question = "What is the average number of templates?"
    with pytest.raises(LinkError, match=r"AVG of templates\.template_id, a key"):
        _outputs(question, "SELECT AVG(t0.template_id) FROM public.templates AS t0")
    with pytest.raises(LinkError, match=r"SUM of documents\.template_id"):
        _outputs(question, "SELECT SUM(t0.template_id) FROM public.documents AS t0")
    _outputs(
        "What is the average page count?", "SELECT AVG(t0.page_count) FROM public.documents AS t0"
    )


def test_a_count_multiplied_by_a_join_to_referring_rows_is_refused() -> None:
    question = "Count the number of templates of the type CV."
    fanned = (
        "SELECT COUNT(*) FROM public.documents AS t0 JOIN public.templates AS t1 "
        "ON t1.template_id = t0.template_id WHERE t1.template_type_code = 'CV'"
    )
    with pytest.raises(LinkError, match="counted once per documents row"):
        _outputs(question, fanned)
    _outputs(
        question, "SELECT COUNT(*) FROM public.templates AS t0 WHERE t0.template_type_code = 'CV'"
    )
    # counting the referring rows through their parent is what "how many documents" asks
    _outputs(
        "How many documents use templates of type CV?",
        fanned.replace("COUNT(*)", "COUNT(*)"),
    )
    # per group, each count is meant
    _outputs(
        "How many documents does each template have?",
        "SELECT t1.template_id, COUNT(*) FROM public.documents AS t0 JOIN public.templates AS t1 "
        "ON t1.template_id = t0.template_id GROUP BY t1.template_id",
    )


def test_a_time_window_dropped_from_the_statement_is_refused() -> None:
    question = "Which documents were created 2 months before the document with id 3?"
    ctx = read_question(question, VOCABULARY, date(2026, 11, 24))
    with pytest.raises(LinkError, match="does not use the number 2"):
        verify_statement(
            ctx, "SELECT t0.document_name FROM public.documents AS t0 WHERE t0.document_id = 3"
        )
    # a statement that bounds the dates uses the window
    verify_statement(
        read_question(
            "Which documents were created in the last 2 months?", VOCABULARY, date(2026, 11, 24)
        ),
        "SELECT t0.document_name FROM public.documents AS t0 WHERE t0.created_on >= '2026-09-24'",
    )


def test_a_period_said_and_no_date_read_is_refused() -> None:
    def verify(question: str, sql: str) -> None:
        verify_statement(read_question(question, VOCABULARY, date(2026, 11, 24)), sql)

    question = "Which template has the most documents created in the same month as it?"
    counted = (
        "SELECT t1.template_id, COUNT(*) AS count FROM public.documents AS t0 JOIN "
        "public.templates AS t1 ON t1.template_id = t0.template_id GROUP BY t1.template_id "
        "ORDER BY count DESC LIMIT 1"
    )
    with pytest.raises(LinkError, match="reads no date for 'month'"):
        verify(question, counted)
    # a date column read (or a period grouped by, or a window) accounts for it
    verify(
        "How many documents were created each month?",
        "SELECT DATE_TRUNC('MONTH', t0.created_on) AS month, COUNT(*) AS count "
        "FROM public.documents AS t0 GROUP BY 1",
    )


# --- values ---------------------------------------------------------------------------


def test_values_are_decided_by_the_catalog_where_it_knows_them() -> None:
    (held,) = value_tests(_read("SELECT * FROM templates WHERE template_type_code = 'cv'"))
    assert held.held is True and not held.probe  # case is no difference
    (unknown,) = value_tests(_read("SELECT * FROM documents WHERE document_name = 'Plan'"))
    (folded,) = value_tests(_read("SELECT * FROM Templates WHERE Template_Type_Code = 'CV'"))
    assert folded.held is True
    assert unknown.held is None and unknown.probe.startswith('EXISTS (SELECT 1 FROM "public"')
    assert "lower(btrim(CAST(\"document_name\" AS TEXT))) = lower(btrim('Plan'))" in unknown.probe


def test_a_pattern_of_grammar_words_is_refused_but_letters_are_not() -> None:
    def only(sql: str) -> ValueTest:
        (test,) = value_tests(_read(sql))
        return test

    the = only("SELECT * FROM documents WHERE document_name ILIKE '%the%'")
    assert the.held is False and "holds no word that names anything" in the.refusal(None)  # type: ignore[arg-type]
    for pattern in ("J%", "%ez", "%a%", "%plan%", "US"):
        test = only(f"SELECT * FROM documents WHERE document_name ILIKE '{pattern}'")
        assert test.held is None and "ILIKE" in test.probe, pattern


def test_alternatives_need_one_value_held() -> None:
    tests = value_tests(
        _read(
            "SELECT * FROM documents WHERE document_name = 'A' OR document_name = 'B' "
            "AND template_id IN (SELECT template_id FROM templates WHERE template_type_code "
            "IN ('CV', 'XYZ'))"
        )
    )
    by_value = {t.literal: t for t in tests}
    assert by_value["A"].group == by_value["B"].group != 0  # one OR
    assert by_value["CV"].group == by_value["XYZ"].group != 0  # one IN list
    # the catalog's samples hold 'CV'; they may not be every value, so 'XYZ' is asked
    assert by_value["CV"].held is True and by_value["XYZ"].held is None
    assert by_value["XYZ"].probe
    held = {"A": None, "B": None, "CV": True, "XYZ": False}
    assert settled(tests, [held[t.literal] for t in tests]) is None  # 'CV' is held
    held.update(A=False, B=False)
    refused = settled(tests, [held[t.literal] for t in tests])
    assert refused is not None and refused.literal == "A"
    # a lone literal no row holds refuses on its own
    (alone,) = value_tests(_read("SELECT * FROM templates WHERE template_type_code = 'XYZ'"))
    assert settled([alone], [False]) is alone and settled([alone], [None]) is None


# --- ties -----------------------------------------------------------------------------


def test_a_ranking_is_tested_on_its_ranked_keys_not_its_tie_breakers() -> None:
    sql = (
        "SELECT t0.fullname AS fullname, COUNT(*) AS count FROM public.makers AS t0 "
        "GROUP BY t0.fullname, t0.id ORDER BY count DESC, fullname, t0.id LIMIT 3"
    )
    test = ties_test(_tree(sql), CATALOG)
    assert test is not None and test.limit == 3 and test.key == "count"
    assert "ORDER BY count DESC FETCH FIRST 3 ROWS WITH TIES" in test.kept_probe
    assert "ORDER BY" not in test.all_probe and "LIMIT" not in test.all_probe
    assert test.degenerate(kept=7, total=7) and not test.degenerate(kept=5, total=7)
    assert not test.degenerate(kept=3, total=3)  # as many rows as the cut: nothing cut
    two = sql.replace(
        "ORDER BY count DESC, fullname", "ORDER BY count DESC, AVG(t0.id) DESC, fullname"
    )
    test = ties_test(_tree(two), CATALOG)
    assert test is not None and test.key == "count, AVG(makers.id)"
    # no cut, an offset, a count that is no number: nothing to test
    assert ties_test(_tree(sql.replace(" LIMIT 3", "")), CATALOG) is None
    assert ties_test(_tree(sql + " OFFSET 2"), CATALOG) is None
    assert ties_test(_tree("SELECT 1 UNION SELECT 2"), CATALOG) is None


# --- rows -----------------------------------------------------------------------------


def test_an_empty_result_is_relaxed_one_condition_at_a_time() -> None:
    tree = _tree(
        "SELECT t0.document_name FROM public.documents AS t0 JOIN public.templates AS t1 "
        "ON t1.template_id = t0.template_id WHERE t1.template_type_code = 'CV' "
        "AND t0.page_count > 10 GROUP BY t0.document_name HAVING COUNT(*) > 1 "
        "ORDER BY t0.document_name LIMIT 5"
    )
    assert len(conditions(tree)) == 3
    relaxed = relaxations(tree)
    assert [r.condition for r in relaxed] == [
        "templates.template_type_code = 'CV'",
        "documents.page_count > 10",
        "COUNT(*) > 1",
    ]
    assert all(r.probe.startswith("EXISTS (") for r in relaxed)
    assert "LIMIT" not in relaxed[0].probe and "ORDER BY" not in relaxed[0].probe
    assert "'CV'" not in relaxed[0].probe and "page_count > 10" in relaxed[0].probe
    assert "rows meet all but 'documents.page_count > 10'" in refusal(relaxed, [False, True, False])
    assert "even with any one of them left out" in refusal(relaxed, [False, False, False])


# --- joins ----------------------------------------------------------------------------


def test_joins_are_held_to_keys_and_references() -> None:
    graph = JoinGraph(CATALOG)

    def why(sql: str) -> str:
        (pair,) = join_pairs(_read(sql))
        return join_refusal(pair, graph)

    assert (
        why("SELECT * FROM documents d JOIN templates t ON d.template_id = t.template_id") == ""
    )  # a declared reference
    assert "counts or sums something" in why(
        "SELECT * FROM documents d JOIN templates t ON d.page_count = t.template_id"
    )
    assert "neither of which is a key" in why(
        "SELECT * FROM documents d JOIN templates t ON d.document_name = t.template_type_code"
    )
    assert "counts or sums" in why("SELECT * FROM documents d, makers m WHERE m.id = d.page_count")
    assert why("SELECT * FROM documents d JOIN makers m ON m.id = d.template_id") == ""  # a key
    # unquoted names are folded as Postgres folds them: a model's camelCase is the same column
    assert why("SELECT * FROM Documents d JOIN Templates t ON d.Template_Id = t.TEMPLATE_ID") == ""
    assert "counts or sums" in why(
        'SELECT * FROM documents d, makers m WHERE m.id = d."page_count"'
    )


def test_an_alias_names_its_table_within_its_own_select() -> None:
    """A sub-query that gives ``t0`` to another table than the outer query (a follow-up
    nests the earlier statement) is read with its own aliases: one map for the whole
    statement read ``t0.template_id`` as the outer makers' column and refused the
    sub-query's declared reference as a join of no key."""
    graph = JoinGraph(CATALOG)
    sql = (
        "SELECT t1.document_name FROM documents t1 JOIN templates t0 "
        "ON t1.template_id = t0.template_id WHERE t1.page_count IN (SELECT t0.id FROM makers t0)"
    )
    (pair,) = join_pairs(_read(sql))
    assert (pair.left.name, pair.right.name) == ("documents", "templates")
    assert join_refusal(pair, graph) == ""
    # a correlated reference still reads the outer SELECT's alias
    outer = (
        "SELECT * FROM documents d WHERE EXISTS "
        "(SELECT 1 FROM templates t WHERE t.template_id = d.template_id)"
    )
    (pair,) = join_pairs(_read(outer))
    assert {pair.left.name, pair.right.name} == {"documents", "templates"}


def test_a_name_says_whether_its_column_counts() -> None:
    for name in ("num_semesters", "number_of_pets", "pet_count", "total_sales", "order_qty"):
        assert measure_name(name), name
    for name in ("account_number", "order_num", "semester_id", "count", "amount", "total_no"):
        assert not measure_name(name), name


# A school where a course's name is its column `course` (the table's own word).
LESSONS = Catalog(
    "lessons",
    (
        TableInfo(
            "public",
            "teacher",
            columns=(_col("teacher_id"), _col("name", "text"), _col("age")),
            primary_key=("teacher_id",),
        ),
        TableInfo(
            "public",
            "course",
            columns=(_col("course_id"), _col("course", "text", sample_values=("Math",))),
            primary_key=("course_id",),
        ),
        TableInfo(
            "public",
            "course_arrange",
            columns=(_col("course_id"), _col("teacher_id"), _col("grade")),
            foreign_keys=(
                ForeignKeyInfo(("course_id",), "public.course", ("course_id",)),
                ForeignKeyInfo(("teacher_id",), "public.teacher", ("teacher_id",)),
            ),
        ),
    ),
)


def test_a_second_question_left_out_of_the_answer_is_refused() -> None:
    vocabulary = Vocabulary(LESSONS, JoinGraph(LESSONS))
    question = "What is the name of each teacher and what course they teach?"
    ctx = read_question(question, vocabulary, date(2026, 11, 24))
    joined = (
        " FROM public.teacher AS t0 JOIN public.course_arrange AS t1 ON t1.teacher_id ="
        " t0.teacher_id JOIN public.course AS t2 ON t2.course_id = t1.course_id"
    )
    # read as a condition ("teachers who teach a course"), the second question is gone
    with pytest.raises(LinkError, match="also asks which course"):
        check_outputs(ctx, _tree("SELECT DISTINCT t0.name AS name" + joined))
    check_outputs(ctx, _tree("SELECT t0.name AS name, t2.course AS course" + joined))
    # a phrase that names nothing of the schema holds the statement to nothing
    ctx = read_question(
        "What is the name of each teacher and what they like?", vocabulary, date(2026, 11, 24)
    )
    check_outputs(ctx, _tree("SELECT t0.name AS name FROM public.teacher AS t0"))


FLIGHTS = Catalog(
    "flights",
    (
        TableInfo(
            "public",
            "flights",
            columns=(
                _col("flight_id"),
                _col("carrier", "text", sample_values=("UA", "MQ")),
                _col("flight"),
                _col("dep_delay"),
            ),
            primary_key=("flight_id",),
        ),
        TableInfo(
            "public",
            "stadium",
            columns=(_col("stadium_id"), _col("name", "text"), _col("average"), _col("capacity")),
            primary_key=("stadium_id",),
        ),
        TableInfo(
            "public",
            "concert",
            columns=(
                _col("concert_id"),
                _col("concert_name", "text"),
                _col("theme", "text"),
                _col("stadium_id"),
            ),
            primary_key=("concert_id",),
            foreign_keys=(ForeignKeyInfo(("stadium_id",), "public.stadium", ("stadium_id",)),),
        ),
        TableInfo(
            "public",
            "cars",
            columns=(_col("id"), _col("make", "text")),
            primary_key=("id",),
        ),
        TableInfo(
            "public",
            "sales",
            columns=(_col("sale_id"), _col("car_id")),
            primary_key=("sale_id",),
            foreign_keys=(ForeignKeyInfo(("car_id",), "public.cars", ("id",)),),
        ),
    ),
)


def test_a_column_the_question_lists_by_name_must_be_shown() -> None:
    vocabulary = Vocabulary(FLIGHTS, JoinGraph(FLIGHTS))
    question = (
        "Which flight had the largest departure delay? Give its carrier, flight number and delay."
    )
    ctx = read_question(question, vocabulary, date(2026, 11, 29))
    ranked = " FROM public.flights AS t0 ORDER BY t0.dep_delay DESC NULLS LAST LIMIT 1"
    # the carrier, listed by its column's whole name, left out of the answer
    with pytest.raises(LinkError, match="asks for the carrier; the statement shows no carrier"):
        check_outputs(ctx, _tree("SELECT t0.flight, t0.dep_delay" + ranked))
    check_outputs(ctx, _tree("SELECT t0.carrier, t0.flight, t0.dep_delay" + ranked))
    # a listed measure is no column, though a column is named after it
    ctx = read_question(
        "What are the average and the maximum capacity of all stadiums?",
        vocabulary,
        date(2026, 11, 29),
    )
    check_outputs(ctx, _tree("SELECT AVG(t0.capacity), MAX(t0.capacity) FROM public.stadium AS t0"))
    # an item that spells no whole column name holds the statement to nothing
    ctx = read_question("Give the flight number of every flight.", vocabulary, date(2026, 11, 29))
    check_outputs(ctx, _tree("SELECT t0.flight FROM public.flights AS t0"))
    # "the name" of a concert is shown as its concert_name, though stadium.name is read
    ctx = read_question(
        "Show the name and theme of the concerts in each stadium.", vocabulary, date(2026, 11, 29)
    )
    check_outputs(
        ctx,
        _tree(
            "SELECT t0.concert_name, t0.theme FROM public.concert AS t0 "
            "JOIN public.stadium AS t1 ON t1.stadium_id = t0.stadium_id"
        ),
    )
    # the column named is shown through one the statement equates with it
    ctx = read_question(
        "Return the car id and make for cars that have no sales.", vocabulary, date(2026, 11, 29)
    )
    unsold = (
        " FROM public.cars AS t0 WHERE NOT EXISTS "
        "(SELECT 1 FROM public.sales AS s WHERE s.car_id = t0.id)"
    )
    check_outputs(ctx, _tree("SELECT t0.id, t0.make" + unsold))
    with pytest.raises(LinkError, match="asks for the car id"):
        check_outputs(ctx, _tree("SELECT t0.make" + unsold))


def test_two_tables_listed_are_not_answered_by_joining_them() -> None:
    vocabulary = Vocabulary(FLIGHTS, JoinGraph(FLIGHTS))
    joined = (
        "SELECT t0.name, t1.concert_name FROM public.stadium AS t0 "
        "JOIN public.concert AS t1 ON t1.stadium_id = t0.stadium_id"
    )
    ctx = read_question("List the names of stadiums and concerts.", vocabulary, date(2026, 11, 29))
    with pytest.raises(LinkError, match="rows of two tables; the statement joins"):
        check_outputs(ctx, _tree(joined))
    # a pairing the question says ("and their"), or a column phrase of the second
    for question in (
        "List the names of stadiums and their concerts.",
        "List the names of stadiums and concert names.",
        "Show the name of the stadium and the concert name.",
    ):
        check_outputs(
            ctx=read_question(question, vocabulary, date(2026, 11, 29)), tree=_tree(joined)
        )


def test_which_rows_is_not_answered_with_the_measure_alone() -> None:
    vocabulary = Vocabulary(FLIGHTS, JoinGraph(FLIGHTS))
    ctx = read_question(
        "Which flight number had the largest departure delay?", vocabulary, date(2026, 11, 29)
    )
    # ranked by the delay, shown as the delay (twice) with a tie-breaker on it
    with pytest.raises(LinkError, match="shows only dep_delay, what it ranks by"):
        check_outputs(
            ctx,
            _tree(
                "SELECT t0.dep_delay AS dep_delay, t0.dep_delay AS d FROM public.flights AS t0 "
                "ORDER BY d DESC NULLS LAST, dep_delay LIMIT 1"
            ),
        )
    with pytest.raises(LinkError, match="only a minimum or maximum"):
        check_outputs(ctx, _tree("SELECT MAX(t0.dep_delay) FROM public.flights AS t0"))
    # the rows shown beside the measure; a later key only breaks ties
    check_outputs(
        ctx,
        _tree(
            "SELECT t0.flight, t0.dep_delay FROM public.flights AS t0 "
            "ORDER BY t0.dep_delay DESC NULLS LAST, t0.flight LIMIT 1"
        ),
    )
    # a question that asks for the value is answered by it
    ctx = read_question("What is the largest departure delay?", vocabulary, date(2026, 11, 29))
    check_outputs(ctx, _tree("SELECT MAX(t0.dep_delay) FROM public.flights AS t0"))


WALLETS = Catalog(
    "wallets",
    (
        TableInfo(
            "public",
            "coupons",
            columns=(_col("cid"), _col("merchant_id"), _col("code", "text")),
            primary_key=("cid",),
        ),
        TableInfo(
            "public",
            "transactions",
            columns=(
                _col("txid"),
                _col("receiver_id"),
                _col("coupon_id"),
                ColumnInfo("status", "text", False),
                ColumnInfo("merchant_ref", "integer", False),
            ),
            primary_key=("txid",),
            foreign_keys=(ForeignKeyInfo(("coupon_id",), "public.coupons", ("cid",)),),
        ),
    ),
)


def _rates(sql: str, catalog: Catalog = WALLETS) -> None:
    tree = _tree(sql)
    check_restricted(tree, read_statement(tree, catalog), JoinGraph(catalog))


def test_a_rate_whose_denominator_only_counts_rows_with_a_numerator_is_refused() -> None:
    rate = "SELECT COUNT(DISTINCT t0.cid) * 1.0 / NULLIF(COUNT(DISTINCT t1.txid), 0) AS r "
    with pytest.raises(LinkError, match=r"only where transactions\.coupon_id refers"):
        _rates(rate + "FROM public.coupons AS t0 JOIN public.transactions AS t1 "
               "ON t1.coupon_id = t0.cid")  # fmt: skip
    # a LEFT JOIN keeps the transactions without a coupon
    _rates(rate + "FROM public.transactions AS t1 LEFT JOIN public.coupons AS t0 "
           "ON t1.coupon_id = t0.cid")  # fmt: skip
    # a reference declared NOT NULL drops no row
    _rates(rate + "FROM public.coupons AS t0 JOIN public.transactions AS t1 "
           "ON t1.merchant_ref = t0.cid")  # fmt: skip
    # counted on one side of the division only: no rate
    _rates("SELECT COUNT(DISTINCT t1.txid) / 2 FROM public.coupons AS t0 "
           "JOIN public.transactions AS t1 ON t1.coupon_id = t0.cid")  # fmt: skip


def test_a_condition_said_of_values_and_applied_per_row_is_refused() -> None:
    unused = (
        " FROM public.templates AS t0 WHERE NOT EXISTS (SELECT 1 FROM public.documents AS x"
        " WHERE x.template_id = t0.template_id)"
    )
    with pytest.raises(LinkError, match="says it of each templates row"):
        _outputs(
            "Show all template type codes that are not used by any document.",
            "SELECT t0.template_type_code AS template_type_code" + unused,
        )
    # said of the templates ("codes of templates that …"), each template's code is right
    _outputs(
        "Show the type codes of templates that are not used by any document.",
        "SELECT t0.template_type_code AS template_type_code" + unused,
    )
    # a key names one row: the values are the rows
    _outputs(
        "Show all template ids that are not used by any document.",
        "SELECT t0.template_id AS template_id" + unused,
    )


def test_two_counts_one_of_rows_the_others_join_keeps_is_refused() -> None:
    joined = (
        " FROM public.makers AS m JOIN public.templates AS t0 ON t0.version_number = m.id"
        " JOIN public.documents AS t1 ON t1.template_id = t0.template_id GROUP BY m.id"
    )
    with pytest.raises(LinkError, match="counts templates only among the templates rows"):
        _rates("SELECT m.id" + joined + " HAVING COUNT(DISTINCT t0.template_id) >= 2 "
               "AND COUNT(DISTINCT t1.document_id) > 3", CATALOG)  # fmt: skip
    # one count: the join is the question's ("templates with documents")
    _rates("SELECT m.id" + joined + " HAVING COUNT(DISTINCT t0.template_id) >= 2", CATALOG)
    # a LEFT JOIN keeps the templates without documents
    _rates(
        "SELECT m.id FROM public.makers AS m JOIN public.templates AS t0 ON t0.version_number "
        "= m.id LEFT JOIN public.documents AS t1 ON t1.template_id = t0.template_id GROUP BY "
        "m.id HAVING COUNT(DISTINCT t0.template_id) >= 2 AND COUNT(DISTINCT t1.document_id) > 3",
        CATALOG,
    )


def test_which_rows_is_not_answered_with_what_it_filters_by_alone() -> None:
    vocabulary = Vocabulary(FLIGHTS, JoinGraph(FLIGHTS))
    today = date(2026, 11, 29)
    chosen = " FROM public.stadium AS t0 WHERE (t0.capacity > 5000)"
    ctx = read_question("Which stadiums have a capacity over 5000?", vocabulary, today)
    # the stadiums chosen by their capacity, shown as the capacity alone
    with pytest.raises(LinkError, match="shows only capacity, what it filters by"):
        check_outputs(ctx, _tree("SELECT t0.capacity" + chosen))
    check_outputs(ctx, _tree("SELECT t0.name" + chosen))  # the stadiums themselves
    # the noun after "which" names the column: the capacities are what is asked
    ctx = read_question("Which capacities of stadiums are over 5000?", vocabulary, today)
    check_outputs(ctx, _tree("SELECT t0.capacity" + chosen))


def test_a_number_in_thousands_must_be_in_the_statement() -> None:
    """Without the rule the statement that drops "over 30k" passed the verifier: the
    follow-up "only ones that went for over 30k" answered every sale per color."""
    question = "cars sold per color that went for over 30k?"
    ctx = read_question(question, DEALER_WORDS, date(2026, 11, 30))
    with pytest.raises(LinkError, match="does not use the number 30000"):
        verify_statement(
            ctx,
            "SELECT t1.color AS color, COUNT(*) AS count FROM public.sales AS t0 "
            "JOIN public.cars AS t1 ON t1.id = t0.car_id GROUP BY t1.color",
        )
