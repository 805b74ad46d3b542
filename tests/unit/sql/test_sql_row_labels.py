"""Issue 45: a result reference and its spelled-out question show the same columns. A
listing of something asked about rows the question does not name one by one ("the dates
of birth of the patients on medicaid") shows whose each value is: the listed table's
name columns first, as a follow-up about earlier rows ("when were those patients
born?") shows the names the earlier answer said them by. Never where another column
could change the rows (groups, aggregates, DISTINCT), nor where the question said whose
(rows picked by name or key). The real linker and verifier read each question."""

from __future__ import annotations

from datetime import date

import sqlglot
from sqlglot import exp

from services.sql.catalog import Catalog, ForeignKeyInfo, TableInfo
from services.sql.conversation import deciding, labels, restrict, subject
from services.sql.results import name_columns, with_labels
from tests.unit.sql.flights import FLIGHTS
from tests.unit.sql.schemas import col, linked_statement

TODAY = date(2026, 11, 30)

PATIENTS = Catalog(
    "derm",
    (
        TableInfo(
            "public",
            "patients",
            columns=(
                col("patient_id"),
                col("first_name", "text", ("Alice", "Bob")),
                col("last_name", "text", ("Smith", "Jones")),
                col("date_of_birth", "date"),
                col("email", "text"),
                col("ins_type", "text", ("medicaid", "private")),
            ),
            primary_key=("patient_id",),
        ),
    ),
)
SINGERS = Catalog(
    "concerts",
    (
        TableInfo(
            "public",
            "singer",
            columns=(
                col("singer_id"),
                col("name", "text", ("Joe Sharp", "Rose White")),
                col("country", "text", ("France", "Netherlands")),
                col("song_name", "text", ("You", "Sun")),
                col("age"),
            ),
            primary_key=("singer_id",),
        ),
    ),
)


def _shown(tree: exp.Expr) -> list[str]:
    return [e.unalias().name for e in tree.expressions if isinstance(e.unalias(), exp.Column)]


def _sql(question: str, catalog: Catalog) -> str:
    return linked_statement(question, catalog, TODAY).sql(dialect="postgres")


def test_a_result_reference_and_its_question_spelled_out_show_whose_values_alike():
    """ "when were those patients born?" after "Which patients are on medicaid?" shows
    their names and dates of birth; so does "What are the dates of birth of the patients
    on medicaid?" asked alone: the same columns, the same rows."""
    alone = linked_statement(
        "What are the dates of birth of the patients on medicaid?", PATIENTS, TODAY
    )
    earlier = _sql("Which patients are on medicaid?", PATIENTS)
    about = subject(earlier, PATIENTS)
    asked = _sql("When were the patients born?", PATIENTS)
    sql = restrict(
        asked, earlier, about, labels(earlier, about, PATIENTS), deciding(earlier, about, PATIENTS)
    )
    follow_up = sqlglot.parse_one(sql, dialect="postgres")
    assert _shown(follow_up) == _shown(alone)
    assert _shown(alone) == ["patient_id", "first_name", "last_name", "date_of_birth"]
    # the rows are the same rows: only a column was added, the conditions are unchanged
    assert alone.args["where"] is not None
    assert "DISTINCT" not in alone.sql(dialect="postgres")


def test_a_listing_of_values_names_its_rows_first():
    """The singers' key and name, not their song's name (a name of another thing), before
    their ages; a key or name shown already is not shown twice."""
    ages = linked_statement("What are the ages of the singers from France?", SINGERS, TODAY)
    assert _shown(ages) == ["singer_id", "name", "age"]
    assert name_columns(SINGERS.tables[0]) == ["name"]
    named = (
        "SELECT t0.singer_id AS singer_id, t0.name AS name, t0.age AS age FROM public.singer AS t0"
    )
    assert with_labels(named, SINGERS) == named


