"""Follow-ups read for their structure on data nobody here wrote: another row count,
another grouping, a narrowing, another period, another value, a question about the rows;
whatever the politeness, case or punctuation. A follow-up to a SQL answer stays on SQL
and says which statement it builds on; one naming document content leaves."""

from __future__ import annotations

from dataclasses import replace

import pytest

from services.common.llm import FollowUpKind, FollowUpRewrite, PriorTurn
from services.router import RouterSettings
from services.router._convert import prior_turns
from services.router._followups import enforce
from services.router._types import Route
from services.router.offline import BuildsOn, Relation, resolve
from tandem.v1 import router_service_pb2 as pb
from tests.unit.router.fix_router import FakeSearch, FakeSql, ask, make_router

STATES = PriorTurn(
    "How many customers are there in each state?",
    "How many customers are there in each state?",
    row_count=12,
    sql="SELECT state, COUNT(*) FROM customers GROUP BY state",
)
TOP = PriorTurn(
    "Who are our top 5 customers by total transaction amount?",
    "Who are our top 5 customers by total transaction amount?",
    members=("Ann Lee", "Bo Chan"),
    row_count=5,
    sql="SELECT c.name, SUM(t.amount) AS total FROM customers AS c JOIN transactions AS t "
    "ON t.customer_id = c.id GROUP BY c.name ORDER BY total DESC LIMIT 5",
)
STATUS = PriorTurn(
    "How many successful transactions were there in June 2023?",
    "How many successful transactions were there in June 2023?",
    row_count=1,
    sql="SELECT COUNT(*) FROM transactions WHERE status = 'success' AND created_at >= "
    "'2023-06-01' AND created_at < '2023-07-01'",
)
CYLINDERS = PriorTurn(
    "How many cars with 6 cylinders were made in 1975?",
    "How many cars with 6 cylinders were made in 1975?",
    sql="SELECT COUNT(*) FROM cars WHERE cylinders = 6 AND year = 1975",
)


@pytest.mark.parametrize(
    ("question", "rows", "lowest"),
    [
        ("Only the top 2.", 2, False),
        ("just 3", 3, False),
        ("show me the first 10 instead", 10, False),
        ("TOP THREE ONLY!", 3, False),
        ("could you limit it to 4 please", 4, False),
        ("top 3 is enough", 3, False),
        ("and the bottom 5?", 5, True),
    ],
)
def test_a_row_count_change_builds_on_the_statement(question, rows, lowest):
    resolution = resolve(question, [TOP])
    assert resolution.kind is FollowUpKind.LIMIT
    assert resolution.builds_on == BuildsOn(
        TOP.sql, Relation.ROW_LIMIT, limit=rows, ascending=lowest
    )
    assert f" {rows} " in resolution.question


@pytest.mark.parametrize("question", ["just 2023", "and in 2024?", "only 2 of them are mine"])
def test_a_year_or_a_sentence_is_not_a_row_count(question):
    assert resolve(question, [TOP]).kind is not FollowUpKind.LIMIT


@pytest.mark.parametrize(
    ("question", "dimension", "resolved"),
    [
        ("Split that by region.", "region", "How many customers are there in each region?"),
        ("By category instead.", "category", "How many customers are there in each category?"),
        ("could you break it down by sales rep please?", "sales rep",
         "How many customers are there in each sales rep?"),
        ("now per month", "month", "How many customers are there in each month?"),
        ("BY GENDER?", "GENDER", "How many customers are there in each GENDER?"),
    ],
)  # fmt: skip
def test_a_regroup_builds_on_the_statement(question, dimension, resolved):
    resolution = resolve(question, [STATES])
    assert (resolution.kind, resolution.question) == (FollowUpKind.BREAKDOWN, resolved)
    assert resolution.builds_on == BuildsOn(STATES.sql, Relation.REGROUP, dimension=dimension)


