"""Reusing confirmed pairs, offline: reading literals, adapting the stored statement by
replacing literal nodes, the word-agreement rules, and the reuse path's gate — with
plain fakes of the store, the embedder and the runner."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from services.bench.sql_memory import VARIANTS
from services.sql import Catalog, SqlGate
from services.sql.catalog._stored import StoredValues
from services.sql.gate._execute import Limits
from services.sql.memory._answers import AnswerMemory, Candidate, MemorySettings, schema_words
from services.sql.memory._reuse import (
    Literal,
    NotAdaptable,
    adapt,
    agreement,
    measures,
    names_schema,
    read,
    roles_differ,
    stem,
)
from services.sql.memory._store import (
    ConfirmedPair,
    EmbeddingUnavailable,
    NearPair,
    PairSource,
    Survey,
)
from services.sql.words._words import lemma

# --- reading questions ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "literals"),
    [
        ("How many Toyota cars were sold in the last 30 days?",
         [Literal("text", "Toyota"), Literal("number", "30", "days")]),
        ("What are the top five countries?", [Literal("number", "5")]),
        ("Patients diagnosed with 'Psoriasis vulgaris'", [Literal("text", "Psoriasis vulgaris")]),
        ("Sales between Jan 1, 2023 and Mar 31st 2023",
         [Literal("date", "2023-01-01"), Literal("date", "2023-03-31")]),
        ("Customers in New York", [Literal("text", "New York")]),
        ("What is the PIC for female patients?", []),  # an acronym names a measure
        ("Return the names. Which are active?", []),  # sentence openers are not names
    ],
)  # fmt: skip
def test_reading_finds_the_literals_in_order(question, literals):
    assert list(read(question).literals) == literals


def test_a_name_said_twice_is_one_value():
    reading = read("Who are Kyle's friends? List the names of the high schoolers Kyle likes.")
    assert reading.literals == (Literal("text", "Kyle"),)
    assert reading.owners == {"kyle"}


def test_the_template_masks_values_so_a_swap_leaves_it_unchanged():
    a = read("How many Toyota cars were sold in the last 30 days?")
    b = read("How many Ford cars were sold in the last 90 days?")
    assert a.template == b.template
    assert "toyota" not in a.template and "30" not in a.template


# --- adapting statements ----------------------------------------------------------------


def _adapt(sql: str, stored: str, asked: str) -> str:
    return adapt(sql, read(stored), read(asked)).sql


def test_a_named_value_is_replaced_in_an_equality_keeping_its_case():
    sql = "SELECT COUNT(*) FROM cars WHERE make = 'TOYOTA'"
    out = _adapt(sql, "How many Toyota cars?", "How many Ford cars?")
    assert out == "SELECT COUNT(*) FROM cars WHERE make = 'FORD'"


def test_a_like_pattern_keeps_its_wildcards():
    sql = "SELECT id FROM cars WHERE make ILIKE '%toyota%'"
    assert "'%ford%'" in _adapt(sql, "Which Toyota cars?", "Which Ford cars?")


def test_top_n_interval_and_threshold_numbers_are_replaced_where_they_belong():
    sql = (
        "SELECT c.country, SUM(t.amount) AS total FROM t JOIN c ON c.id = t.cid "
        "WHERE t.at >= CURRENT_DATE - INTERVAL '30 days' AND t.amount > 30 "
        "GROUP BY c.country ORDER BY total DESC LIMIT 5"
    )
    out = _adapt(
        sql,
        "Top 5 countries by amount in the past 30 days",
        "Top 3 countries by amount in the past 60 days",
    )
    assert "LIMIT 3" in out
    assert "INTERVAL '60 DAYS'" in out
    # "30 days" is a duration: the unrelated threshold 30 is left alone.
    assert "t.amount > 30" in out


def test_dates_and_years_move_with_their_half_open_bound():
    sql = "SELECT x FROM t WHERE d >= '2022-01-01' AND d < '2023-01-01'"
    out = _adapt(sql, "x in 2022", "x in 2020")
    assert "'2020-01-01'" in out and "'2021-01-01'" in out
    sql = "SELECT x FROM t WHERE d BETWEEN '2023-01-01' AND '2023-03-31 23:59:59'"
    out = _adapt(
        sql, "x between Jan 1, 2023 and Mar 31, 2023", "x between 2024-04-01 and 2024-06-30"
    )
    assert "'2024-04-01'" in out and "'2024-06-30 23:59:59'" in out


def test_an_unquoted_lowercase_value_is_swapped_when_the_statement_compares_it():
    sql = "SELECT COUNT(*) FROM patients WHERE gender = 'Female'"
    adapted = adapt(sql, read("How many female patients?"), read("How many male patients?"))
    assert adapted.sql.endswith("gender = 'Male'") and not adapted.paraphrase


def test_literals_are_replaced_as_nodes_never_spliced():
    sql = "SELECT name FROM t WHERE name = 'Acme'"
    out = _adapt(sql, "Who is Acme?", 'Who is "x\' OR 1=1 --"?')
    assert out == "SELECT name FROM t WHERE name = 'x'' OR 1=1 --'"


@pytest.mark.parametrize(
    ("sql", "stored", "asked", "why"),
    [
        # A different number of values: not the same question.
        ("SELECT 1 FROM t WHERE a = 'X'", "rows for X", "rows for X and Y", "literal_shape"),
        # The differing value is not in the statement: nothing to substitute.
        ("SELECT COUNT(*) FROM cars", "How many Toyota cars?", "How many Ford cars?",
         "value_not_in_sql"),
        # A duration became a count.
        ("SELECT 1 FROM t WHERE at > now() - INTERVAL '30 days'", "in the last 30 days",
         "in the last 60 orders", "unit"),
    ],
)  # fmt: skip
def test_what_cannot_be_adapted_is_refused(sql, stored, asked, why):
    with pytest.raises(NotAdaptable) as refused:
        adapt(sql, read(stored), read(asked))
    assert refused.value.why == why


def test_one_value_needing_two_replacements_is_a_conflict():
    sql = "SELECT 1 FROM t WHERE a = 5 ORDER BY b LIMIT 5"
    with pytest.raises(NotAdaptable) as refused:
        adapt(sql, read("top 5 with a of 5"), read("top 3 with a of 4"))
    assert refused.value.why == "conflict"


def test_word_agreement_separates_paraphrases_from_other_questions():
    asked = read("Which 5 countries have the highest total transaction amount?")
    paraphrase = read("What are the top 5 countries by total transaction amount?")
    other = read("How many customers signed up in each country?")
    assert agreement(asked, paraphrase) > agreement(asked, other)


# --- the reuse path with fakes -----------------------------------------------------------


class FakeStore:
    def __init__(self, pairs: list[NearPair]) -> None:
        self.pairs = pairs

    def known_empty(self, tenant_id: str, database: str) -> bool:
        return False

    async def survey(self, *args: Any) -> Survey:
        # The embedding path, as for a reworded question.
        return Survey(tuple(p.pair for p in self.pairs), (), complete=True)

    async def nearest(self, *args: Any, **kwargs: Any) -> list[NearPair]:
        return self.pairs

    async def vectors(self, tenant_id: str, pair_ids: list[str]) -> dict[str, tuple[str, Any]]:
        # stored vectors at each pair's similarity to FakeEmbedder's vector
        return {p.pair.pair_id: ("fake", _at_similarity(p.similarity)) for p in self.pairs
                if p.pair.pair_id in pair_ids}  # fmt: skip


def _at_similarity(similarity: float) -> np.ndarray:
    """A vector whose cosine similarity to FakeEmbedder's all-ones vector is ``similarity``."""
    along = np.ones(384) / np.sqrt(384)
    across = np.zeros(384)
    across[0] = 1.0
    across -= across.dot(along) * along
    across /= np.linalg.norm(across)
    vector: np.ndarray = (similarity * along + np.sqrt(1 - similarity**2) * across).astype(
        np.float32
    )
    return vector