def test_where_another_column_could_change_the_rows_or_the_question_said_whose():
    """Groups, aggregates and DISTINCT values would be split by another column; rows
    picked by name or key were named by the question; a table without a name column has
    none to show."""
    for sql in (
        "SELECT DISTINCT t0.country AS country FROM public.singer AS t0",
        "SELECT t0.country AS country, COUNT(*) AS count FROM public.singer AS t0 "
        "GROUP BY t0.country",
        "SELECT AVG(t0.age) AS avg_age FROM public.singer AS t0 WHERE t0.country = 'France'",
        "SELECT t0.age AS age FROM public.singer AS t0 WHERE t0.name = 'Joe Sharp'",
        "SELECT t0.age AS age FROM public.singer AS t0 WHERE t0.singer_id IN (1, 2)",
        "SELECT t0.name AS name FROM public.singer AS t0 WHERE t0.age > 30",
    ):
        assert with_labels(sql, SINGERS) == sql
    cars = Catalog(
        "cars",
        (TableInfo("public", "cars_data", columns=(col("id"), col("mpg")), primary_key=("id",)),),
    )
    plain = "SELECT t0.mpg AS mpg FROM public.cars_data AS t0"
    assert with_labels(plain, cars) == plain
    # a sub-query's value is no name the question said: the rows are still named
    picked = (
        "SELECT t0.age AS age FROM public.singer AS t0 "
        "WHERE t0.singer_id IN (SELECT t1.singer_id FROM public.singer AS t1)"
    )
    assert _shown(sqlglot.parse_one(with_labels(picked, SINGERS))) == ["singer_id", "name", "age"]


def test_a_listing_shows_its_rows_key_before_their_names_as_a_grouped_answer_does():
    """ "Which 3 patients are the tallest?" shows each patient as "Which 3 customers made
    the most transactions?" shows a customer: key, then name. Two patients of one name are
    told apart, and the rows are the same rows (a column added to a listing without
    DISTINCT splits nothing); the key goes just before the names wherever they stand."""
    listed = (
        "SELECT t0.first_name AS first_name, t0.last_name AS last_name, t0.email AS email "
        "FROM public.patients AS t0 ORDER BY t0.email LIMIT 3"
    )
    shown = sqlglot.parse_one(with_labels(listed, PATIENTS), dialect="postgres")
    assert _shown(shown) == ["patient_id", "first_name", "last_name", "email"]
    assert shown.args["limit"] is not None and shown.args["order"] is not None
    after = "SELECT t0.email AS email, t0.first_name AS first_name FROM public.patients AS t0"
    assert _shown(sqlglot.parse_one(with_labels(after, PATIENTS))) == [
        "email",
        "patient_id",
        "first_name",
    ]
    # the linked question itself, through the real linker
    emails = linked_statement("What are the emails of the patients on medicaid?", PATIENTS, TODAY)
    assert _shown(emails) == ["patient_id", "first_name", "last_name", "email"]


def test_no_key_where_it_could_change_the_rows_or_none_is_one_column():
    """DISTINCT names stay distinct names; rows picked by key said whose already; a table
    keyed by two columns (or by none, as a warehouse without declared keys) has no one
    value to show."""
    for sql in (
        "SELECT DISTINCT t0.first_name AS first_name, t0.email AS email FROM public.patients AS t0",
        "SELECT t0.first_name AS first_name, t0.email AS email FROM public.patients AS t0 "
        "WHERE t0.patient_id = 3",
    ):
        assert with_labels(sql, PATIENTS) == sql
    columns = PATIENTS.tables[0].columns
    for key in ((), ("patient_id", "email")):
        catalog = Catalog(
            "derm", (TableInfo("public", "patients", columns=columns, primary_key=key),)
        )
        sql = "SELECT t0.first_name AS first_name, t0.email AS email FROM public.patients AS t0"
        assert with_labels(sql, catalog) == sql


def test_a_listing_of_the_names_alone_answers_with_the_names():
    """ "What are the names of the documents that use them?" asks for names: they are the
    answer, not labels beside one, and the question spelled out shows them alone; so does
    a follow-up "what are their names?" picking the earlier rows by a sub-query."""
    for sql in (
        "SELECT t0.first_name AS first_name, t0.last_name AS last_name "
        "FROM public.patients AS t0 WHERE t0.ins_type = 'medicaid'",
        "SELECT t0.first_name AS first_name FROM public.patients AS t0 "
        "WHERE t0.patient_id IN (SELECT t1.patient_id FROM public.patients AS t1)",
    ):
        assert with_labels(sql, PATIENTS) == sql