@pytest.mark.parametrize(
    ("question", "resolved", "built"),
    [
        ("only the active ones", "How many customers that are active are there in each state?",
         BuildsOn(STATES.sql, Relation.FILTER, condition="active")),
        ("just the ones from 2023", "How many customers are there in each state in 2023?",
         BuildsOn(STATES.sql, Relation.TIME_SHIFT, period="in 2023")),
        ("only those in California", "How many customers in California are there in each state?",
         BuildsOn(STATES.sql, Relation.FILTER, condition="in California")),
        ("only count customers who joined before 2020",
         "How many customers who joined before 2020 are there in each state?",
         BuildsOn(STATES.sql, Relation.FILTER, condition="customers who joined before 2020")),
        ("Exclude inactive customers.",
         "How many customers are there in each state excluding inactive customers?",
         BuildsOn(STATES.sql, Relation.FILTER, condition="inactive customers", exclude=True)),
    ],
)  # fmt: skip
def test_a_narrowing_adds_a_condition_to_the_statement(question, resolved, built):
    resolution = resolve(question, [STATES])
    assert (resolution.kind, resolution.question) == (FollowUpKind.FILTER, resolved)
    assert resolution.builds_on == built


@pytest.mark.parametrize(
    ("question", "condition", "exclude"),
    [
        ("female only", "female", False),
        ("among them, the ones with private insurance", "with private insurance", False),
        ("of those, only the active ones", "active", False),
        ("where the price is under 100", "where the price is under 100", False),
        ("those that failed", "that failed", False),
        ("with more than 5 rooms", "with more than 5 rooms", False),
        ("exclude cancelled", "cancelled", True),
        ("leave out TX", "TX", True),
        ("just the ones older than 40", "older than 40", False),
    ],
)  # fmt: skip
def test_a_narrowing_is_read_from_its_form_whatever_its_words(question, condition, exclude):
    resolution = resolve(question, [STATES])
    assert resolution.kind is FollowUpKind.FILTER
    assert resolution.builds_on == BuildsOn(
        STATES.sql, Relation.FILTER, condition=condition, exclude=exclude
    )


@pytest.mark.parametrize("question", ["unread ones", "the inactive ones?", "and the 2023 ones"])
def test_a_qualifier_of_ones_narrows_a_statement_that_compares_nothing(question):
    """ "unread ones" after customers per state (issue 45 s64 ewallet-p1#2): "ones" is the
    earlier rows, the words before it what they are; the SQL service reads the words."""
    resolution = resolve(question, [STATES])
    assert resolution.kind is FollowUpKind.FILTER
    assert resolution.builds_on is not None
    assert resolution.builds_on.relation in (Relation.FILTER, Relation.TIME_SHIFT)


@pytest.mark.parametrize(
    "question", ["the other ones", "the same ones", "which ones", "list the europe ones"]
)
def test_a_word_that_only_points_is_no_qualifier_of_ones(question):
    assert resolve(question, [STATES]).kind is not FollowUpKind.FILTER


def test_a_qualifier_of_ones_after_a_compared_value_is_not_added_beside_it():
    """ "the unread ones" after a statement that compares a value may be another value of
    it (a swap, read with the stored values), never a second condition added blindly."""
    resolution = resolve("the unread ones", [STATUS])
    assert resolution.builds_on is None or resolution.builds_on.relation is not Relation.FILTER


@pytest.mark.parametrize(
    "question", ["where do they live?", "who makes them?", "where are they located?"]
)
def test_a_question_about_the_rows_is_no_narrowing(question):
    resolution = resolve(question, [TOP])
    assert resolution.kind is FollowUpKind.RESULT_REFERENCE
    assert resolution.builds_on is not None
    assert resolution.builds_on.relation is Relation.RESULT_SET


@pytest.mark.parametrize(
    "question", ["how many flights went to them?", "which carriers flew to them?"]
)
def test_an_object_pronoun_is_not_the_noun_of_its_own_clause(question):
    """ "flights" in "how many flights went to them?" is not what "them" means (that would
    be "themselves"): the question is about the earlier rows, not every flight."""
    resolution = resolve(question, [TOP])
    assert resolution.kind is FollowUpKind.RESULT_REFERENCE
    assert resolution.builds_on is not None
    assert resolution.builds_on.relation is Relation.RESULT_SET


@pytest.mark.parametrize(
    "question",
    ["list the products and the customers who bought them", "rank the regions and compare them"],
)
def test_an_object_pronoun_may_mean_a_noun_of_an_earlier_clause(question):
    assert resolve(question, [TOP]).kind is FollowUpKind.STANDALONE


