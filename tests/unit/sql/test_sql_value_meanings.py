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
from dataclasses import replace
from datetime import date, timedelta
from pathlib import Path

import numpy as np
import pytest

from services.common import Principal, Unavailable, current_principal, deadline_scope, remaining
from services.embedding import Embedder
from services.sql.access import asking_view, bind, load_access_policy
from services.sql.ask import SchemaView
from services.sql.ask._offline import OfflineGenerator
from services.sql.catalog import Catalog, CatalogCache, ColumnInfo, JoinGraph, TableInfo
from services.sql.catalog import _cache as cache_module
from services.sql.linker import ValueVectors, Vocabulary, value_meanings
from services.sql.linker import _valued as valued
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


async def _prepared(embedder: _Phrases, catalog: Catalog = CLINIC) -> OfflineGenerator:
    """A generator with ``catalog``'s load prepared, as the catalog cache prepares every
    load before serving it (``CatalogCache.prepare_with``)."""
    generator = OfflineGenerator(embedder)
    assert await generator.prepare(catalog)
    return generator


async def _loaded(embedder: _Phrases, catalog: Catalog = CLINIC) -> ValueVectors:
    memory = ValueVectors()
    assert await memory.load(embedder, catalog)
    return memory


@pytest.mark.parametrize(("word", "value"), [("women", "Female"), ("men", "Male")])
async def test_a_noun_saying_a_stored_value_is_read_as_it(
    real_embedder: Embedder, word: str, value: str
) -> None:
    generator = await _prepared(_Phrases(real_embedder))
    reading = await generator.reading(f"How many patients by insurance type are {word}?", VIEW)
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
    memory = await _loaded(_Phrases(real_embedder))
    assert await value_meanings(_Phrases(real_embedder), vocab, question, [word], memory) == ()
    reading = await (await _prepared(_Phrases(real_embedder))).reading(question, VIEW)
    assert not reading.sql
    assert word in reading.reason


async def test_a_proper_name_is_never_read_as_a_value_by_meaning(
    real_embedder: Embedder,
) -> None:
    """A capitalised word inside the sentence is a name the value index holds or not;
    never a category said in other words."""
    vocab = Vocabulary(CLINIC, JoinGraph(CLINIC))
    found = await value_meanings(
        _Phrases(real_embedder), vocab, "How many patients are Women?", ["Women"],
        await _loaded(_Phrases(real_embedder)),
    )  # fmt: skip
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
    memory = await _loaded(_Phrases(real_embedder), FIRMS)
    assert await value_meanings(_Phrases(real_embedder), vocab, question, [word], memory) == ()
    generator = await _prepared(_Phrases(real_embedder), FIRMS)
    reading = await generator.reading(question, FIRMS_VIEW)
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
        _Phrases(real_embedder), vocab, "How many companies are manufacturers?",
        ["manufacturers"], await _loaded(_Phrases(real_embedder), FIRMS),
    )  # fmt: skip
    assert [(m.column, m.value) for m in found] == [("industry", "Manufacturing")]


# --- the values' vectors paid for once per catalog load (s64 valmean, s66 vecload) ------


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


async def test_the_values_vectors_are_embedded_once_per_load_not_per_question(
    real_embedder: Embedder,
) -> None:
    """Every question this rule reaches is a refused one: the sampled values it compares
    a word with, and their columns' words, are embedded once, when the load is prepared;
    a refused question sends only its own word."""
    counting = _Counting(real_embedder)
    generator = await _prepared(counting)
    assert set(counting.texts) == {*STORED, *COLUMN_WORDS}
    loaded = len(counting.texts)
    women = await generator.reading("How many patients by insurance type are women?", VIEW)
    assert "gender = 'Female'" in women.sql
    assert "women" in counting.texts[loaded:]
    assert not set(counting.texts[loaded:]) & set(STORED)  # (names are the meanings' own)
    first = len(counting.texts)
    men = await generator.reading("How many patients are men?", VIEW)
    assert "gender = 'Male'" in men.sql
    again = counting.texts[first:]
    assert "men" in again
    assert not set(again) & {*STORED, *COLUMN_WORDS}  # no value nor column embedded again


