"""A noun that says a stored value in other words, read as that value by meaning (issue
45, s63 women): "women" is ``gender = 'Female'`` and "men" ``'Male'`` — the value the real
model puts clearly nearest among the sampled values of the question's tables, as alike as
a name linked catalog-wide — and the interpretation says so. A word near no value ("adults",
0.54 from 'Male') or near two ("persons") reads nothing, and the question stays refused.
The follow-up "women only" after a count per insurance type is read through the same
pipeline (``conversation._conditions`` asks the linker), so it is this rule's too."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from datetime import date
from pathlib import Path

import numpy as np
import pytest

from services.common import Principal, current_principal, deadline_scope, remaining
from services.embedding import Embedder
from services.sql.access import asking_view, bind, load_access_policy
from services.sql.ask import SchemaView
from services.sql.ask._offline import OfflineGenerator
from services.sql.catalog import Catalog, ColumnInfo, JoinGraph, TableInfo
from services.sql.linker import ValueVectors, Vocabulary, value_meanings
from tests.unit.sql.schemas import col

TODAY = date(2026, 11, 30)

CLINIC = Catalog(
    "clinic",
    (
        TableInfo(
            "public",
            "patients",
            columns=(
                ColumnInfo("patient_id", "integer", False),
                col("first_name", "text", ("Ann", "Bob")),
                col("gender", "text", ("Female", "Male")),
                col("ins_type", "text", ("private", "medicare", "medicaid")),
            ),
            primary_key=("patient_id",),
        ),
    ),
)
VIEW = SchemaView("clinic", CLINIC, CLINIC.tables, "", TODAY)


class _Phrases:
    """The real model behind the linker's phrase embedder (queries, as served)."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder

    async def embed_phrases(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self._embedder.embed_queries(list(texts)), dtype=np.float32)


@pytest.mark.parametrize(("word", "value"), [("women", "Female"), ("men", "Male")])
async def test_a_noun_saying_a_stored_value_is_read_as_it(
    real_embedder: Embedder, word: str, value: str
) -> None:
    reading = await OfflineGenerator(_Phrases(real_embedder)).reading(
        f"How many patients by insurance type are {word}?", VIEW
    )
    assert reading.sql == (
        "SELECT t0.ins_type AS ins_type, COUNT(*) AS count FROM public.patients AS t0 "
        f"WHERE (t0.gender = '{value}') GROUP BY t0.ins_type"
    )
    assert f"'{word}' read as patients.gender = '{value}'" in reading.interpretation


@pytest.mark.parametrize("word", ["adults", "persons"])
async def test_a_word_near_no_one_value_reads_nothing_and_stays_refused(
    real_embedder: Embedder, word: str
) -> None:
    question = f"How many patients are {word}?"
    vocab = Vocabulary(CLINIC, JoinGraph(CLINIC))
    assert await value_meanings(_Phrases(real_embedder), vocab, question, [word]) == ()
    reading = await OfflineGenerator(_Phrases(real_embedder)).reading(question, VIEW)
    assert not reading.sql
    assert word in reading.reason


async def test_a_proper_name_is_never_read_as_a_value_by_meaning(
    real_embedder: Embedder,
) -> None:
    """A capitalised word inside the sentence is a name the value index holds or not;
    never a category said in other words."""
    vocab = Vocabulary(CLINIC, JoinGraph(CLINIC))
    found = await value_meanings(
        _Phrases(real_embedder), vocab, "How many patients are Women?", ["Women"]
    )
    assert found == ()


# --- a noun for part of a category is no name of it (s65, valmean2) ----------------------

INDUSTRIES = (
    "Healthcare",
    "Financial Services",
    "Manufacturing",
    "Retail",
    "Technology",
    "Education",
    "Logistics",
    "Energy",
    "Media",
    "Government",
)
# the demo warehouse's companies, as its catalog samples them
FIRMS = Catalog(
    "firms",
    (
        TableInfo(
            "public",
            "companies",
            columns=(
                ColumnInfo("company_id", "integer", False),
                col("industry", "text", INDUSTRIES),
                col("region", "text", ("North America", "Europe", "Asia Pacific", "Latin America")),
            ),
            primary_key=("company_id",),
        ),
    ),
)
FIRMS_VIEW = SchemaView("firms", FIRMS, FIRMS.tables, "", TODAY)