class FakeEmbedder:
    def __init__(self, *, down: bool = False) -> None:
        self.down = down

    async def embed(self, text: str) -> tuple[Any, str]:
        if self.down:
            raise EmbeddingUnavailable("UNAVAILABLE")
        return np.ones(384, dtype=np.float32), "fake"


class RecordingRunner:
    """Records what would have reached the database."""

    def __init__(self) -> None:
        self.ran: list[str] = []

    async def run(self, pool: Any, verdict: Any, limits: Any, *, database: str) -> Any:
        self.ran.append(verdict.normalized_sql)
        return SimpleNamespace(rows=[], columns=[], fingerprint="f", duration_s=0.0)


def _near(question: str, sql: str, similarity: float = 0.97) -> NearPair:
    pair = ConfirmedPair("6f1c1a52-1b51-4d5e-9d2e-1a1a1a1a1a1a", "warehouse", question, sql,
                         PairSource.TAUGHT, datetime.now(UTC))  # fmt: skip
    return NearPair(pair, similarity)


def _memory(pairs: list[NearPair], runner: RecordingRunner, **kw: Any) -> AnswerMemory:
    return AnswerMemory(
        FakeStore(pairs),  # type: ignore[arg-type]
        kw.pop("embedder", FakeEmbedder()),
        gate=SqlGate(),
        runner=runner,  # type: ignore[arg-type]
        settings=MemorySettings(**kw),
    )