@pytest.fixture
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """A failed batch asked again at once (the retries' waits are the service's, not the
    rule's; no test sleeps)."""
    monkeypatch.setattr(valued, "_RETRY_S", 0.0)


@pytest.mark.usefixtures("no_backoff")
async def test_a_dead_embedder_makes_the_rule_step_aside_and_keeps_nothing(
    real_embedder: Embedder,
) -> None:
    """With the embedding service down the load keeps no vectors and a question is
    refused as without the rule (no error); loaded again with the service back, the
    next question reads the value."""
    vocab = Vocabulary(CLINIC, JoinGraph(CLINIC))
    dead = _Dead()
    question = "How many patients are women?"
    memory = ValueVectors()
    assert not await memory.load(dead, CLINIC)
    assert dead.calls == valued._ATTEMPTS and not memory.ready and not memory.by_text
    assert await value_meanings(dead, vocab, question, ["women"], memory) == ()
    generator = OfflineGenerator(_Dead())
    assert not await generator.prepare(CLINIC)
    reading = await generator.reading(question, VIEW)
    assert not reading.sql and "women" in reading.reason
    assert await memory.load(_Phrases(real_embedder), CLINIC)
    found = await value_meanings(_Phrases(real_embedder), vocab, question, ["women"], memory)
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

    generator = await _prepared(_Phrases(real_embedder), catalog)  # the whole load's values

    async def as_principal(question: str) -> tuple[str, str]:
        async def run() -> tuple[str, str]:
            current_principal.set(Principal.of("dana", ["staff"], {"clinic": "7"}))
            own = await asking_view(catalog, read)
            view = SchemaView("clinic", own, own.tables, "", TODAY)
            reading = await generator.reading(question, view)
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
    memory = await _loaded(counting)
    question = "How many patients are adults?"
    assert await value_meanings(counting, vocab, question, ["adults"], memory) == ()
    assert set(counting.texts) == {"adults", *STORED, *COLUMN_WORDS}
    assert await value_meanings(counting, vocab, question, ["adults"], memory) == ()
    assert len(counting.texts) == len(STORED) + len(COLUMN_WORDS) + 1