@pytest.mark.parametrize(
    ("question", "period", "resolved"),
    [
        ("and the year after?", "the year after", "How many concerts were held in 2015?"),
        ("a year earlier?", "a year earlier", "How many concerts were held in 2013?"),
        ("and before 2009?", "before 2009", "How many concerts were held before 2009?"),
        ("same for 2015", "2015", "How many concerts were held in 2015?"),
        ("what about last year", "last year", "How many concerts were held last year?"),
        ("and the previous quarter", "the previous quarter",
         "How many concerts were held the previous quarter?"),
    ],
)  # fmt: skip
def test_a_period_moves_the_statements_window(question, period, resolved):
    concerts = PriorTurn(
        "How many concerts were held in 2014?",
        "How many concerts were held in 2014?",
        row_count=1,
        sql="SELECT COUNT(*) FROM concert WHERE year = 2014",
    )
    resolution = resolve(question, [concerts])
    assert (resolution.kind, resolution.question) == (FollowUpKind.TIME_SHIFT, resolved)
    assert resolution.builds_on == BuildsOn(concerts.sql, Relation.TIME_SHIFT, period=period)


def test_a_month_moved_relative_to_the_previous_one_is_spelled_out_with_its_year():
    april = PriorTurn(
        "What was the total amount of buy transactions in April 2023?",
        "What was the total amount of buy transactions in April 2023?",
        sql="SELECT SUM(amount) FROM t WHERE d >= '2023-04-01' AND d < '2023-05-01'",
    )
    resolution = resolve("and the month before?", [april])
    assert resolution.question == "What was the total amount of buy transactions in March 2023?"


@pytest.mark.parametrize(
    ("question", "rows"),
    [("just give me 3", 3), ("fewer - 2", 2), ("5 please", 5), ("only the first one", 1),
     ("top two only", 2), ("make it 5", 5)],
)  # fmt: skip
def test_a_row_count_said_in_other_words_is_a_limit(question, rows):
    resolution = resolve(question, [TOP])
    assert resolution.kind is FollowUpKind.LIMIT
    assert resolution.builds_on == BuildsOn(TOP.sql, Relation.ROW_LIMIT, limit=rows)


def test_a_bare_number_is_a_row_count_only_after_a_ranking():
    assert resolve("5", [TOP]).kind is FollowUpKind.LIMIT
    assert resolve("5", [STATES]).kind is not FollowUpKind.LIMIT


def test_another_comparison_replaces_the_previous_one():
    older = PriorTurn(
        "Which teachers are over 30?",
        "Which teachers are over 30?",
        sql="SELECT name FROM teacher WHERE age > 30",
    )
    resolution = resolve("what about older than 40?", [older])
    assert (resolution.kind, resolution.question) == (
        FollowUpKind.VALUE_SWAP, "Which teachers are older than 40?"
    )  # fmt: skip
    assert resolution.builds_on == BuildsOn(older.sql, Relation.VALUE_SWAP, value="older than 40")


def test_it_is_the_one_row_of_the_previous_answer():
    heaviest = replace(TOP, row_count=1, members=("Ann Lee",))
    resolution = resolve("what year is it from?", [heaviest])
    assert resolution.kind is FollowUpKind.RESULT_REFERENCE
    assert resolve("what year is it from?", [TOP]).kind is FollowUpKind.STANDALONE


def test_an_unowned_its_after_an_answer_that_showed_nothing_is_unresolved():
    """ "which destinations did its flights fly to?" after a refused "What is the carrier
    code of Hawaiian Airlines?" was answered as a question of its own, every flight's
    destination: nothing shown is there to own "its"."""
    refused = PriorTurn(
        "What is the carrier code of Hawaiian Airlines?",
        "What is the carrier code of Hawaiian Airlines?",
    )
    resolution = resolve("which destinations did its flights fly to?", [refused])
    assert resolution.kind is FollowUpKind.UNRESOLVED
    assert "'its'" in resolution.reason
    # an answer that cited documents may have named the owner in its text
    stored = pb.ConversationTurn(question=refused.question, cited_chunk_ids=["c1"])
    (cited,) = prior_turns([stored], RouterSettings())
    assert cited.cited and not cited.sql
    assert resolve("which destinations did its flights fly to?", [cited]).kind is not (
        FollowUpKind.UNRESOLVED
    )
    # an owner in the question itself: a question of its own
    for own in (
        "Which airline has the most flights, and what is its name?",
        "Which destinations did the airline with the most planes fly its flights to?",
    ):
        assert resolve(own, [refused]).kind is FollowUpKind.STANDALONE, own
    # after one row shown, "its" is that row, as before
    one = replace(TOP, row_count=1, members=("UA",))
    assert resolve("which destinations did its flights fly to?", [one]).kind is (
        FollowUpKind.RESULT_REFERENCE
    )