@pytest.mark.parametrize("word", ["hospitals", "banks"])
async def test_a_noun_for_part_of_a_category_is_not_read_as_the_category(
    real_embedder: Embedder, word: str
) -> None:
    """The word "hospitals" sits 0.69 from 'Healthcare' and "banks" 0.67 from 'Financial
    Services', each well ahead of every other industry — but a count of banks is not the
    count of financial-services companies. Neither word says the column ("industry": 0.44, 0.37),
    as "women" says "gender" (0.63): nothing is read, the question stays refused naming
    the word."""
    question = f"How many companies are {word}?"
    vocab = Vocabulary(FIRMS, JoinGraph(FIRMS))
    assert await value_meanings(_Phrases(real_embedder), vocab, question, [word]) == ()
    reading = await OfflineGenerator(_Phrases(real_embedder)).reading(question, FIRMS_VIEW)
    assert not reading.sql
    assert word in reading.reason
    assert "industry" not in reading.reason  # no existing column claimed absent or named


async def test_a_noun_that_names_a_category_and_its_column_is_read(
    real_embedder: Embedder,
) -> None:
    """The column rule keeps a category's own name: "manufacturers" sits 0.79 from
    'Manufacturing' and 0.72 from "industry"."""
    vocab = Vocabulary(FIRMS, JoinGraph(FIRMS))
    found = await value_meanings(
        _Phrases(real_embedder), vocab, "How many companies are manufacturers?", ["manufacturers"]
    )
    assert [(m.column, m.value) for m in found] == [("industry", "Manufacturing")]


# --- the values' vectors paid for once (s64, valmean) ------------------------------------