class _Gated(_Counting):
    """The real model behind a gate: a call embedding the catalog's values waits until
    the test opens it, as a loaded embedding service keeps the catalog's load waiting
    (a question's own words pass)."""

    def __init__(self, embedder: Embedder) -> None:
        super().__init__(embedder)
        self.gate = asyncio.Event()
        self.called = asyncio.Event()

    async def embed_phrases(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += texts
        if set(texts) & set(STORED):
            self.called.set()
            await self.gate.wait()
        return await _Phrases.embed_phrases(self, texts)


def _cached(generator: OfflineGenerator, *loads: Catalog) -> CatalogCache:
    """A catalog cache serving ``loads`` one after another (a refresh reads the next),
    each prepared by ``generator`` before it is served, as ``build_deps`` wires it."""
    pending = list(loads)

    async def load() -> Catalog:
        return pending.pop(0)

    cache = CatalogCache(load, ttl_s=3600.0, database="clinic")
    cache.prepare_with(generator.prepare)
    return cache


async def _ask(cache: CatalogCache, generator: OfflineGenerator, question: str) -> str:
    """The question as the engine asks it: the database's catalog, then the reading.
    Its statement, or the refusal's reason code when the catalog is not served yet."""
    try:
        catalog = await cache.get()
    except Unavailable as exc:
        return exc.reason
    view = SchemaView("clinic", catalog, catalog.tables, "", TODAY)
    return (await generator.reading(question, view)).sql


WOMEN = "How many patients by insurance type are women?"


async def test_a_question_asked_while_the_values_embed_gets_the_later_answer_or_loading(
    real_embedder: Embedder,
) -> None:
    """The answer does not depend on whether the value vectors were in: a question asked
    while the load is still embedding them, with a deadline too short to wait for the
    catalog, is told CATALOG_LOADING (stated, retryable) — never refused for want of
    vectors a moment later held (s65: refused when the vectors were late, answered when
    not). Events, no sleeps: the embedder's gate is shut until the first question ends."""
    gated = _Gated(real_embedder)
    generator = OfflineGenerator(gated)
    cache = _cached(generator, CLINIC)
    cache.start()
    await gated.called.wait()  # the load is embedding its values
    with deadline_scope(1.0):  # a client's short deadline: nothing left to wait with
        before = await _ask(cache, generator, WOMEN)
    gated.gate.set()
    after = await _ask(cache, generator, WOMEN)
    assert "t0.gender = 'Female'" in after
    assert before in (after, "CATALOG_LOADING")


async def test_a_refresh_serves_the_prepared_load_while_the_next_one_embeds(
    real_embedder: Embedder,
) -> None:
    """A changed schema is loaded again in the background: the new load's values are
    embedded before it is served, the old load (its vectors in) answering meanwhile, so
    no question between the two is read without vectors."""
    gated = _Gated(real_embedder)
    gated.gate.set()
    generator = OfflineGenerator(gated)
    later = replace(CLINIC, refreshed_at=CLINIC.refreshed_at + timedelta(seconds=1))
    cache = _cached(generator, CLINIC, later)
    first = await _ask(cache, generator, WOMEN)
    assert "t0.gender = 'Female'" in first
    gated.gate.clear()
    gated.called.clear()
    refreshing = asyncio.create_task(cache.refresh())
    await gated.called.wait()  # the next load is embedding its values
    assert await _ask(cache, generator, WOMEN) == first
    gated.gate.set()
    await refreshing
    assert cache.cached is later
    assert await _ask(cache, generator, WOMEN) == first


class _Flaky(_Counting):
    """The real model behind a service that is down until the test brings it back, or
    (``failing``) that misses its first few calls, as a busy one at start."""

    def __init__(self, embedder: Embedder, failing: int = 0) -> None:
        super().__init__(embedder)
        self.down = not failing
        self.failing = failing
        self.calls = 0
        self.loads = 0  # calls embedding the catalog's values

    async def embed_phrases(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.loads += bool(set(texts) & set(STORED))
        if self.down or self.calls <= self.failing:
            raise ConnectionError("embedding service unavailable")
        return await super().embed_phrases(texts)


@pytest.mark.usefixtures("no_backoff")
async def test_a_batch_the_embedder_misses_at_start_is_asked_again(
    real_embedder: Embedder,
) -> None:
    """Every database's load asks the embedding service at once when the service starts,
    and a call can miss its deadline: the batch is asked again, and the load completes."""
    busy = _Flaky(real_embedder, failing=valued._ATTEMPTS - 1)
    memory = ValueVectors()
    assert await memory.load(busy, CLINIC)
    assert set(memory.by_text) == {*STORED, *COLUMN_WORDS}


@pytest.mark.usefixtures("no_backoff")
async def test_a_load_served_without_its_values_has_them_embedded_again_in_the_background(
    real_embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The embedding service down through the load: the catalog is served without the
    vectors (never held up by them), a question the rule could read is refused saying
    the values' meanings are still being loaded (stated, to be asked again), and the
    cache embeds them again in the background, no question starting or waiting for it;
    once they are in the question is read."""
    monkeypatch.setattr(cache_module, "PREPARE_RETRY_S", 0.0)
    flaky = _Flaky(real_embedder)
    generator = OfflineGenerator(flaky)
    cache = _cached(generator, CLINIC)
    catalog = await cache.get()  # served at once though its values are not in
    view = SchemaView("clinic", catalog, catalog.tables, "", TODAY)
    refused = await generator.reading(WOMEN, view)
    assert not refused.sql and "women" in refused.reason and valued.PENDING in refused.reason
    flaky.down = False
    await cache.preparation()  # the cache's own retries, started by the load
    assert "t0.gender = 'Female'" in await _ask(cache, generator, WOMEN)


# a table beside the patients that holds no stored text: nothing the rule could read
WARDS = TableInfo(
    "public",
    "wards",
    columns=(ColumnInfo("ward_id", "integer", False), col("beds", "integer")),
    primary_key=("ward_id",),
)
CLINIC_AND_WARDS = Catalog("clinic", (*CLINIC.tables, WARDS))


@pytest.mark.usefixtures("no_backoff")
async def test_a_refusal_the_values_could_not_change_does_not_say_they_are_loading(
    real_embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The vectors not in, a refusal says they are still being loaded only where the rule
    had values to read the unplaced word as: "women" among the wards (no stored text, no
    table joined to them) would be refused with every vector in, so "ask again shortly"
    would be a false promise; among the patients it is said."""
    monkeypatch.setattr(cache_module, "PREPARE_RETRY_S", 0.0)
    generator = OfflineGenerator(_Flaky(real_embedder))
    catalog = await _cached(generator, CLINIC_AND_WARDS).get()
    view = SchemaView("clinic", catalog, catalog.tables, "", TODAY)
    wards = await generator.reading("How many beds do the wards for women have?", view)
    assert not wards.sql and "women" in wards.reason
    assert valued.PENDING not in wards.reason
    patients = await generator.reading(WOMEN, view)
    assert not patients.sql and valued.PENDING in patients.reason


class _Seeing(_Phrases):
    """The real model, noting the request deadline each call would inherit."""

    def __init__(self, embedder: Embedder) -> None:
        super().__init__(embedder)
        self.left: list[float | None] = []

    async def embed_phrases(self, texts: Sequence[str]) -> np.ndarray:
        self.left.append(remaining())
        return await super().embed_phrases(texts)


async def test_a_load_a_question_started_embeds_outside_its_deadline(
    real_embedder: Embedder,
) -> None:
    """Outgoing calls take the current request's remaining time as their timeout; the
    first load of a database may be started by a question (``CatalogCache.get``), and
    the values embedded for every later question must not be cut off by its deadline."""
    seeing = _Seeing(real_embedder)
    with deadline_scope(30.0):
        assert await OfflineGenerator(seeing).prepare(CLINIC)
    assert seeing.left and seeing.left == [None] * len(seeing.left)


NOTES = TableInfo(
    "public",
    "a_notes",
    columns=(
        ColumnInfo("note_id", "integer", False),
        col("topic", "text", tuple(f"Topic {n}" for n in range(12))),
    ),
    primary_key=("note_id",),
)


async def test_a_load_embeds_at_most_its_bound_a_table_past_it_skipped_whole(
    real_embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bounded by work, not seconds: a load embeds at most ``LOAD_TEXTS_MAX`` texts, table
    by table in the catalog's order; a table whose texts do not fit is skipped whole and
    the next tables are still taken, so the same catalog always has the same vectors. A
    question over a skipped table reads nothing by value meaning (refused, on every load
    alike); one over a table taken reads its value."""
    catalog = Catalog("clinic", (NOTES, *CLINIC.tables))
    view = SchemaView("clinic", catalog, catalog.tables, "", TODAY)
    monkeypatch.setattr(valued, "LOAD_TEXTS_MAX", 11)  # a_notes: 13 texts, patients: 10
    assert set(valued.load_texts(catalog)) == {*STORED, *COLUMN_WORDS}
    generator = await _prepared(_Phrases(real_embedder), catalog)
    assert "t0.gender = 'Female'" in (await generator.reading(WOMEN, view)).sql
    monkeypatch.setattr(valued, "LOAD_TEXTS_MAX", 9)  # neither fits
    assert valued.load_texts(catalog) == []
    generator = await _prepared(_Phrases(real_embedder), catalog)
    refused = await generator.reading(WOMEN, view)
    assert not refused.sql and "women" in refused.reason
