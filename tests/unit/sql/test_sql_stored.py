"""Stored values read as the linker reads them: codes, names with an apostrophe, names
holding small words, one value whatever its case; a function word that is also a code is
a value only as written; a swap into another column's value is another question."""

from __future__ import annotations

from services.sql.catalog._catalog import Catalog, ColumnInfo, TableInfo
from services.sql.catalog._stored import StoredValues
from services.sql.memory._reuse import other_kind, read

AIRPORTS = TableInfo(
    "public", "airports",
    columns=(
        ColumnInfo("code", "text", False, sample_values=("JFK", "ORD", "US")),
        ColumnInfo("name", "text", False,
                   known_values=("Anna's Diner", "International Journal of Robotics")),
    ),
)  # fmt: skip
TRADES = TableInfo(
    "public", "trades",
    columns=(
        ColumnInfo("kind", "text", False, sample_values=("buy", "sell")),
        ColumnInfo("status", "text", False, sample_values=("pending", "success")),
    ),
)  # fmt: skip
VALUES = StoredValues.of(Catalog("db", (AIRPORTS, TRADES)))


def _said(text: str) -> list[str]:
    return [text[a:b] for a, b in VALUES.spans(text)]


def test_codes_apostrophes_and_names_with_small_words_are_one_value():
    assert _said("flights from JFK to ORD") == ["JFK", "ORD"]
    assert _said("reviews of anna's diner") == ["anna's diner"]
    assert _said("papers in the International Journal of Robotics") == [
        "International Journal of Robotics"
    ]


def test_a_function_word_is_a_value_only_as_written():
    assert _said("tell us about US flights") == ["US"]


def test_plural_and_case_do_not_hide_a_value():
    assert [h.stored for h in VALUES.holders("Sells")] == ["sell"]
    assert VALUES.spelling(TRADES, "kind", "BUY") == "buy"
    assert VALUES.spelling(TRADES, "status", "buy") is None


def test_the_memory_reads_stored_values_as_literals():
    reading = read("How many flights from JFK to ORD?", VALUES)
    assert [lit.value for lit in reading.literals] == ["JFK", "ORD"]
    named = read("How many reviews of anna's diner?", VALUES)
    assert [lit.value for lit in named.literals] == ["anna's diner"]
    assert read("How many reviews of anna's diner?").literals == ()  # without the lookup


def test_a_value_of_another_column_is_another_kind_of_question():
    bought = read("Who made a 'buy' trade?", VALUES)
    assert other_kind(bought, read("Who made a 'sell' trade?", VALUES), VALUES) is False
    assert other_kind(bought, read("Who made a 'pending' trade?", VALUES), VALUES) is True