class StoredEverywhere:
    """A pool whose every existence probe finds the value (the probe itself is exercised
    against the real database in the contract tests)."""

    def __init__(self) -> None:
        self.probes: list[tuple[Any, ...]] = []

    @contextlib.asynccontextmanager
    async def connection(self) -> AsyncIterator[StoredEverywhere]:
        yield self

    async def execute(self, statement: Any, params: tuple[Any, ...]) -> StoredEverywhere:
        self.probes.append(params)
        return self

    async def fetchone(self) -> tuple[int]:
        return (1,)


TARGET: Any = SimpleNamespace(name="warehouse", pool=StoredEverywhere())
LIMITS = Limits(max_rows=50, statement_timeout_s=5.0, max_result_bytes=1_000_000)


async def test_a_hit_runs_the_adapted_statement_and_names_the_pair(catalog: Catalog):
    runner = RecordingRunner()
    memory = _memory(
        [_near("How many companies are in Germany?",
               "SELECT count(*) FROM companies WHERE country = 'Germany'")], runner,
    )  # fmt: skip
    result, _ = await memory.reuse("acme", TARGET, catalog, "How many companies are in France?",
                                LIMITS)  # fmt: skip
    assert result is not None and result.reused is not None
    assert result.reused.substitutions == 1
    assert runner.ran == [result.answer.verdict.normalized_sql]  # type: ignore[union-attr]
    assert "'France'" in runner.ran[0]


async def test_a_pair_whose_adapted_statement_fails_the_gate_is_never_executed(catalog: Catalog):
    runner = RecordingRunner()
    # The pair was taught when the table existed; the catalog no longer has it.
    memory = _memory(
        [_near("How many widgets are in Germany?",
               "SELECT count(*) FROM retired_widgets WHERE country = 'Germany'")], runner,
    )  # fmt: skip
    result, _ = await memory.reuse("acme", TARGET, catalog, "How many widgets are in France?",
                                LIMITS)  # fmt: skip
    assert result is None
    assert runner.ran == []


async def test_a_paraphrase_that_swaps_a_schema_word_is_a_miss(catalog: Catalog):
    runner = RecordingRunner()
    memory = _memory(
        [_near("How many companies are there in each industry?",
               "SELECT industry, count(*) FROM companies GROUP BY industry")], runner,
    )  # fmt: skip
    assert "segment" in schema_words(catalog)
    result, _ = await memory.reuse("acme", TARGET, catalog,
                                "How many companies are there in each segment?",
                                LIMITS)  # fmt: skip
    assert result is None and runner.ran == []


