"""Right or refused: a statement that leaves out a phrase of the question which changes
the answer is refused naming the phrase; one that accounts for it passes. Each check is
shown failing on the statement it guards against and passing on the right one."""

from __future__ import annotations

from datetime import date

import pytest

from services.sql.catalog._catalog import Catalog, ColumnInfo, ForeignKeyInfo, TableInfo
from services.sql.catalog._joins import JoinGraph
from services.sql.definitions import GlossaryEntry
from services.sql.linker import LinkError, Vocabulary, read_question
from services.sql.verify._facts import statement_facts
from services.sql.verify._phrases import verify_statement


def _col(name: str, data_type: str = "integer") -> ColumnInfo:
    return ColumnInfo(name, data_type, True)


SINGERS = Catalog(
    "music",
    (
        TableInfo(
            "public",
            "singer",
            columns=(
                _col("singer_id"),
                _col("name", "text"),
                _col("country", "text"),
                _col("age"),
                _col("net_worth"),
                _col("debut_year"),
            ),
            primary_key=("singer_id",),
        ),
        TableInfo(
            "public",
            "song",
            columns=(
                _col("song_id"),
                _col("singer_id"),
                _col("title", "text"),
                _col("sales"),
                _col("total_streams"),
            ),
            primary_key=("song_id",),
        ),
    ),
)
VOCABULARY = Vocabulary(SINGERS, JoinGraph(SINGERS))


def _verify(question: str, sql: str) -> None:
    verify_statement(read_question(question, VOCABULARY, date(2026, 11, 24)), sql)


SELECT_NAMES = "SELECT t0.name AS name FROM public.singer AS t0"


@pytest.mark.parametrize(
    ("question", "wrong", "right", "phrase"),
    [
        (
            "What are the names of singers below age 30?",
            SELECT_NAMES,
            SELECT_NAMES + " WHERE t0.age < 30",
            "the number 30",
        ),
        (
            "What is the name of the singer with the largest net worth?",
            SELECT_NAMES,
            SELECT_NAMES + " ORDER BY t0.net_worth DESC LIMIT 1",
            "'largest'",
        ),
        (
            "What are the names of singers who have no songs?",
            SELECT_NAMES + " JOIN public.song AS t1 ON t1.singer_id = t0.singer_id",
            SELECT_NAMES
            + " WHERE NOT EXISTS (SELECT 1 FROM public.song AS x WHERE x.singer_id = t0.singer_id)",
            "'no'",
        ),
        (
            "What is the average age of singers?",
            "SELECT t0.age AS age FROM public.singer AS t0",
            "SELECT AVG(t0.age) AS avg_age FROM public.singer AS t0",
            "'average'",
        ),
        (
            "How many singers are there?",
            SELECT_NAMES,
            "SELECT COUNT(*) AS count FROM public.singer AS t0",
            "'how many'",
        ),
        (
            "What is the average age of singers from each country?",
            "SELECT AVG(t0.age) AS avg_age FROM public.singer AS t0",
            "SELECT t0.country, AVG(t0.age) AS avg_age FROM public.singer AS t0 GROUP BY 1",
            "'each'",
        ),
        (
            "What are the distinct countries of singers?",
            "SELECT t0.country AS country FROM public.singer AS t0",
            "SELECT DISTINCT t0.country AS country FROM public.singer AS t0",
            "'distinct'",
        ),
        (
            "List the names of singers in descending order of age.",
            SELECT_NAMES,
            SELECT_NAMES + " ORDER BY t0.age DESC",
            "'in descending order' asks",
        ),
        (
            "What are the names of singers older than the average age?",
            SELECT_NAMES + " WHERE t0.age > 30",
            SELECT_NAMES + " WHERE t0.age > (SELECT AVG(s.age) FROM public.singer AS s)",
            "subquery",
        ),
        (
            "Which singers have songs titled 'Hey' and 'Jude'?",
            SELECT_NAMES + " JOIN public.song AS t1 ON t1.singer_id = t0.singer_id "
            "WHERE t1.title = 'Hey' AND t1.title = 'Jude'",
            SELECT_NAMES + " JOIN public.song AS t1 ON t1.singer_id = t0.singer_id "
            "WHERE t1.title = 'Hey' OR t1.title = 'Jude'",
            "two values of title",
        ),
        (
            # "total" spells the column, but "in total" still asks for the sum of it
            "What were the total streams of songs in total?",
            "SELECT DISTINCT t1.total_streams AS total_streams FROM public.song AS t1",
            "SELECT SUM(t1.total_streams) AS sum_total_streams FROM public.song AS t1",
            "'in total'",
        ),
        (
            # a number that ends the sentence is still a number of the question
            "Give the names of singers below age 30.",
            SELECT_NAMES,
            SELECT_NAMES + " WHERE t0.age < 30",
            "the number 30",
        ),
        (
            "What is the average age of singers?",
            "SELECT t0.country, AVG(t0.age) AS avg_age FROM public.singer AS t0 GROUP BY 1",
            "SELECT AVG(t0.age) AS avg_age FROM public.singer AS t0",
            "one value, the statement computes one per group",
        ),
        (
            "Which singer has the most songs?",
            "SELECT t0.song_id, COUNT(*) AS count FROM public.song AS t0 JOIN public.singer AS "
            "t1 ON t1.singer_id = t0.singer_id GROUP BY t0.song_id ORDER BY count DESC LIMIT 1",
            "SELECT t1.name, COUNT(*) AS count FROM public.song AS t0 JOIN public.singer AS t1 "
            "ON t1.singer_id = t0.singer_id GROUP BY t1.name, t1.singer_id ORDER BY count DESC "
            "LIMIT 1",
            "counts one row per group",
        ),
        (
            "When did the singers debut?",
            SELECT_NAMES,
            "SELECT t0.debut_year AS debut_year FROM public.singer AS t0",
            "no date or year for 'when'",
        ),
    ],
)
def test_a_phrase_left_out_is_refused_and_one_accounted_for_passes(
    question: str, wrong: str, right: str, phrase: str
) -> None:
    with pytest.raises(LinkError) as refused:
        _verify(question, wrong)
    assert phrase in str(refused.value)
    _verify(question, right)


