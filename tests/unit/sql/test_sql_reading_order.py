"""The order the linker tries its readings in (``BEFORE_AS_ASKED``, ``AFTER_REFUSAL``):
pinned here, with why each neighbour sits where it does, so a reading added or moved is
a decision and not an accident. Where a swap changes an answer, a test shows it on a
schema of its own (no dev set's): the first reading that links is the answer, so two
readings that both link a question must be tried in the order that reads it right."""

from __future__ import annotations

import itertools
import sys
from dataclasses import replace
from datetime import date

import pytest

from services.sql.catalog import Catalog, ColumnInfo, JoinGraph
from services.sql.linker import (
    AFTER_REFUSAL,
    BEFORE_AS_ASKED,
    LinkError,
    Meaning,
    QuestionLinker,
    Vocabulary,
)
from services.sql.verify import verify_statement
from tests.unit.sql.test_sql_attribute_asked import WORDS as ACADEMY_WORDS
from tests.unit.sql.test_sql_event_verbs import BIKES, CLIENTS, PURCHASES, VENDORS

TODAY = date(2026, 11, 30)

# Each neighbour pair of AFTER_REFUSAL, and why the first is tried first. "Apart" marks
# a pair no question was found to need in either order: the two read questions of
# shapes that do not meet, or meet only through ``_as_if_asked``, whose inner readings
# reach the same statement either way.
AFTER_REFUSAL_ORDER = {
    ("_read_self_joined", "_read_converted"): (
        "first: it says the as-asked statement otherwise (a value after a self-reference's "
        "words moved to the row referred to) and reads no other question; where it does "
        "not apply it returns None at once, so it changes no other reading's question"
    ),
    ("_read_converted", "_read_led"): (
        "apart: a number said in another unit than its column declares reads the same "
        "question with the number restated; it names no value two stored names begin"
    ),
    ("_read_led", "_read_rephrased"): (
        "the one reading that refuses outright (a name two stored values begin, a "
        "LinkError naming both): first, so no reading tried before it answers such a "
        "question with one of the two (the design's reason; no question here shows it)"
    ),
    ("_read_rephrased", "_read_apart"): "apart",
    ("_read_apart", "_read_agent"): "apart",
    ("_read_agent", "_read_gradable"): "apart",
    ("_read_gradable", "_read_agent_table"): "apart",
    ("_read_agent_table", "_read_how_much"): "apart",
    ("_read_how_much", "_read_event"): (
        "apart; and _read_event must follow _read_agent (not neighbours): a verb the "
        "embedder ties to a column of the rows themselves ('sold' -> bikes.seller) is "
        "what the schema says the verb is; the table recording an event is the reading "
        "only where the rows carry no such column"
    ),
}


def _names(readings: tuple[object, ...]) -> list[str]:
    return [getattr(r, "__name__", repr(r)) for r in readings]


def test_the_readings_are_tried_in_the_pinned_order() -> None:
    # Lateness and an attribute asked by a question word read questions of shapes that
    # do not meet ("arrived late" vs "how old is"): apart, both before the question as asked.
    # A listing "by X" (s62) comes last: the other two never read a trailing "by <column>"
    # on a listing, and as asked the words would be dropped or refused.
    # A headless listing read as "List …" (s63) comes first: it only supplies the head,
    # and its "List …" is read through every reading again (``_as_if_asked``), these
    # three included; a headed question passes it untouched.
    assert _names(BEFORE_AS_ASKED) == [
        "_read_listed_bare",
        "_read_lateness",
        "_read_attribute",
        "_read_listed_by",
    ]
    names = _names(AFTER_REFUSAL)
    assert list(itertools.pairwise(names)) == list(AFTER_REFUSAL_ORDER)
    assert all(reason for reason in AFTER_REFUSAL_ORDER.values())


def _swapped(monkeypatch: pytest.MonkeyPatch, table: str, readings: tuple[object, ...]) -> None:
    """The linker's reading table ``table`` replaced by ``readings`` for one test."""
    monkeypatch.setattr(sys.modules[QuestionLinker.__module__], table, readings)


# the bike shop of test_sql_event_verbs, its bikes also naming who sold each
SELLERS = Catalog(
    "shop",
    (
        replace(BIKES, columns=(*BIKES.columns, ColumnInfo("seller", "text", False))),
        CLIENTS,
        VENDORS,
        PURCHASES,
    ),
)
SOLD = (Meaning("sold", "public.bikes", "seller", 0.6),)


def _sql(question: str, vocab: Vocabulary, meanings: tuple[Meaning, ...] = ()) -> str:
    try:
        linked = QuestionLinker(
            question, vocab, TODAY, check=verify_statement, meanings=meanings
        ).link()
    except LinkError as refused:
        return f"refused: {refused}"
    return " ".join(linked.sql.split())


def test_a_verbs_column_on_the_rows_is_read_before_the_table_recording_its_event(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    words = Vocabulary(SELLERS, JoinGraph(SELLERS))
    read = _sql("Who sold the bikes?", words, SOLD)
    assert "t0.seller" in read and "vendors" not in read
    order = list(AFTER_REFUSAL)
    agent, event = (
        order.index(QuestionLinker._read_agent),
        order.index(QuestionLinker._read_event),
    )
    order[agent], order[event] = order[event], order[agent]
    _swapped(monkeypatch, "AFTER_REFUSAL", tuple(order))
    swapped = _sql("Who sold the bikes?", words, SOLD)
    assert "FROM public.vendors" in swapped and "seller" not in swapped


def test_an_attribute_asked_by_a_question_word_is_read_before_the_question_as_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As asked, "where ... from" is no refusal: the instructor's rows answer it, without
    the place. Read only after a refusal, the attribute would never be shown."""
    question = "Where does the instructor Mara come from?"
    read = _sql(question, ACADEMY_WORDS)
    assert "t0.home_town" in read
    _swapped(monkeypatch, "BEFORE_AS_ASKED", ())
    _swapped(monkeypatch, "AFTER_REFUSAL", (*BEFORE_AS_ASKED, *AFTER_REFUSAL))
    late = _sql(question, ACADEMY_WORDS)
    assert "home_town" not in late and not late.startswith("refused")