async def test_below_the_paraphrase_similarity_a_reworded_question_is_a_miss(catalog: Catalog):
    runner = RecordingRunner()
    floor = MemorySettings().paraphrase_similarity
    stored = _near("How many companies are in Germany?",
                   "SELECT count(*) FROM companies WHERE country = 'Germany'",
                   floor - 0.02)  # fmt: skip
    asked = "What number of companies do we have located in Germany?"
    strict, near = await _memory(
        [stored], runner, min_similarity=floor - 0.1, min_agreement=0.0
    ).reuse("acme", TARGET, catalog, asked, LIMITS)
    assert strict is None
    assert [n.pair.pair_id for n in near] == [stored.pair.pair_id]  # examples for a model
    lenient = _memory([stored], runner, min_similarity=floor - 0.1,
                      paraphrase_similarity=floor - 0.05, min_agreement=0.0)  # fmt: skip
    loose, _ = await lenient.reuse("acme", TARGET, catalog, asked, LIMITS)
    assert loose is not None


async def test_the_embedding_service_down_is_a_miss_not_an_error(catalog: Catalog):
    runner = RecordingRunner()
    memory = _memory(
        [_near("How many companies are in Germany?",
               "SELECT count(*) FROM companies WHERE country = 'Germany'")], runner,
        embedder=FakeEmbedder(down=True),
    )  # fmt: skip
    result, _ = await memory.reuse("acme", TARGET, catalog, "How many companies are in France?",
                                LIMITS)  # fmt: skip
    assert result is None and runner.ran == []


class ExactStore(FakeStore):
    async def survey(self, *args: Any) -> Survey:
        pairs = tuple(p.pair for p in self.pairs)
        return Survey(pairs, pairs, complete=True)


async def test_a_value_swap_of_a_confirmed_template_needs_no_embedding(catalog: Catalog):
    runner = RecordingRunner()
    memory = AnswerMemory(
        ExactStore([_near("How many companies are in Germany?",
                          "SELECT count(*) FROM companies WHERE country = 'Germany'")]),  # type: ignore[arg-type]
        FakeEmbedder(down=True),
        gate=SqlGate(),
        runner=runner,  # type: ignore[arg-type]
    )  # fmt: skip
    result, _ = await memory.reuse(
        "acme", TARGET, catalog, "How many companies are in Spain?", LIMITS
    )
    assert result is not None and result.reused is not None
    assert result.reused.similarity == 1.0
    assert "'Spain'" in runner.ran[0]