@pytest.mark.parametrize(
    ("question", "sql"),
    [
        # a number of a time window, of a column's name, in a date literal
        (
            "How many songs in the last 30 days?",
            "SELECT COUNT(*) FROM public.song AS t0 WHERE t0.sales >= '2026-10-25'",
        ),
        (
            "Which singers sold songs in 2014?",
            SELECT_NAMES + " JOIN public.song AS t1 ON t1.singer_id = t0.singer_id "
            "WHERE t1.sales >= '2014-01-01'",
        ),
        # "first name", "at most" and an order's direction are no superlatives
        ("List singers' names from highest to lowest age.", SELECT_NAMES + " ORDER BY t0.age"),
        (
            "How many singers have at most 3 songs?",
            "SELECT COUNT(*) FROM public.singer AS t0 WHERE (SELECT COUNT(*) FROM public.song "
            "AS s WHERE s.singer_id = t0.singer_id) <= 3",
        ),
        # "excluding the current week" is the date window's
        (
            "How many songs in the last 2 weeks excluding the current week?",
            "SELECT COUNT(*) FROM public.song AS t0 WHERE t0.debut_year >= '2026-11-09' "
            "AND t0.debut_year < '2026-11-23'",
        ),
        # a word naming a column the statement reads: a stadium's "average" attendance
        (
            "What is the total net worth of singers?",
            "SELECT SUM(t0.net_worth) FROM public.singer AS t0",
        ),
    ],
)
def test_what_a_statement_accounts_for_passes(question: str, sql: str) -> None:
    _verify(question, sql)


def test_statement_facts_resolve_aliases_and_output_names() -> None:
    facts = statement_facts(
        "SELECT t1.country AS country, COUNT(*) AS count FROM public.song AS t0 "
        "JOIN public.singer AS t1 ON t1.singer_id = t0.singer_id WHERE t1.age > 30 "
        "GROUP BY t1.country ORDER BY count DESC LIMIT 3"
    )
    assert ("public.singer", "country") in facts.columns
    assert ("public.song", "singer_id") in facts.columns
    assert facts.numbers == {30.0, 3.0} and facts.aggregates == {"COUNT"}
    assert facts.grouped and facts.ordered and facts.limited and not facts.negated