class _Counting(_Phrases):
    """The real model, counting every text it is asked to embed."""

    def __init__(self, embedder: Embedder) -> None:
        super().__init__(embedder)
        self.texts: list[str] = []

    async def embed_phrases(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += texts
        return await super().embed_phrases(texts)


class _Dead:
    """An embedding service that is down: every call fails, as the gRPC embedder's does."""

    def __init__(self) -> None:
        self.calls = 0

    async def embed_phrases(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        raise ConnectionError("embedding service unavailable")


STORED = ("Ann", "Bob", "Female", "Male", "private", "medicare", "medicaid")
# the words of the values' columns, embedded with them (a value's word must say its column)
COLUMN_WORDS = ("first name", "gender", "ins type")


async def test_the_values_vectors_are_embedded_once_per_catalog_not_per_question(
    real_embedder: Embedder,
) -> None:
    """Every question this rule reaches is a refused one: the sampled values it compares
    a word with are embedded by the first such question and held for the vocabulary, so
    a second refused question over the same tables sends only its own words."""
    counting = _Counting(real_embedder)
    generator = OfflineGenerator(counting)
    women = await generator.reading("How many patients by insurance type are women?", VIEW)
    assert "gender = 'Female'" in women.sql
    first = len(counting.texts)
    assert all(counting.texts.count(v) == 1 for v in STORED)
    men = await generator.reading("How many patients are men?", VIEW)
    assert "gender = 'Male'" in men.sql
    again = counting.texts[first:]
    assert "men" in again
    assert not set(again) & {*STORED, *COLUMN_WORDS}  # no value nor column embedded twice


async def test_a_dead_embedder_makes_the_rule_step_aside_and_keeps_nothing(
    real_embedder: Embedder,
) -> None:
    """With the embedding service down the question is refused as without the rule (no
    error, no wait beyond the failed call), and nothing is remembered: the next question
    with the service back reads the value."""
    vocab = Vocabulary(CLINIC, JoinGraph(CLINIC))
    dead = _Dead()
    question = "How many patients are women?"
    assert await value_meanings(dead, vocab, question, ["women"]) == ()
    assert dead.calls == 1
    reading = await OfflineGenerator(_Dead()).reading(question, VIEW)
    assert not reading.sql and "women" in reading.reason
    found = await value_meanings(_Phrases(real_embedder), vocab, question, ["women"])
    assert [(m.column, m.value) for m in found] == [("gender", "Female")]


async def test_under_a_row_filter_only_values_the_principals_rows_hold_are_read(
    real_embedder: Embedder, tmp_path: Path
) -> None:
    """The catalog samples values over every row; a principal under a row filter links
    against their own catalog, whose filtered tables keep only the values their rows hold
    (``access._values``). The rule reads that catalog's values, so a word is never read
    as, nor a refusal named with, a value sampled outside their rows: here the clinic's
    rows hold only men, and "women" stays refused without naming 'Female'."""
    catalog = Catalog(
        "clinic",
        (
            TableInfo(
                "public",
                "patients",
                columns=(
                    ColumnInfo("patient_id", "integer", False),
                    ColumnInfo("clinic_id", "integer", False),
                    *CLINIC.tables[0].columns[1:],
                ),
                primary_key=("patient_id",),
            ),
        ),
    )
    path = tmp_path / "policy.json"
    path.write_text(json.dumps({"row_filters": {"patients": "clinic_id = {principal.clinic}"}}))
    bind(catalog, load_access_policy(path))

    async def read(text: str, rows: int) -> list[tuple[int, str]] | None:
        # the principal's rows (first_name, gender, ins_type in column order): men only
        return [(0, "Bob"), (1, "Male"), (2, "private"), (2, "medicare")]

    async def as_principal(question: str) -> tuple[str, str]:
        async def run() -> tuple[str, str]:
            current_principal.set(Principal.of("dana", ["staff"], {"clinic": "7"}))
            own = await asking_view(catalog, read)
            view = SchemaView("clinic", own, own.tables, "", TODAY)
            reading = await OfflineGenerator(_Phrases(real_embedder)).reading(question, view)
            return reading.sql, reading.reason

        return await asyncio.create_task(run())

    sql, reason = await as_principal("How many patients by insurance type are women?")
    assert not sql and "women" in reason
    assert "Female" not in reason
    sql, _ = await as_principal("How many patients by insurance type are men?")
    assert "t0.gender = 'Male'" in sql


async def test_a_refused_question_asked_again_asks_the_embedder_nothing(
    real_embedder: Embedder,
) -> None:
    """A client retrying a refused question (the fault matrix's callers, a person asking
    again) costs this rule no embedding at all: its words are held beside the values."""
    counting = _Counting(real_embedder)
    vocab = Vocabulary(CLINIC, JoinGraph(CLINIC))
    question = "How many patients are adults?"
    assert await value_meanings(counting, vocab, question, ["adults"]) == ()
    assert set(counting.texts) == {"adults", *STORED, *COLUMN_WORDS}
    assert await value_meanings(counting, vocab, question, ["adults"]) == ()
    assert len(counting.texts) == len(STORED) + len(COLUMN_WORDS) + 1


class _Gated(_Counting):
    """The real model behind a gate: a call waits until the test opens it, as a loaded
    embedding service keeps a question waiting past its deadline."""

    def __init__(self, embedder: Embedder) -> None:
        super().__init__(embedder)
        self.gate = asyncio.Event()
        self.called = asyncio.Event()

    async def embed_phrases(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += texts
        self.called.set()
        await self.gate.wait()
        return await _Phrases.embed_phrases(self, texts)


async def test_a_question_cut_off_while_values_embed_leaves_them_for_the_next(
    real_embedder: Embedder,
) -> None:
    """A question cancelled by its deadline while the values are being embedded does not
    cancel the embedding: the next question finds them held. Two questions at once share
    one embedding of the values."""
    gated = _Gated(real_embedder)
    vocab = Vocabulary(CLINIC, JoinGraph(CLINIC))
    memory = ValueVectors()
    question = "How many patients are women?"
    first = asyncio.create_task(value_meanings(gated, vocab, question, ["women"], memory))
    second = asyncio.create_task(value_meanings(gated, vocab, question, ["women"], memory))
    await gated.called.wait()
    first.cancel()  # the deadline
    with pytest.raises(asyncio.CancelledError):
        await first
    gated.gate.set()
    assert [m.value for m in await second] == ["Female"]
    assert all(gated.texts.count(v) == 1 for v in STORED)
    embedded = len(gated.texts)
    found = await value_meanings(gated, vocab, question, ["women"], memory)
    assert [m.value for m in found] == ["Female"] and len(gated.texts) == embedded


async def test_the_catalogs_values_are_embedded_in_the_background_from_its_first_question(
    real_embedder: Embedder,
) -> None:
    """The first question of a catalog load, answered or not, starts its values in the
    background and does not wait for them; a refused question later asks only its word."""
    gated = _Gated(real_embedder)
    generator = OfflineGenerator(gated)
    answered = await generator.reading("How many patients are there?", VIEW)
    assert answered.sql  # not held up by the values, still waiting behind the gate
    await gated.called.wait()
    assert set(STORED) <= set(gated.texts)
    gated.gate.set()
    before = len(gated.texts)
    women = await generator.reading("How many patients are women?", VIEW)
    assert "gender = 'Female'" in women.sql
    assert not set(gated.texts[before:]) & set(STORED)


class _Seeing(_Phrases):
    """The real model, noting the request deadline each call would inherit."""

    def __init__(self, embedder: Embedder) -> None:
        super().__init__(embedder)
        self.left: list[float | None] = []

    async def embed_phrases(self, texts: Sequence[str]) -> np.ndarray:
        self.left.append(remaining())
        return await super().embed_phrases(texts)


async def test_values_are_embedded_outside_the_asking_requests_deadline(
    real_embedder: Embedder,
) -> None:
    """Outgoing calls take the current request's remaining time as their timeout: an
    embedding made for every later question must not be cut off by the deadline of the
    one that happened to start it."""
    seeing = _Seeing(real_embedder)
    with deadline_scope(30.0):
        found = await value_meanings(
            seeing, Vocabulary(CLINIC, JoinGraph(CLINIC)), "How many patients are women?",
            ["women"], ValueVectors(),
        )  # fmt: skip
    assert [m.value for m in found] == ["Female"]
    assert seeing.left and seeing.left == [None] * len(seeing.left)


async def test_a_question_short_of_time_steps_aside_and_the_values_go_on_embedding(
    real_embedder: Embedder,
) -> None:
    """Within a request a question waits for its values at most half of what it has
    left, then reads as without the rule (refused, not cut off); the embedding goes on
    and the next question finds the vectors held."""
    gated = _Gated(real_embedder)
    vocab = Vocabulary(CLINIC, JoinGraph(CLINIC))
    memory = ValueVectors()
    question = "How many patients are women?"
    # 2.2 s left: waits 0.2 s (its last two seconds kept); the gate is shut, so
    # nothing could arrive in them
    with deadline_scope(2.2):
        assert await value_meanings(gated, vocab, question, ["women"], memory) == ()
    gated.gate.set()
    found = await value_meanings(gated, vocab, question, ["women"], memory)
    assert [m.value for m in found] == ["Female"]
    assert all(gated.texts.count(v) == 1 for v in STORED)


class _Prompt(_Counting):
    """The real model, answering after one turn of the event loop."""

    async def embed_phrases(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += texts
        await asyncio.sleep(0)
        return await _Phrases.embed_phrases(self, texts)


async def test_a_request_with_little_time_left_never_waits_for_value_vectors(
    real_embedder: Embedder,
) -> None:
    """A request with under two seconds left (a client's tight deadline, as the fault
    matrix's 1.5 s Ask) reads as without the rule rather than wait even for vectors about
    to arrive; the next question with time reads the word."""
    prompt = _Prompt(real_embedder)
    vocab = Vocabulary(CLINIC, JoinGraph(CLINIC))
    memory = ValueVectors()
    question = "How many patients are women?"
    with deadline_scope(1.5):
        assert await value_meanings(prompt, vocab, question, ["women"], memory) == ()
    found = await value_meanings(prompt, vocab, question, ["women"], memory)
    assert [m.value for m in found] == ["Female"]
    assert all(prompt.texts.count(v) == 1 for v in STORED)


async def test_a_request_with_little_time_left_starts_no_embedding(
    real_embedder: Embedder,
) -> None:
    """A request that could never wait for value vectors starts none: neither its own
    texts nor the catalog's values in the background. The fault matrix's 1.5 s Asks, each
    starting embeddings, took the CPU their answers needed (8 to 31 past their deadline on a
    loaded machine, main 4 to 12); the first question with time starts them."""
    gated = _Gated(real_embedder)
    generator = OfflineGenerator(gated)
    vocab = Vocabulary(CLINIC, JoinGraph(CLINIC))
    memory = ValueVectors()
    with deadline_scope(1.5):
        assert (await generator.reading("How many patients are there?", VIEW)).sql
        assert await value_meanings(gated, vocab, "Which are women?", ["women"], memory) == ()
        for _ in range(3):  # any task started would reach the embedder in these turns
            await asyncio.sleep(0)
    assert not gated.called.is_set() and not gated.texts
    gated.gate.set()
    women = await generator.reading("How many patients are women?", VIEW)
    assert "gender = 'Female'" in women.sql