TEACHING = Catalog(
    "school",
    (
        TableInfo(
            "public",
            "teacher",
            columns=(
                col("teacher_id"),
                col("name", "text", ("Joseph Huts", "Gustaaf Deloor")),
                col("age"),
                col("hometown", "text", ("Blackrod Urban District", "Bolton County Borough")),
            ),
            primary_key=("teacher_id",),
        ),
        TableInfo(
            "public",
            "course",
            columns=(col("course_id"), col("course", "text", ("Music", "Math", "Science"))),
            primary_key=("course_id",),
        ),
        TableInfo(
            "public",
            "course_arrange",
            columns=(col("course_id"), col("teacher_id"), col("grade")),
            primary_key=("course_id", "teacher_id", "grade"),
            foreign_keys=(
                ForeignKeyInfo(("course_id",), "public.course", ("course_id",)),
                ForeignKeyInfo(("teacher_id",), "public.teacher", ("teacher_id",)),
            ),
        ),
    ),
)
VISITS = Catalog(
    "museums",
    (
        TableInfo(
            "public",
            "visitor",
            columns=(
                col("id"),
                col("name", "text", ("Gonzalo Higuaín", "Fernando Gago")),
                col("age"),
            ),
            primary_key=("id",),
        ),
        TableInfo(
            "public",
            "visit",
            columns=(col("museum_id"), col("visitor_id"), col("num_of_ticket")),
            primary_key=("museum_id", "visitor_id"),
            foreign_keys=(ForeignKeyInfo(("visitor_id",), "public.visitor", ("id",)),),
        ),
    ),
)
_THROUGH = (
    "FROM public.teacher AS t0 JOIN public.course_arrange AS t1 ON t1.teacher_id = t0.teacher_id "
    "JOIN public.course AS t2 ON t2.course_id = t1.course_id WHERE (t2.course = 'Music')"
)


def test_distinct_rows_read_through_joins_are_one_row_per_listed_row():
    """ "How old are the teachers who teach Music?" reads teachers through their
    arrangements: a DISTINCT that drops the arrangements' repeats would make two teachers
    of one age one row without the key. The linker writes it as the teachers having such
    an arrangement (an EXISTS, ``results.with_semijoins``), one row per teacher, shown as
    a follow-up about the earlier teachers shows them ("how old is that teacher?": key
    and name, then the age). A DISTINCT read so still shows names with the key, so two
    museums of one name stay two."""
    ages = linked_statement("How old are the teachers who teach Music?", TEACHING, TODAY)
    assert ages.find(exp.Exists) is not None and not ages.args.get("distinct")
    assert _shown(ages) == ["teacher_id", "name", "age"]
    named = f"SELECT DISTINCT t0.name AS name {_THROUGH}"
    assert _shown(sqlglot.parse_one(with_labels(named, TEACHING))) == ["teacher_id", "name"]
    # a key shown first gets its names after it: key, then names, as everywhere
    keyed = f"SELECT DISTINCT t0.teacher_id AS teacher_id {_THROUGH}"
    assert _shown(sqlglot.parse_one(with_labels(keyed, TEACHING))) == ["teacher_id", "name"]


def test_distinct_values_asked_for_stay_distinct_values():
    """A text kind the rows fall in ("which hometowns do the teachers of Music come
    from") asks for the kinds; joins to what each row references (a document's one
    template) repeat no row, so their DISTINCT was asked; a DISTINCT of several tables'
    columns is no listing of one table's rows."""
    for sql in (
        f"SELECT DISTINCT t0.hometown AS hometown {_THROUGH}",
        "SELECT DISTINCT t1.age AS age FROM public.course_arrange AS t0 "
        "JOIN public.teacher AS t1 ON t1.teacher_id = t0.teacher_id",
        f"SELECT DISTINCT t0.age AS age, t2.course AS course {_THROUGH}",
    ):
        assert with_labels(sql, TEACHING) == sql
    documents = Catalog(
        "templates",
        (
            TableInfo(
                "public",
                "documents",
                columns=(col("document_id"), col("document_name", "text"), col("template_id")),
                primary_key=("document_id",),
                foreign_keys=(
                    ForeignKeyInfo(("template_id",), "public.templates", ("template_id",)),
                ),
            ),
            TableInfo(
                "public",
                "templates",
                columns=(col("template_id"), col("version_number")),
                primary_key=("template_id",),
            ),
        ),
    )
    asked = (
        "SELECT DISTINCT t0.document_name AS document_name FROM public.documents AS t0 "
        "JOIN public.templates AS t1 ON t1.template_id = t0.template_id "
        "WHERE (t1.version_number = 1)"
    )
    assert with_labels(asked, documents) == asked