def test_one_value_asked_of_a_measure_defined_per_group_is_one_value() -> None:
    """ "The average AMB" with AMB defined as "the average balance per singer": the
    definition's "per" groups inside the measure; the question asks for one value."""
    amb = GlossaryEntry("AMB", definition="average net worth per singer", source="instructions")
    ctx = read_question(
        "What is the average AMB for singers below age 40?",
        VOCABULARY,
        date(2026, 11, 24),
        (amb,),
    )
    where = " FROM public.singer AS t0 WHERE t0.age < 40"
    with pytest.raises(LinkError, match="asks for one value"):
        verify_statement(
            ctx, "SELECT t0.singer_id, AVG(t0.net_worth) AS amb" + where + " GROUP BY t0.singer_id"
        )
    verify_statement(ctx, "SELECT AVG(t0.net_worth) AS amb" + where)
    # asked per group in the question itself, the groups stand
    ctx = read_question(
        "What is the average AMB for each singer below age 40?",
        VOCABULARY,
        date(2026, 11, 24),
        (amb,),
    )
    verify_statement(
        ctx, "SELECT t0.singer_id, AVG(t0.net_worth) AS amb" + where + " GROUP BY t0.singer_id"
    )


def test_two_defined_measures_asked_need_two_computed() -> None:
    terms = (
        GlossaryEntry("PSC", definition="number of songs", source="instructions"),
        GlossaryEntry("PSR", definition="number of singers", source="instructions"),
    )
    ctx = read_question(
        "What are the PSC and PSR for each country?", VOCABULARY, date(2026, 11, 24), terms
    )
    joined = (
        " FROM public.singer AS t0 JOIN public.song AS t1 ON t1.singer_id = t0.singer_id"
        " GROUP BY t0.country"
    )
    with pytest.raises(LinkError, match="psc and psr, 2 measures; the statement computes 1"):
        verify_statement(ctx, "SELECT t0.country, COUNT(*) AS count" + joined)
    verify_statement(
        ctx,
        "SELECT t0.country, COUNT(DISTINCT t1.song_id) AS psc, "
        "COUNT(DISTINCT t0.singer_id) AS psr" + joined,
    )


def test_how_much_answered_with_no_amount_is_refused() -> None:
    """ "How much …" listed the countries' rows with no number: refused; an amount summed,
    or a stored amount shown, answers it."""
    question = "How much did singers sell per country?"
    with pytest.raises(LinkError, match="no amount for 'how much'"):
        _verify(question, "SELECT t0.country AS country FROM public.singer AS t0")
    _verify(
        question,
        "SELECT t0.country AS country, SUM(t1.sales) AS s FROM public.singer AS t0 "
        "JOIN public.song AS t1 ON t1.singer_id = t0.singer_id GROUP BY t0.country",
    )
    _verify(
        "How much is the net worth of each singer?",
        "SELECT t0.name AS name, t0.net_worth AS net_worth FROM public.singer AS t0",
    )


SONGS = "SELECT COUNT(*) AS count FROM public.song AS t0"


@pytest.mark.parametrize(
    ("question", "wrong", "right"),
    [
        ("How many songs in December?", SONGS, SONGS + " WHERE EXTRACT(MONTH FROM t0.sales) = 12"),
        (
            # a year's bounds are no month
            "How many songs in 2026 in December?",
            SONGS + " WHERE t0.sales >= '2026-01-01' AND t0.sales < '2027-01-01'",
            SONGS + " WHERE t0.sales >= '2026-12-01' AND t0.sales < '2027-01-01'",
        ),
        ("How many songs in Dec?", SONGS, SONGS + " WHERE t0.title = 'Dec'"),
    ],
)
def test_a_month_the_question_names_bounds_the_statement(
    question: str, wrong: str, right: str
) -> None:
    with pytest.raises(LinkError) as refused:
        _verify(question, wrong)
    assert "the month" in str(refused.value)
    _verify(question, right)


@pytest.mark.parametrize(
    "question",
    ["May I see how many songs there are?", "How many songs march on?", "How many songs, jan?"],
)
def test_a_verb_or_a_lower_case_abbreviation_is_no_month(question: str) -> None:
    try:
        _verify(question, SONGS)
    except LinkError as refused:
        assert "the month" not in str(refused)


