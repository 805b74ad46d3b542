"""Catalog rendering, capping, pruning to a question, and the cache."""

from __future__ import annotations

import asyncio

import pytest

from services.common import Unavailable, deadline_scope
from services.sql import Catalog, CatalogCache, ColumnInfo, TableInfo, render
from services.sql.catalog._catalog import rank_tables, render_table
from services.sql.words._words import stem


def test_table_block_shows_keys_comments_and_values(catalog):
    block = render_table(catalog.table("opportunities"))
    lines = block.splitlines()
    assert lines[0].startswith("TABLE public.opportunities (~2900 rows): Sales opportunities")
    assert "  opportunity_id integer PK: Opportunity (deal) identifier." in lines
    assert any(
        line.startswith("  company_id integer NOT NULL -> public.companies(company_id)")
        for line in lines
    )
    stage = next(line for line in lines if line.startswith("  stage "))
    assert stage.endswith("[values: Closed Lost, Closed Won, Negotiation, Proposal, "
                          "Prospecting, Qualification]")  # fmt: skip


def test_full_catalog_fits_the_default_cap(catalog):
    rendered = render(catalog, max_chars=8000)
    assert not rendered.truncated
    assert len(rendered.text) <= 8000
    assert [t.name for t in rendered.tables] == [t.name for t in catalog.tables]
    assert rendered.omitted == ()


def test_pruned_to_the_question_with_foreign_key_neighbours(catalog):
    rendered = render(catalog, max_chars=2500, question="total amount of won deals by industry")
    names = [t.name for t in rendered.tables]
    assert "opportunities" in names and "companies" in names
    assert len(rendered.text) <= 2500
    assert set(rendered.omitted) == {t.qualified for t in catalog.tables} - {
        t.qualified for t in rendered.tables
    }
    assert not rendered.truncated


def test_without_a_question_an_oversized_catalog_is_cut_and_flagged(catalog):
    rendered = render(catalog, max_chars=1500)
    assert rendered.truncated
    assert len(rendered.text) <= 1500
    assert rendered.omitted


def test_a_single_table_larger_than_the_cap_is_cut(catalog):
    rendered = render(catalog, max_chars=200, tables=[catalog.table("opportunities")])
    assert rendered.truncated
    assert len(rendered.text) == 200
    assert [t.name for t in rendered.tables] == ["opportunities"]


def test_tables_filter_lists_the_rest_as_omitted(catalog):
    rendered = render(catalog, max_chars=8000, tables=[catalog.table("regions")])
    assert rendered.text.startswith("TABLE public.regions")
    assert "public.companies" in rendered.omitted
    assert not rendered.truncated


def test_ranking_uses_names_comments_and_sample_values(catalog):
    ranked = [t.name for t, score in rank_tables(catalog, "calls by region") if score > 0]
    assert ranked[0] in ("activities", "regions")
    assert {"activities", "regions"} <= set(ranked)
    healthcare = rank_tables(catalog, "healthcare accounts")[0][0]
    assert healthcare.name == "companies"


def test_stem_folds_plurals():
    assert [stem(w) for w in ("opportunities", "companies", "deals", "boxes", "class")] == [
        "opportunity", "company", "deal", "box", "class",
    ]  # fmt: skip


def test_lookup_by_bare_or_qualified_name(catalog):
    assert catalog.table("companies") is catalog.table("public.companies")
    assert catalog.table("nope") is None
    assert catalog.table("other.companies") is None
    twin = Catalog("w", (TableInfo("sales", "t"), TableInfo("public", "t")))
    assert [twin.table(n).schema for n in ("t", "sales.t")] == ["public", "sales"]  # type: ignore[union-attr]


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_cache_serves_at_once_and_reloads_only_a_changed_schema():
    clock, loads, shape = _Clock(), [], ["v1"]
    table = TableInfo("public", "t", columns=(ColumnInfo("a", "integer", False),))

    async def load() -> Catalog:
        loads.append(clock.now)
        if len(loads) == 3:
            raise OSError("database down")
        return Catalog("w", (table,))

    async def fingerprint() -> str:
        return shape[0]

    cache = CatalogCache(load, ttl_s=10, fingerprint=fingerprint, clock=clock)
    first = await cache.get()
    assert await cache.get() is first and loads == [0.0]
    clock.now = 11  # stale, schema unchanged: checked, not read again
    assert await cache.get() is first
    await _settle()
    assert loads == [0.0]
    shape[0] = "v2"  # a table was added: the next check reloads, in the background
    clock.now = 22
    assert await cache.get() is first  # the old catalog serves meanwhile
    await _settle()
    second = await cache.get()
    assert second is not first and loads == [0.0, 22.0]
    shape[0] = "v3"
    clock.now = 33
    assert await cache.get() is second
    await _settle()  # the reload failed: the cached catalog still serves
    assert await cache.get() is second and len(loads) == 3


async def test_cache_without_a_catalog_is_unavailable_and_loads_once_concurrently():
    calls = 0

    async def failing() -> Catalog:
        raise OSError("down")

    with pytest.raises(Unavailable) as err:
        await CatalogCache(failing, ttl_s=10).get()
    assert err.value.reason == "CATALOG_UNAVAILABLE"

    async def slow() -> Catalog:
        nonlocal calls
        calls += 1
        await asyncio.sleep(0.01)
        return Catalog("w", ())

    cache = CatalogCache(slow, ttl_s=10)
    results = await asyncio.gather(*(cache.get() for _ in range(5)))
    assert calls == 1 and len({id(r) for r in results}) == 1


async def test_a_question_waits_for_the_first_load_within_its_deadline_only():
    release = asyncio.Event()
    attempts = 0

    async def load() -> Catalog:
        nonlocal attempts
        attempts += 1
        await release.wait()
        return Catalog("w", ())

    cache = CatalogCache(load, ttl_s=10, database="big")
    cache.start()  # the service starts loading and reports SERVING at once
    with deadline_scope(1.2), pytest.raises(Unavailable) as err:
        await cache.get()  # 1 s of the deadline is kept for answering: waits 0.2 s
    assert err.value.reason == "CATALOG_LOADING" and "'big'" in err.value.message
    assert err.value.retry_after_s > 0
    with deadline_scope(30):
        waiting = asyncio.create_task(cache.get())
        await asyncio.sleep(0.05)
        release.set()
        assert (await waiting).database == "w"
    assert attempts == 1  # one load, however many waited for it


async def test_a_failed_first_load_is_tried_again_by_the_next_call():
    results: list[Exception | Catalog] = [OSError("down"), Catalog("w", ())]

    async def load() -> Catalog:
        found = results.pop(0)
        if isinstance(found, Exception):
            raise found
        return found

    cache = CatalogCache(load, ttl_s=10)
    cache.start()
    await _settle()
    assert cache.cached is None
    assert (await cache.get()).database == "w"


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)