def test_a_grouped_answer_shows_the_entity_it_groups_by_beside_its_value():
    """ "How old is the visitor who bought the most tickets in total?" groups by the
    visitor (key and name) but asked for the age: it shows the visitor's key and name
    before the age, as "how old is this person?" after "only the biggest buyer" does.
    Columns it groups by split no group: the rows are the same rows."""
    ranked = linked_statement(
        "How old is the visitor who bought the most tickets in total?", VISITS, TODAY
    )
    assert _shown(ranked) == ["id", "name", "age"]
    assert ranked.args["group"] is not None and ranked.args["limit"] is not None
    earlier = _sql("Which visitor bought the most tickets in total?", VISITS)
    about = subject(earlier, VISITS)
    asked = _sql("How old is the visitor?", VISITS)
    follow_up = restrict(
        asked, earlier, about, labels(earlier, about, VISITS), deciding(earlier, about, VISITS)
    )
    assert _shown(sqlglot.parse_one(follow_up, dialect="postgres"))[:3] == _shown(ranked)


def test_a_grouped_answer_not_grouped_by_an_entity_is_left_alone():
    """Grouped by a value alone (no key), or showing only the entity's key and names, or
    of a table without a name, nothing is added."""
    for sql in (
        "SELECT t1.age AS age, SUM(t0.num_of_ticket) AS total FROM public.visit AS t0 "
        "JOIN public.visitor AS t1 ON t1.id = t0.visitor_id GROUP BY t1.age",
        "SELECT t1.name AS name, SUM(t0.num_of_ticket) AS total FROM public.visit AS t0 "
        "JOIN public.visitor AS t1 ON t1.id = t0.visitor_id GROUP BY t1.id, t1.name",
        "SELECT t0.museum_id AS museum_id, COUNT(*) AS count FROM public.visit AS t0 "
        "GROUP BY t0.museum_id, t0.visitor_id",
    ):
        assert with_labels(sql, VISITS) == sql
    unnamed = Catalog(
        "museums",
        (
            VISITS.tables[1],
            TableInfo("public", "visitor", columns=(col("id"), col("age")), primary_key=("id",)),
        ),
    )
    ages = (
        "SELECT t1.age AS age, SUM(t0.num_of_ticket) AS total FROM public.visit AS t0 "
        "JOIN public.visitor AS t1 ON t1.id = t0.visitor_id GROUP BY t1.age, t1.id"
    )
    assert with_labels(ages, unnamed) == ages