def test_a_day_written_with_its_month_is_the_date_modules() -> None:
    _verify(
        "How many songs in 2026 (from Jan 1st to Dec 31st inclusive)?",
        SONGS + " WHERE t0.sales >= '2026-01-01' AND t0.sales < '2027-01-01'",
    )


def test_a_ranking_by_a_count_needs_a_question_that_counts() -> None:
    by_count = (
        "SELECT t0.name AS name, COUNT(*) AS count FROM public.singer AS t0 GROUP BY t0.name "
        "ORDER BY count DESC NULLS LAST, name LIMIT 1"
    )
    # "highest" of a quantity, read as how many singers share each name
    with pytest.raises(LinkError, match="ranks by a count of rows"):
        _verify("What is the name of the highest singer?", by_count)
    # a question that counts may rank by the count
    _verify(
        "Which singer has the most songs?",
        "SELECT t1.name, COUNT(*) AS count FROM public.song AS t0 JOIN public.singer AS t1 "
        "ON t1.singer_id = t0.singer_id GROUP BY t1.name, t1.singer_id ORDER BY count DESC "
        "LIMIT 1",
    )


STAFF = Catalog(
    "staff",
    (
        TableInfo(
            "public",
            "employee",
            columns=(
                _col("employee_id"),
                _col("last_name", "text"),
                _col("birth_date", "date"),
                _col("hire_date", "date"),
            ),
            primary_key=("employee_id",),
        ),
    ),
)
STAFF_VOCABULARY = Vocabulary(STAFF, JoinGraph(STAFF))
EMPLOYEES = "SELECT t0.last_name AS last_name FROM public.employee AS t0"


def _staff(question: str, sql: str) -> None:
    verify_statement(read_question(question, STAFF_VOCABULARY, date(2026, 11, 29)), sql)


def test_a_clause_ending_in_first_or_last_ranks() -> None:
    with pytest.raises(LinkError, match="does not rank by 'last'"):
        _staff("Which employee was hired last?", EMPLOYEES)
    _staff("Which employee was hired last?", EMPLOYEES + " ORDER BY t0.hire_date DESC LIMIT 1")
    # a first name is no ranking
    _staff("What is the last name of each employee?", EMPLOYEES)


def test_a_ranking_by_a_date_the_question_does_not_name_beside_one_it_names() -> None:
    question = "List the last names of the 3 most recently hired employees."
    with pytest.raises(LinkError, match=r"names employee\.hire_date; the statement ranks by"):
        _staff(question, EMPLOYEES + " ORDER BY t0.birth_date DESC LIMIT 3")
    _staff(question, EMPLOYEES + " ORDER BY t0.hire_date DESC LIMIT 3")
    # no date named: the statement's choice stands
    _staff(
        "List the last names of the 3 youngest employees.",
        EMPLOYEES + " ORDER BY t0.birth_date DESC LIMIT 3",
    )


def test_a_passive_by_is_no_grouping() -> None:
    grouped = (
        "SELECT t1.age AS age, SUM(t0.sales) AS sum_sales FROM public.song AS t0 "
        "JOIN public.singer AS t1 ON t1.singer_id = t0.singer_id WHERE t1.name = 'Adele' "
        "GROUP BY t1.age"
    )
    one = (
        "SELECT SUM(t0.sales) AS sum_sales FROM public.song AS t0 "
        "JOIN public.singer AS t1 ON t1.singer_id = t0.singer_id WHERE t1.name = 'Adele'"
    )
    # "sold by" names who sold them: one total asked, one per age answered
    question = "What is the total sales of songs sold by Adele?"
    with pytest.raises(LinkError, match="asks for one value"):
        _verify(question, grouped)
    _verify(question, one)
    # a "by" after a noun, or after a participle that arranges rows, still groups
    _verify("What is the total sales by age of singers named Adele?", grouped)
    _verify("What is the total sales grouped by age of singers named Adele?", grouped)