@pytest.mark.parametrize(
    ("question", "resolved"),
    [
        ("and february?", "How many successful transactions were there in february 2023?"),
        ("what about in July 2023 alone?",
         "How many successful transactions were there in July 2023?"),
        ("Same thing for March 2023", "How many successful transactions were there in March 2023?"),
    ],
)  # fmt: skip
def test_a_period_change_keeps_the_rest(question, resolved):
    resolution = resolve(question, [STATUS])
    assert (resolution.kind, resolution.question) == (FollowUpKind.TIME_SHIFT, resolved)


@pytest.mark.parametrize(
    ("prior", "question", "resolved", "value"),
    [
        (STATUS, "And failed ones", "How many failed transactions were there in June 2023?",
         "failed ones"),
        (CYLINDERS, "and 8?", "How many cars with 8 cylinders were made in 1975?", "8"),
    ],
)  # fmt: skip
def test_a_value_swap_replaces_the_value_the_statement_compared(prior, question, resolved, value):
    resolution = resolve(question, [prior])
    assert (resolution.kind, resolution.question) == (FollowUpKind.VALUE_SWAP, resolved)
    assert resolution.builds_on == BuildsOn(prior.sql, Relation.VALUE_SWAP, value=value)


@pytest.mark.parametrize(
    "question",
    ["What are their emails?", "list them", "how many of them are in Ohio?",
     "what categories are they in?", "How many orders do those customers have?"],
)  # fmt: skip
def test_a_result_reference_is_the_statements_rows_never_a_pasted_list(question):
    resolution = resolve(question, [TOP])
    assert resolution.kind is FollowUpKind.RESULT_REFERENCE
    assert resolution.builds_on == BuildsOn(TOP.sql, Relation.RESULT_SET, question=question)
    assert "Ann Lee" not in resolution.question and "previous answer" in resolution.question


def test_those_people_points_at_the_rows_with_its_noun():
    """ "those people": "people" is the plural of "person", the demonstrative's noun as
    "those customers" is one (issue 45, s58); it was left behind, "…rows people"."""
    asked = "how many purchases did those people make altogether?"
    resolution = resolve(asked, [TOP])
    assert resolution.kind is FollowUpKind.RESULT_REFERENCE
    assert "people people" not in resolution.question
    assert "rows people" not in resolution.question
    assert "the previous answer's people" in resolution.question


def test_that_group_points_at_the_rows_together():
    """ "how many transactions did that group make?": a collective noun after "that" is
    the earlier rows (issue 45, s58); it was read as a question of its own, about every
    customer. "that group of …" says what it names, and is no pointer."""
    asked = "how many transactions did that group make?"
    resolution = resolve(asked, [TOP])
    assert resolution.kind is FollowUpKind.RESULT_REFERENCE
    assert resolution.builds_on == BuildsOn(TOP.sql, Relation.RESULT_SET, question=asked)
    assert "that group" not in resolution.question and "previous answer" in resolution.question
    other = resolve("how many transactions did that group of stores make?", [TOP])
    assert other.kind is not FollowUpKind.RESULT_REFERENCE


def test_a_place_said_as_there_is_the_statements_rows():
    """ "How much did visitors spend there?" after "How many museums opened in 2011?": the
    counted museums, as a sub-query; read alone it was a question about every museum."""
    museums = PriorTurn(
        "How many museums opened in 2011?",
        "How many museums opened in 2011?",
        sql="SELECT COUNT(*) FROM museum WHERE open_year = 2011",
    )
    asked = "How much did visitors spend there in total?"
    resolution = resolve(asked, [museums])
    assert resolution.kind is FollowUpKind.RESULT_REFERENCE
    assert resolution.builds_on == BuildsOn(museums.sql, Relation.RESULT_SET, question=asked)
    assert (
        resolution.question == "How much did visitors spend at the previous answer's rows in total?"
    )
    # the "there" of "are there" is no place: a new question, read as one
    assert resolve("How many visitors are there?", [museums]).kind is FollowUpKind.STANDALONE