CAR_MAKERS = Catalog(
    "cars",
    (
        TableInfo(
            "public",
            "car_makers",
            columns=(
                col("id"),
                col("maker", "text", ("amc", "volkswagen")),
                col("fullname", "text", ("American Motor Company", "Volkswagen")),
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


def test_a_ranking_shows_its_entity_by_every_name_as_the_grouped_answer_does():
    """ "Which 2 car makers have the most models?" is "How many models does each car maker
    have?" cut to two ("keep the leading two"): one group per maker either way, so both
    show the maker by every column that names it (``maker`` beside ``fullname``), not by
    whichever the question's noun was read as before the ranking grouped the answer.
    Columns the key decides split no group: the rows are the same rows."""
    each = linked_statement("How many models does each car maker have?", CAR_MAKERS, TODAY)
    ranked = linked_statement("Which 2 car makers have the most models?", CAR_MAKERS, TODAY)
    assert _shown(ranked) == _shown(each) == ["id", "fullname", "maker"]
    assert ranked.args["limit"] is not None
    group = {e.name for e in ranked.args["group"].expressions}
    assert {"id", "fullname", "maker"} <= group
    # groups kept by a condition on them, not cut by a ranking, keep the names as read
    kept = linked_statement("Which car makers have more than 3 models?", CAR_MAKERS, TODAY)
    assert kept.args["having"] is not None
    assert _shown(kept) == ["id", "fullname"]


_PER_CARRIER = (
    "SELECT t0.carrier AS carrier, COUNT(*) AS count FROM public.flights AS t0 "
    "WHERE (t0.dest = 'DEN') GROUP BY t0.carrier"
)


def test_groups_of_a_reference_show_the_referenced_rows_names():
    """ "How many flights to DEN did each carrier have?" groups flights by the carrier
    they reference: each group is an airline, shown by its code and name, as "how many
    flights did each of them have there?" after the carriers shows the airlines. A LEFT
    JOIN on the airline's whole key repeats no flight and drops none: the same groups
    and counts, one column more."""
    shown = sqlglot.parse_one(with_labels(_PER_CARRIER, FLIGHTS), dialect="postgres")
    assert [e.alias_or_name for e in shown.expressions] == ["carrier", "name", "count"]
    (join,) = shown.args["joins"]
    assert join.side == "LEFT" and join.this.name == "airlines"
    assert {e.name for e in shown.args["group"].expressions} == {"carrier", "name"}
    assert shown.args["where"] is not None
    linked = linked_statement("How many flights to DEN did each carrier have?", FLIGHTS, TODAY)
    assert [e.alias_or_name for e in linked.expressions] == ["carrier", "name", "count"]


def test_groups_of_a_reference_joined_by_their_word_show_the_same_names():
    """ "number of flights per origin airport" reads "airport" as the table too: an
    inner join to airports by the key the grouped ``origin`` holds, reading nothing of
    it. The same grouping read without that join ("per destination airport", or with
    other words beside it) shows each airport's name; one rule decides, not the other
    words: the names come from the join the statement has (the rows stay its rows)."""
    joined = (
        "SELECT t0.origin AS origin, COUNT(*) AS count FROM public.flights AS t0 "
        "JOIN public.airports AS t1 ON t1.faa = t0.origin GROUP BY t0.origin"
    )
    shown = sqlglot.parse_one(with_labels(joined, FLIGHTS), dialect="postgres")
    assert [e.alias_or_name for e in shown.expressions] == ["origin", "name", "count"]
    (join,) = shown.args["joins"]
    assert join.side != "LEFT" and join.this.name == "airports"
    assert {e.sql() for e in shown.args["group"].expressions} == {"t0.origin", "t1.name"}
    for question in (
        "number of flights per origin airport",
        "Number of Delta Air Lines flights per origin airport",
        "Number of United Air Lines flights per origin airport",
        "number of flights per destination airport",
    ):
        linked = linked_statement(question, FLIGHTS, TODAY)
        assert [e.alias_or_name for e in linked.expressions][1:] == ["name", "count"]


def test_groups_of_a_reference_read_otherwise_are_left_alone():
    """Not where the statement reads the referenced table already (it chose what to
    show or compare of it, or joins it by another column), groups by more than the
    reference, or the reference is not declared."""
    undeclared = Catalog(
        "flights",
        (
            FLIGHTS.tables[0],
            TableInfo("public", "flights", columns=FLIGHTS.tables[1].columns, primary_key=("id",)),
        ),
    )
    assert with_labels(_PER_CARRIER, undeclared) == _PER_CARRIER
    for sql in (
        "SELECT t0.carrier AS carrier, t0.dest AS dest, COUNT(*) AS count "
        "FROM public.flights AS t0 GROUP BY t0.carrier, t0.dest",
        "SELECT t0.carrier AS carrier, COUNT(*) AS count FROM public.flights AS t0 "
        "JOIN public.airlines AS t1 ON t1.carrier = t0.carrier "
        "WHERE (t1.name LIKE 'U%') GROUP BY t0.carrier",
        "SELECT t0.carrier AS carrier, COUNT(*) AS count FROM public.flights AS t0 "
        "JOIN public.airlines AS t1 ON t1.carrier = t0.carrier GROUP BY t0.carrier "
        "ORDER BY MAX(t1.name)",
        "SELECT t0.origin AS origin, COUNT(*) AS count FROM public.flights AS t0 "
        "JOIN public.airports AS t1 ON t1.faa = t0.dest GROUP BY t0.origin",
    ):
        assert with_labels(sql, FLIGHTS) == sql


def test_each_of_these_rows_is_named_as_each_row_is():
    """ "how many concerts did each of these singers sing in?" (a follow-up's question,
    pointed at the earlier singers) and "How many concerts did each singer sing in?" read
    through different readers; both show a singer by key and ``name``, never the name of
    the singer's song (issue 45, s62: ``song_name`` was shown by one of them only)."""
    singer = SINGERS.tables[0]
    concert = TableInfo(
        "public", "concert",
        columns=(col("concert_id"), col("concert_name", "text", ("Auditions", "Bootcamp")),
                 col("year")),
        primary_key=("concert_id",),
    )  # fmt: skip
    sang = TableInfo(
        "public", "singer_in_concert",
        columns=(col("concert_id"), col("singer_id")),
        primary_key=("concert_id", "singer_id"),
        foreign_keys=(
            ForeignKeyInfo(("concert_id",), "public.concert", ("concert_id",)),
            ForeignKeyInfo(("singer_id",), "public.singer", ("singer_id",)),
        ),
    )  # fmt: skip
    catalog = Catalog("concerts", (singer, concert, sang))
    pointed = linked_statement(
        "How many concerts did each of these singers sing in?", catalog, TODAY
    )
    alone = linked_statement("How many concerts did each singer sing in?", catalog, TODAY)
    assert _shown(pointed) == _shown(alone) == ["singer_id", "name"], pointed.sql()