def test_a_value_that_only_names_its_own_table_is_refused() -> None:
    question = "What are the names of all singers from France?"
    listed = "SELECT t0.name AS name FROM public.singer AS t0 WHERE t0.country = 'France'"
    with pytest.raises(LinkError, match="says the name of the table singer"):
        _verify(question, listed + " AND t0.name = 'All Singers'")
    _verify(question, listed)
    # a value with a word of its own is a row's ("The Singers" is not, "Singers Club" is)
    # (shown beside another column: the name alone, equal to it, is only the value again)
    _verify(
        "What are the name and age of the Singers Club singer?",
        "SELECT t0.name AS name, t0.age AS age FROM public.singer AS t0"
        " WHERE t0.name = 'Singers Club'",
    )


def test_either_or_needs_alternatives() -> None:
    question = "What are the names of singers either from France or older than 40?"
    both = SELECT_NAMES + " WHERE t0.country = 'France' AND t0.age > 40"
    with pytest.raises(LinkError, match="either"):
        _verify(question, both)
    _verify(question, SELECT_NAMES + " WHERE t0.country = 'France' OR t0.age > 40")


def test_a_referring_column_said_only_as_a_condition_is_not_listed() -> None:
    """The singers with a song selling above 1000, shown with each such song's sales,
    list a singer once per song: the sales were said only to be compared."""
    joined = (
        " FROM public.singer AS t0 JOIN public.song AS t1 ON t1.singer_id = t0.singer_id"
        " WHERE t1.sales > 1000"
    )
    question = "Which singers have songs with sales above 1000? Give their names."
    with pytest.raises(LinkError, match="only as a condition"):
        _verify(question, "SELECT t0.name AS name, t1.sales AS sales" + joined)
    _verify(question, "SELECT DISTINCT t0.name AS name" + joined)
    # said as what to show, not only compared: listed once per song, as asked
    _verify(
        "Show the name of each singer and the sales of their songs above 1000.",
        "SELECT t0.name AS name, t1.sales AS sales" + joined,
    )


TICKERS = Catalog(
    "broker",
    (
        TableInfo(
            "public",
            "ticker",
            columns=(
                _col("ticker_id"),
                ColumnInfo("symbol", "text", True),
                ColumnInfo("exchange", "text", True),
            ),
            primary_key=("ticker_id",),
        ),
        TableInfo(
            "public",
            "trade",
            columns=(_col("trade_id"), _col("ticker_id"), ColumnInfo("amount", "numeric", True)),
            primary_key=("trade_id",),
            foreign_keys=(ForeignKeyInfo(("ticker_id",), "public.ticker", ("ticker_id",)),),
        ),
    ),
)
TICKERS_VOCABULARY = Vocabulary(TICKERS, JoinGraph(TICKERS))
_PER_EXCHANGE = (
    "SELECT t1.exchange AS exchange, SUM(t0.amount) AS sum_amount FROM public.trade AS t0 "
    "JOIN public.ticker AS t1 ON t1.ticker_id = t0.ticker_id GROUP BY t1.exchange "
    "ORDER BY sum_amount DESC NULLS LAST LIMIT 10"
)
_PER_TICKER = (
    "SELECT t1.ticker_id AS ticker_id, t1.symbol AS symbol, SUM(t0.amount) AS sum_amount "
    "FROM public.trade AS t0 JOIN public.ticker AS t1 ON t1.ticker_id = t0.ticker_id "
    "GROUP BY t1.ticker_id, t1.symbol ORDER BY sum_amount DESC NULLS LAST LIMIT 10"
)


def _tickers(question: str, sql: str) -> None:
    verify_statement(read_question(question, TICKERS_VOCABULARY, date(2026, 11, 29)), sql)


def test_the_top_rows_said_are_not_ranked_as_values_of_one_of_their_columns() -> None:
    """ "Which exchanges are the top 10 tickers by … listed on?" was answered with 10
    exchanges ranked by their summed trades (defog v2 broker-u6's question spelled out, a
    confident wrong answer): the question ranks tickers, many to an exchange."""
    question = "Which exchanges are the top 10 tickers by total trade amount listed on?"
    with pytest.raises(LinkError, match="ranks the top 10 tickers"):
        _tickers(question, _PER_EXCHANGE)
    # ranked as the tickers themselves (grouped by their key), the same words pass
    _tickers("What are the top 10 tickers by total trade amount?", _PER_TICKER)
    # and a ranking of the column's values asked as such is no ranking of tickers
    _tickers("What are the top 10 exchanges by total trade amount?", _PER_EXCHANGE)