def test_a_follow_up_naming_document_content_leaves_the_sql_route():
    resolution = resolve("What do their call notes say about pricing?", [TOP])
    assert resolution.kind is FollowUpKind.RESULT_REFERENCE
    assert resolution.builds_on is None
    assert "Ann Lee and Bo Chan" in resolution.question  # documents are searched per member


def test_without_a_statement_nothing_builds_on_sql():
    text_only = PriorTurn(STATES.question, STATES.resolved_question)
    for question in ("only the top 2", "by region instead", "what are their emails?"):
        assert resolve(question, [text_only]).builds_on is None


def test_a_standalone_question_inside_a_sql_conversation_is_replanned():
    resolution = resolve("Why do customers churn?", [STATES])
    assert resolution.kind is FollowUpKind.STANDALONE and resolution.builds_on is None


def test_a_models_rewrite_keeps_the_statement_it_builds_on():
    rules = resolve("split that by region", [STATES])
    same = FollowUpRewrite("breakdown", "How many customers are there per region?")
    resolution, source = enforce(same, "split that by region", rules)
    assert source == "model" and resolution.builds_on == rules.builds_on
    other = FollowUpRewrite("filter", "How many customers are there in the region?")
    assert enforce(other, "split that by region", rules) == (rules, "rules")


async def test_a_follow_up_to_a_sql_answer_is_asked_of_sql_with_its_statement():
    sql, search = FakeSql(), FakeSearch()
    router = make_router(search=search, sql=sql)
    resolution = resolve("What are their emails?", [TOP])
    request = replace(ask(resolution.question), builds_on=resolution.builds_on)
    answer = await router.ask(request, request_id="r1")
    assert answer.route is Route.SQL and not search.calls
    # The SQL service reads the follow-up as asked, with the statement it builds on.
    assert [c[0] for c in sql.calls] == ["What are their emails?"]
    assert sql.priors == [resolution.builds_on]


async def test_a_follow_up_that_only_stays_on_sql_sends_no_statement():
    sql, search = FakeSql(), FakeSearch()
    router = make_router(search=search, sql=sql)
    resolution = resolve("how many of them are in Ohio?", [STATUS])
    assert resolution.builds_on == BuildsOn(STATUS.sql)
    request = replace(ask(resolution.question), builds_on=resolution.builds_on)
    answer = await router.ask(request, request_id="r2")
    assert answer.route is Route.SQL and not search.calls
    assert [c[0] for c in sql.calls] == [resolution.question] and sql.priors == [None]


async def test_a_narrowing_sends_the_statement_and_its_condition():
    sql = FakeSql()
    router = make_router(search=FakeSearch(), sql=sql)
    resolution = resolve("only those in Ohio", [STATES])
    request = replace(ask(resolution.question), builds_on=resolution.builds_on)
    await router.ask(request, request_id="r3")
    assert sql.priors == [BuildsOn(STATES.sql, Relation.FILTER, condition="in Ohio")]


def test_part_of_a_count_narrows_the_count_on_sql():
    resolution = resolve("how many of them are in Ohio?", [STATUS])
    assert resolution.kind is FollowUpKind.RESULT_REFERENCE
    assert resolution.question == (
        "How many successful transactions were there in June 2023 in Ohio?"
    )
    assert resolution.builds_on == BuildsOn(STATUS.sql)


def test_a_regroup_said_with_as_well_keeps_the_grouping():
    resolution = resolve("and by model year as well", [STATES])
    assert resolution.builds_on == BuildsOn(
        STATES.sql, Relation.REGROUP, dimension="model year", add=True
    )
    assert resolution.question == "How many customers are there in each state and by model year?"


GRADE = PriorTurn(
    "Which high schoolers are in grade 9?",
    "Which high schoolers are in grade 9?",
    sql="SELECT name FROM highschooler WHERE grade = 9",
)
DOGS = PriorTurn(
    "How many dogs are owned by students?",
    "How many dogs are owned by students?",
    sql="SELECT COUNT(*) FROM pets WHERE pettype = 'dog'",
)
MATH = PriorTurn(
    "Which teachers teach Math?",
    "Which teachers teach Math?",
    sql="SELECT name FROM teacher JOIN course ON course.id = teacher.course_id "
    "WHERE course.course = 'Math'",
)