class CountingEmbedder(FakeEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    async def embed(self, text: str) -> tuple[Any, str]:
        self.calls += 1
        return await super().embed(text)


GERMANY = _near("How many companies are in Germany?",
                "SELECT count(*) FROM companies WHERE country = 'Germany'")  # fmt: skip


@pytest.mark.parametrize(("few_shot", "embeds"), [(False, 0), (True, 1)])
async def test_a_question_no_pair_could_answer_skips_the_embedding_unless_a_model_wants_examples(
    catalog: Catalog, few_shot: bool, embeds: int
):
    embedder = CountingEmbedder()
    memory = AnswerMemory(
        FakeStore([GERMANY]),  # type: ignore[arg-type]
        embedder, gate=SqlGate(), runner=RecordingRunner(),  # type: ignore[arg-type]
        few_shot=few_shot,
    )  # fmt: skip
    result, _ = await memory.reuse(
        "acme", TARGET, catalog, "Which deals closed last quarter by owner?", LIMITS
    )
    assert result is None and embedder.calls == embeds


@pytest.mark.parametrize(
    ("stored", "asked", "value"),
    [
        (GERMANY, "How many companies are located in France?", "'France'"),
        # Few words in common: the lowercase value the statement compares is the swap.
        (_near("How many enterprise companies?",
               "SELECT count(*) FROM companies WHERE segment = 'enterprise'"),
         "How many smb companies?", "'smb'"),
    ],
)  # fmt: skip
async def test_a_question_a_pair_could_answer_is_still_embedded_and_reused(
    catalog: Catalog, stored: NearPair, asked: str, value: str
):
    embedder = CountingEmbedder()
    runner = RecordingRunner()
    memory = AnswerMemory(
        FakeStore([stored]),  # type: ignore[arg-type]
        embedder, gate=SqlGate(), runner=runner,  # type: ignore[arg-type]
        few_shot=False,
    )  # fmt: skip
    result, _ = await memory.reuse("acme", TARGET, catalog, asked, LIMITS)
    assert embedder.calls == 1 and result is not None and value in runner.ran[0]


def test_the_word_screen_never_drops_a_pair_the_reuse_checks_accept(catalog: Catalog):
    """Over the memory eval's variants (each taught, each asked against every other of
    its base), every pair :meth:`_adapted` accepts at full similarity passes the screen
    that decides whether to embed; most other bases' pairs do not."""
    raw = json.loads(VARIANTS.read_text(encoding="utf-8"))
    items = [i for kind in ("value_swaps", "paraphrases") for i in raw[kind]]
    memory = _memory([], RecordingRunner())
    accepted = screened_out = 0
    for stored in items:
        pair = _near(stored["question"], stored["gold_sql"], 1.0)
        for asked in items:
            if asked is stored:
                continue
            reading = read(asked["question"], memory._values(catalog))
            could = memory._could_answer(pair.pair, reading, catalog)
            if asked["base"] != stored["base"]:
                screened_out += not could
                continue
            if isinstance(memory._adapted(pair, reading, catalog), Candidate):
                accepted += 1
                assert could, (stored["id"], asked["id"])
    others = sum(1 for s in items for a in items if s["base"] != a["base"])
    assert accepted > 50
    assert screened_out > 0.9 * others


class OtherModelStore(FakeStore):
    async def vectors(self, tenant_id: str, pair_ids: list[str]) -> dict[str, tuple[str, Any]]:
        found = await super().vectors(tenant_id, pair_ids)
        return {key: ("another-model", vector) for key, (_, vector) in found.items()}


BELOW_FLOOR = MemorySettings().min_similarity - 0.01


@pytest.mark.parametrize(
    ("store", "embedder"),
    [
        (
            FakeStore([_near(GERMANY.pair.question, GERMANY.pair.sql, BELOW_FLOOR)]),
            CountingEmbedder(),
        ),
        (OtherModelStore([GERMANY]), CountingEmbedder()),
        (FakeStore([GERMANY]), FakeEmbedder(down=True)),
    ],
    ids=["below-min-similarity", "vector-of-another-model", "embedding-down"],
)
async def test_a_word_candidate_is_reused_only_when_its_stored_vector_agrees(
    catalog: Catalog, store: FakeStore, embedder: FakeEmbedder
):
    runner = RecordingRunner()
    memory = AnswerMemory(
        store,  # type: ignore[arg-type]
        embedder, gate=SqlGate(), runner=runner,  # type: ignore[arg-type]
        few_shot=False,
    )  # fmt: skip
    result, near = await memory.reuse(
        "acme", TARGET, catalog, "How many companies are located in France?", LIMITS
    )
    assert result is None and near == () and runner.ran == []


async def test_a_reworded_candidate_failing_the_gate_is_gated_but_never_run(catalog: Catalog):
    runner = RecordingRunner()
    stored = _near("How many widgets are there in Germany?",
                   "SELECT count(*) FROM retired_widgets WHERE country = 'Germany'")  # fmt: skip
    memory = AnswerMemory(
        FakeStore([stored]),  # type: ignore[arg-type]
        CountingEmbedder(), gate=SqlGate(), runner=runner,  # type: ignore[arg-type]
        few_shot=False,
    )  # fmt: skip
    result, _ = await memory.reuse(
        "acme", TARGET, catalog, "How many widgets are located in France?", LIMITS
    )
    assert result is None and runner.ran == []


def test_values_that_trade_places_are_both_substituted():
    """Codes are not read as names; a sequence diff saw "from JFK to ORD" / "from ORD to
    JFK" as a deletion and an insertion and reused the taught answer unchanged."""
    sql = "SELECT count(*) FROM flights WHERE sourceairport = 'JFK' AND destairport = 'ORD'"
    adapted = adapt(
        sql,
        read("How many flights go from JFK to ORD?"),
        read("How many flights go from ORD to JFK?"),
    )
    assert adapted.substitutions == 2 and not adapted.paraphrase
    assert "sourceairport = 'ORD' AND destairport = 'JFK'" in adapted.sql


def test_roles_reversed_by_the_words_around_the_values_are_refused():
    sql = "SELECT count(*) FROM flights WHERE src = 'Aberdeen' AND dst = 'Ashley'"
    with pytest.raises(NotAdaptable) as refused:
        adapt(sql, read("How many flights from Aberdeen to Ashley?"),
              read("How many flights to Aberdeen from Ashley?"))  # fmt: skip
    assert refused.value.why == "reordered"


def test_a_reworded_question_is_not_read_as_an_exchange():
    """Words moved in a cycle (not traded pairwise) are a paraphrase, left to agreement."""
    sql = "SELECT count(*) FROM patients WHERE sex = 'female'"
    adapted = adapt(
        sql,
        read("How many female patients are there?"),
        read("How many patients are female there?"),
    )
    assert adapted.sql == sql and adapted.substitutions == 0


def test_a_value_said_as_an_owner_in_one_question_only_is_another_role():
    kyles = read("Show the names of all of the high schooler Kyle's friends.")
    befriended = read("Show the names of all of the high schoolers who have Kyle as a friend.")
    assert kyles.owners == {"kyle"} and not befriended.owners
    assert roles_differ(kyles, befriended)
    assert not roles_differ(kyles, read("Show the names of the high schooler Kyle\u2019s friends."))


def test_measures_read_sums_averages_and_counts():
    assert measures(read("What is the total amount and the number of orders?")) == {"sum", "count"}
    assert measures(read("What is the average amount?")) == {"avg"}
    assert measures(read("What is the total number of staff?")) == {"count"}
    assert measures(read("How many orders?")) == measures(read("Count the orders."))


def test_a_differing_word_inside_a_name_without_separators_names_the_schema():
    schema = {"sbtxcommission", "sender", "receiver", "type"}
    assert names_schema({"commission"}, schema)
    assert names_schema({"received"}, schema) and names_schema({"send"}, schema)
    assert not names_schema({"give", "show"}, schema)


def test_an_adaptation_says_which_values_it_replaced():
    stored, asked = read("flights from 'JFK' to 'ORD'"), read("flights from 'ORD' to 'JFK'")
    adapted = adapt("SELECT count(*) FROM f WHERE src = 'JFK' AND dst = 'ORD'", stored, asked)
    assert adapted.replaced == (("JFK", "ORD"), ("ORD", "JFK"))
    assert "src = 'ORD' AND dst = 'JFK'" in adapted.sql


# --- reworded questions: what makes two questions the same one ---------------------------


def test_inflections_of_one_word_compare_as_one():
    assert stem("earned") == stem("earnings") == stem("earning") == "earn"
    assert lemma("running") == "run" and lemma("planning") == "plan" and lemma("opening") == "open"


def test_a_capitalised_word_naming_the_schema_is_no_value(catalog: Catalog):
    question = 'How many opportunities does Company "Acme" have?'
    assert len(read(question).literals) == 2  # without the catalog: a name, then a value
    assert read(question, StoredValues.of(catalog)).literals == (Literal("text", "Acme"),)


async def _reused(catalog: Catalog, taught: tuple[str, str], asked: str, **kw: Any) -> bool:
    runner = RecordingRunner()
    result, _ = await _memory([_near(*taught)], runner, **kw).reuse(
        "acme", TARGET, catalog, asked, LIMITS
    )
    return result is not None


async def test_a_number_does_not_stand_for_the_column_it_was_compared_with(catalog: Catalog):
    """ "more than 50000 opportunities" counts opportunities; the taught question compared
    50000 with their amount. A text value names its column ("in Germany" is the country)."""
    sql = ("SELECT DISTINCT c.name FROM companies c JOIN opportunities o "
           "ON o.company_id = c.company_id WHERE o.amount > 50000")  # fmt: skip
    taught = ("Which companies have opportunities with an amount above 50000?", sql)
    assert not await _reused(catalog, taught, "Which companies have above 50000 opportunities?")
    by_country = ("How many companies are there whose country is Germany?",
                  "SELECT count(*) FROM companies WHERE country = 'Germany'")  # fmt: skip
    assert await _reused(catalog, by_country, "How many companies are there in Germany?")


async def test_opposite_ends_are_another_question(catalog: Catalog):
    taught = ("What is the minimum amount of all opportunities?",
              "SELECT min(amount) FROM opportunities")  # fmt: skip
    assert await _reused(catalog, taught, "What is the lowest amount of all opportunities?")
    assert not await _reused(catalog, taught, "What is the highest amount of all opportunities?")
    more = ("How many companies have more than 100 employees?",
            "SELECT count(*) FROM companies WHERE employee_count > 100")  # fmt: skip
    assert await _reused(catalog, more, "How many companies have above 100 employees?")
    assert not await _reused(catalog, more, "How many companies have fewer than 100 employees?")


async def test_a_word_exchanged_for_another_is_another_question(catalog: Catalog):
    """Beyond the question's form ("give the number of") and its values, a word said in
    place of another ("departed from" for "moved to") asks something else, however
    similar the rest; checked with the word-agreement floor off."""
    taught = ("How many companies moved to Germany?",
              "SELECT count(*) FROM companies WHERE country = 'Germany'")  # fmt: skip
    assert not await _reused(catalog, taught, "How many companies departed from Germany?",
                             min_agreement=0.0)  # fmt: skip
    assert await _reused(catalog, taught, "Give the number of companies that moved to Germany.",
                         min_agreement=0.0)  # fmt: skip


def test_a_reused_pair_is_named_only_to_whom_may_list_it():
    """An answer shows a pair's question and the values it held only to a principal who
    could list the pair (its teacher, or anyone for a service key's pair): another
    principal's pair answers with their statement but not their words, whose values may
    lie in rows outside the asker's filter."""
    import contextvars

    from services.common import Principal, current_principal
    from services.sql.memory._answers import may_name

    def pair(taught_by: str | None) -> ConfirmedPair:
        return ConfirmedPair("6f1c1a52-1b51-4d5e-9d2e-1a1a1a1a1a1a", "warehouse", "q", "s",
                             PairSource.TAUGHT, datetime.now(UTC), taught_by=taught_by)  # fmt: skip

    def as_(principal: Principal | None, taught_by: str | None) -> bool:
        def run() -> bool:
            current_principal.set(principal)
            return may_name(pair(taught_by))

        return contextvars.copy_context().run(run)

    alice = Principal.of("alice", ["sales"], {"region_id": "1"})
    assert as_(alice, "alice") and as_(alice, None)
    assert not as_(alice, "bob")
    assert as_(None, "bob")  # a service key reads the tenant's full view


async def test_a_model_is_given_as_examples_only_pairs_the_asker_may_be_shown(catalog: Catalog):
    """On a miss the nearest pairs are examples for a model, which may copy their words
    (a value only rows outside the asker's filter hold) into the statement or its
    interpretation: a principal is given only pairs they may list."""
    import asyncio

    from services.common import Principal, current_principal

    bobs = NearPair(replace(GERMANY.pair, taught_by="bob"), GERMANY.similarity)
    memory = AnswerMemory(
        FakeStore([bobs]),  # type: ignore[arg-type]
        CountingEmbedder(), gate=SqlGate(), runner=RecordingRunner(),  # type: ignore[arg-type]
        few_shot=True,
    )  # fmt: skip

    async def near_for(principal: Principal | None) -> tuple[NearPair, ...]:
        async def run() -> tuple[NearPair, ...]:
            current_principal.set(principal)
            _, near = await memory.reuse(
                "acme", TARGET, catalog, "Which deals closed last quarter by owner?", LIMITS
            )
            return near

        return await asyncio.create_task(run())

    assert await near_for(None) == (bobs,)  # the service key: every pair, as before
    assert await near_for(Principal.of("bob", ["sales"], {})) == (bobs,)
    assert await near_for(Principal.of("alice", ["sales"], {})) == ()
