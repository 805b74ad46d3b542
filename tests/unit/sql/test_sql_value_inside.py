"""A word inside a stored value ("Denver" of 'America/Denver') is read as that value only
where no other column's values hold the word too; a proper name held by several columns
is the column that tells rows apart (an airport's name, not the time zone many airports
share), and anything less certain is left unread."""

from __future__ import annotations

from datetime import date

from services.sql.catalog._catalog import Catalog, ColumnInfo, TableInfo
from services.sql.catalog._joins import JoinGraph
from services.sql.linker import Vocabulary, read_question
from services.sql.linker._lookup import find_value_inside
from services.sql.words import tokenize

TZONES = ("America/Denver", "America/Chicago", "Pacific/Honolulu")


def _catalog(names: tuple[str, ...]) -> Catalog:
    return Catalog(
        "air",
        (
            TableInfo(
                "public",
                "airports",
                columns=(
                    ColumnInfo("faa", "text", False),
                    ColumnInfo("name", "text", True, known_values=names),
                    ColumnInfo("tzone", "text", True, sample_values=TZONES),
                ),
                primary_key=("faa",),
            ),
        ),
    )


def _inside(question: str, word: str, names: tuple[str, ...]) -> tuple[str, str] | None:
    catalog = _catalog(names)
    ctx = read_question(question, Vocabulary(catalog, JoinGraph(catalog)), date(2026, 11, 29))
    tok = next(t for t in tokenize(ctx.question) if t.low == word)
    found = find_value_inside(ctx, tok)
    return None if found is None else (found[0].column.name, found[1])


NAMES = ("Denver Intl", "Chicago Ohare Intl", "Honolulu Intl", "Front Range", "Aspen")


def test_a_proper_name_held_by_two_columns_is_the_one_that_tells_rows_apart() -> None:
    assert _inside("Which airports serve Denver?", "denver", NAMES) == (
        "name",
        "{c} = 'Denver Intl'",
    )


def test_the_whole_value_spelled_is_that_value() -> None:
    assert _inside("Which airports are in America/Denver?", "denver", NAMES) == (
        "tzone",
        "{c} = 'America/Denver'",
    )


def test_a_word_held_by_one_column_only_is_its_value() -> None:
    assert _inside("Which airports are in Denver?", "denver", ("Stapleton", "Aspen")) == (
        "tzone",
        "{c} = 'America/Denver'",
    )


def test_a_lower_case_word_or_a_name_in_several_values_is_left_unread() -> None:
    assert _inside("which airports serve denver?", "denver", NAMES) is None
    both = ("Denver Intl", "Denver Rocky Mountain", "Aspen")
    assert _inside("Which airports serve Denver?", "denver", both) is None


AWARDS = ("TSN Pitcher of the Year", "Most Valuable Player", "Gold Glove")


def _award(question: str, word: str) -> tuple[str, str] | None:
    catalog = Catalog(
        "ball",
        (
            TableInfo(
                "public",
                "awards",
                columns=(
                    ColumnInfo("award_id", "text", False, sample_values=AWARDS),
                    ColumnInfo("player_id", "text", False),
                ),
            ),
        ),
    )
    ctx = read_question(question, Vocabulary(catalog, JoinGraph(catalog)), date(2026, 11, 29))
    tok = next(t for t in tokenize(ctx.question) if t.low == word)
    found = find_value_inside(ctx, tok)
    return None if found is None else (found[0].column.name, found[1])


def test_a_value_said_in_less_than_half_of_its_words_is_left_unread() -> None:
    # "which pitcher" says one of 'TSN Pitcher of the Year''s three content words: a
    # title that contains the word, not the pitcher asked for
    assert _award("Which pitcher had the most strikeouts?", "pitcher") is None
    # two of three said: the award by its distinctive words
    assert _award("Who won pitcher of the year?", "pitcher") == (
        "award_id",
        "{c} = 'TSN Pitcher of the Year'",
    )