@pytest.mark.parametrize(
    ("prior", "question", "resolved"),
    [
        # the new value said with its column again: only the value is swapped
        (GRADE, "And grade 12?", "Which high schoolers are in grade 12?"),
        # the compared value said in the plural
        (DOGS, "and cats?", "How many cats are owned by students?"),
    ],
)
def test_a_value_said_with_its_column_or_in_the_plural_is_still_swapped(prior, question, resolved):
    resolution = resolve(question, [prior])
    assert resolution.kind is FollowUpKind.VALUE_SWAP
    assert resolution.question == resolved


def test_a_narrowing_qualifies_the_rows_a_which_question_lists():
    """After the listed noun, not at the end, where it would read as part of "teach
    Math"."""
    resolution = resolve("only the ones older than 30", [MATH])
    assert resolution.kind is FollowUpKind.FILTER
    assert resolution.question == "Which teachers older than 30 teach Math?"


OLDEST = PriorTurn(
    "Who are the 3 oldest teachers?",
    "Who are the 3 oldest teachers?",
    sql="SELECT name, age FROM teacher ORDER BY age DESC LIMIT 3",
)
PER_AIRLINE = PriorTurn(
    "How many flights depart from APG by airline?",
    "How many flights depart from APG by airline?",
    sql="SELECT airline, COUNT(*) FROM flights WHERE sourceairport = 'APG' GROUP BY airline",
)


@pytest.mark.parametrize(
    ("prior", "question", "rows"),
    [(OLDEST, "only the oldest 2", 2), (OLDEST, "the oldest two", 2),
     (PER_AIRLINE, "just the top 3 airlines", 3)],
)  # fmt: skip
def test_a_row_count_said_with_the_rankings_own_words_is_a_limit(prior, question, rows):
    """ "only the oldest 2" was pasted into the question as a filter ("… that are oldest
    2"); the rows named by a word the previous question used ("airlines") likewise."""
    resolution = resolve(question, [prior])
    assert resolution.kind is FollowUpKind.LIMIT
    assert resolution.builds_on == BuildsOn(prior.sql, Relation.ROW_LIMIT, limit=rows)


def test_another_superlative_is_another_ranking_not_a_row_count():
    assert resolve("just the youngest 2", [OLDEST]).kind is not FollowUpKind.LIMIT


def test_a_value_said_with_its_preposition_is_swapped_on_the_same_side():
    """ "and from ANC?" after "from APG" swaps the airport; read as a narrowing it became
    "… from APG in from ANC" (the previous turn refused, so no statement had slots)."""
    # the previous turn was refused: no statement says which words were values
    from_apg = PriorTurn("How many flights depart from APG?", "How many flights depart from APG?")
    resolution = resolve("and from ANC?", [from_apg])
    assert resolution.kind is FollowUpKind.VALUE_SWAP
    assert resolution.question == "How many flights depart from ANC?"
    # the other side of the trip is no value of the previous question
    assert "depart from ANC" not in resolve("and to ANC?", [PER_AIRLINE]).question


@pytest.mark.parametrize(
    ("question", "rows", "lowest"),
    [("and the 5 lowest?", 5, True), ("bottom 3 instead", 3, True), ("the 2 highest", 2, False),
     ("can I see just 2 of them", 2, False)],
)  # fmt: skip
def test_a_row_count_says_which_end_of_the_ranking_it_keeps(question, rows, lowest):
    resolution = resolve(question, [TOP])
    assert resolution.builds_on == BuildsOn(
        TOP.sql, Relation.ROW_LIMIT, limit=rows, ascending=lowest
    )


@pytest.mark.parametrize(
    ("question", "condition"),
    [("keep only the stocks", "stocks"), ("show only the ETFs", "ETFs"),
     ("restrict it to CA", "CA"), ("only if they are active", "active")],
)  # fmt: skip
def test_a_narrowing_said_with_a_verb_is_a_filter(question, condition):
    resolution = resolve(question, [STATES])
    assert resolution.builds_on == BuildsOn(STATES.sql, Relation.FILTER, condition=condition)


def test_part_of_those_with_a_noun_says_the_noun_once():
    """ "which of those drugs": the earlier rows named by the demonstrative's noun, once
    (issue 45, s63 women); it was "the previous answer's drugs drugs", which the linker
    read with the drugs' key shown beside their names, unlike the question spelled out."""
    resolution = resolve("which of those drugs are biologics", [TOP])
    assert resolution.kind is FollowUpKind.RESULT_REFERENCE
    assert resolution.question == "Which of the previous answer's drugs are biologics?"
