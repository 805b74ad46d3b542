"""Keys and joins a database does not declare, found in its data when the catalog loads:
a key per table, references named for their table and confirmed by their values, a
bridge table's pair, references no name points at (sparse keys only), shared values as
a last resort, a glossary's joins; and what the data refutes."""

from __future__ import annotations

from collections.abc import AsyncIterator

import psycopg
import pytest

from services.sql import introspect
from services.sql.catalog._catalog import Catalog, JoinOrigin
from services.sql.catalog._inference import infer_joins
from services.sql.catalog._joins import JoinGraph, describe, resolve_joins
from services.sql.definitions._glossary import JoinSpec
from services.sql.demo._warehouse import database_url

pytestmark = pytest.mark.integration

# A shop with no declared key at all.
SHOP = [
    "CREATE TABLE customer (customer_id int, name text, city text, status text)",
    "CREATE TABLE item (item_id int, label text)",
    "CREATE TABLE orders (order_id int, customer_id int, item_id int, city text, status text)",
    # a bridge: both columns are named for other tables; together they never repeat
    "CREATE TABLE item_tag (item_id int, customer_id int)",
    # named for no table: 'buyer_id' holds sparse customer ids, 'slot_id' small integers
    "CREATE TABLE review (review_id int, buyer_id int, slot_id int)",
    "CREATE TABLE maker (id int, name text)",
    "CREATE TABLE gadget (gadget_id int, maker int)",
    "INSERT INTO customer SELECT 1000 + 37 * g, 'c' || g, 'City ' || (g % 30), "
    "CASE WHEN g % 3 = 0 THEN 'inactive' ELSE 'active' END FROM generate_series(1, 50) g",
    "INSERT INTO item SELECT g, 'i' || g FROM generate_series(1, 5) g",
    # customer ids are real (one orphan: dirty data); item_id holds catalogue numbers
    # that are no keys of item at all
    "INSERT INTO orders SELECT g, CASE WHEN g = 7 THEN 999 ELSE 1000 + 37 * (1 + g % 50) END, "
    "1000 + g, 'City ' || (g % 25), CASE WHEN g % 4 = 0 THEN 'inactive' ELSE 'active' END "
    "FROM generate_series(1, 300) g",
    "INSERT INTO item_tag SELECT 1 + g % 5, 1000 + 37 * (1 + g % 50) FROM generate_series(1, 40) g",
    "INSERT INTO review SELECT g, 1000 + 37 * (1 + g % 50), 1 + g % 3 "
    "FROM generate_series(1, 60) g",
    "INSERT INTO maker SELECT g, 'm' || g FROM generate_series(1, 4) g",
    "INSERT INTO gadget SELECT g, 1 + g % 4 FROM generate_series(1, 20) g",
]


@pytest.fixture
async def shop(pg_url: str) -> AsyncIterator[psycopg.AsyncConnection[object]]:
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as admin:
        await admin.execute("DROP DATABASE IF EXISTS tandem_joins")
        await admin.execute("CREATE DATABASE tandem_joins")
    async with await psycopg.AsyncConnection.connect(
        database_url(pg_url, "tandem_joins"), autocommit=True
    ) as conn:
        for statement in SHOP:
            await conn.execute(statement)
        yield conn


def _joins(catalog: Catalog) -> dict[tuple[str, str, str], str]:
    assert catalog.joins is not None
    return {
        (j.child.split(".")[1], ",".join(j.child_columns), j.parent.split(".")[1]): j.evidence
        for j in catalog.joins
    }


async def test_keys_and_joins_come_from_names_and_values(shop) -> None:
    catalog = await infer_joins(shop, await introspect(shop, "shop"))
    keys = {t.name: t.primary_key for t in catalog.tables}
    assert keys["customer"] == ("customer_id",) and keys["item"] == ("item_id",)
    assert keys["maker"] == ("id",) and keys["gadget"] == ("gadget_id",)
    # a bridge table's key is its pair of references
    assert keys["item_tag"] == ("item_id", "customer_id")
    customer = catalog.table("customer")
    assert customer is not None and "never repeats in 50 rows" in customer.key_evidence
    joins = _joins(catalog)
    # named for the key, confirmed by the values (49 of 50: a few orphans are dirt)
    assert "50 of 51 distinct values" in joins[("orders", "customer_id", "customer")]
    # the name says item, the values say no: refuted
    assert ("orders", "item_id", "item") not in joins
    assert ("item_tag", "item_id", "item") in joins
    # a column named for the table's name ("maker"), values confirm
    assert joins[("gadget", "maker", "maker")].startswith("maker is the table's name")
    # named for nothing: sparse customer ids are evidence, small integers are not
    assert joins[("review", "buyer_id", "customer")].startswith("the only key holding them")
    assert not any(child == "review" and column == "slot_id" for child, column, _ in joins)
    # two text columns sharing values: a join of last resort
    assert joins[("orders", "city", "customer")].startswith("same name and shared values")
    # a handful of categories both tables sample (a status) is no reference: sharing
    # 'active' and 'inactive' joined users to coupons once
    assert not any(column == "status" for _, column, _ in joins)
    graph = JoinGraph(catalog)
    path = graph.path("public.orders", "public.customer")
    assert path is not None and [e.kind for e in path] == ["key"]
    lines = describe(catalog)
    assert "key customer(customer_id): inferred, customer_id is never null" in " ".join(lines)
    assert any(line.startswith("join public.orders.city -> public.customer.city (inferred, "
                               "shared values only") for line in lines)  # fmt: skip


async def test_declared_keys_win_and_the_glossary_adds_what_data_cannot(shop) -> None:
    await shop.execute("ALTER TABLE customer ADD PRIMARY KEY (customer_id)")
    await shop.execute("ALTER TABLE item ADD PRIMARY KEY (item_id)")
    await shop.execute(
        "ALTER TABLE item_tag ADD FOREIGN KEY (customer_id) REFERENCES customer (customer_id)"
    )
    catalog = await introspect(shop, "shop")
    specs = (
        JoinSpec("orders", ("item_id",), "item", ("item_id",)),  # the data would refute it
        JoinSpec("orders", ("nope",), "item", ("item_id",)),
        JoinSpec("orders", ("customer_id",), "missing", ("id",)),
    )
    declared, problems = resolve_joins(catalog, specs)
    assert problems == [
        "orders.nope -> item.item_id: no column 'orders.nope'",
        "orders.customer_id -> missing.id: no table 'missing'",
    ]
    checked = await infer_joins(shop, catalog, declared)
    joins = _joins(checked)
    assert joins[("orders", "item_id", "item")] == "declared in the glossary file"
    # a declared foreign key joins item_tag and customer: nothing inferred beside it
    assert ("item_tag", "customer_id", "customer") not in joins
    origins = {j.origin for j in checked.joins or ()}
    assert origins == {JoinOrigin.GLOSSARY, JoinOrigin.INFERRED}
    kinds = {(e.child, e.parent): e.kind for e in JoinGraph(checked).edges}
    assert kinds[("public.item_tag", "public.customer")] == "declared"
    assert kinds[("public.orders", "public.item")] == "glossary"


async def test_a_column_that_counts_is_no_reference_whatever_values_it_holds(pg_url) -> None:
    # every num_semesters (1..8) is a semester id; the name says it counts them
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as admin:
        await admin.execute("DROP DATABASE IF EXISTS tandem_measures")
        await admin.execute("CREATE DATABASE tandem_measures")
    async with await psycopg.AsyncConnection.connect(
        database_url(pg_url, "tandem_measures"), autocommit=True
    ) as conn:
        for statement in (
            "CREATE TABLE semester (semester_id int PRIMARY KEY, semester_name text)",
            "CREATE TABLE course (course_id int PRIMARY KEY, semester_id int, "
            "num_semesters int, title text)",
            "INSERT INTO semester SELECT g, 'S' || g FROM generate_series(1, 8) g",
            "INSERT INTO course SELECT g, 1 + g % 8, 1 + g % 8, 'c' || g "
            "FROM generate_series(1, 40) g",
        ):
            await conn.execute(statement)
        catalog = await infer_joins(conn, await introspect(conn, "measures"))
    joins = _joins(catalog)
    assert ("course", "semester_id", "semester") in joins  # the reference
    assert not any(j[1] == "num_semesters" for j in joins)  # the count


async def test_a_reference_of_two_columns_is_inferred_from_the_pairs_values(pg_url: str) -> None:
    """``salaries.team_id`` shares its values with ``teams.team_id``, which repeats (a row
    per team and season): with ``year_id``, held by both, the pair never repeats in
    ``teams`` and every pair of ``salaries`` is found there, so the reference is the pair
    (a join on ``team_id`` alone would pair a salary with every season of its team). The
    catalog also reads the span of the integer year columns, and of nothing else."""
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as admin:
        await admin.execute("DROP DATABASE IF EXISTS tandem_seasons")
        await admin.execute("CREATE DATABASE tandem_seasons")
    async with await psycopg.AsyncConnection.connect(
        database_url(pg_url, "tandem_seasons"), autocommit=True
    ) as conn:
        for statement in (
            "CREATE TABLE teams (year_id int, team_id text, name text, w int)",
            "CREATE TABLE salaries (year_id int, team_id text, player_id text, salary int)",
            "INSERT INTO teams SELECT y, 'T' || t, 'Team ' || t, 60 + t "
            "FROM generate_series(2014, 2016) y, generate_series(1, 30) t",
            "INSERT INTO salaries SELECT 2014 + g % 3, 'T' || (1 + g % 30), 'p' || g, 1000 * g "
            "FROM generate_series(1, 400) g",
        ):
            await conn.execute(statement)
        catalog = await infer_joins(conn, await introspect(conn, "seasons"))
    joins = _joins(catalog)
    pair = [j for j in joins if "," in j[1]]
    assert pair == [("salaries", "year_id,team_id", "teams")], joins
    assert not any(j[1] == "team_id" and {j[0], j[2]} == {"salaries", "teams"} for j in joins)
    teams = catalog.table("public.teams")
    assert teams is not None
    spans = {c.name: c.span for c in teams.columns}
    assert spans == {"year_id": (2014, 2016), "team_id": None, "name": None, "w": None}


async def test_shared_values_that_never_repeat_on_one_side_are_a_reference(pg_url: str) -> None:
    """``car_names.model`` (a row per car) shares its values with ``model_list.model`` (a
    row per model, never repeating) and declares nothing: the car rows refer to the
    models, so the join is a reference with ``model_list`` as the parent — a key edge, as
    a declared foreign key to a UNIQUE column — not shared values in either direction.
    Two columns that both repeat (a city) stay shared values."""
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as admin:
        await admin.execute("DROP DATABASE IF EXISTS tandem_models")
        await admin.execute("CREATE DATABASE tandem_models")
    async with await psycopg.AsyncConnection.connect(
        database_url(pg_url, "tandem_models"), autocommit=True
    ) as conn:
        for statement in (
            # car_names sorts first: shared values make model_list, the later one, the child
            "CREATE TABLE model_list (modelid int, maker int, model text, city text)",
            "CREATE TABLE car_names (makeid int, model text, make text, city text)",
            "INSERT INTO model_list SELECT g, 1 + g % 5, 'model' || g, 'City ' || (g % 25) "
            "FROM generate_series(1, 36) g",
            # every car is of a listed model, most models have several cars; a few models
            # have none (the reverse containment is below 90 %)
            "INSERT INTO car_names SELECT g, 'model' || (1 + g % 30), 'car ' || g, "
            "'City ' || (g % 30) FROM generate_series(1, 200) g",
        ):
            await conn.execute(statement)
        catalog = await infer_joins(conn, await introspect(conn, "models"))
    joins = _joins(catalog)
    assert joins[("car_names", "model", "model_list")].startswith(
        "model never repeats in model_list"
    ), joins
    assert ("model_list", "model", "car_names") not in joins
    kinds = {(e.child, e.child_column, e.parent): e.kind for e in JoinGraph(catalog).edges}
    assert kinds[("public.car_names", "model", "public.model_list")] == "key"
    # both repeat: shared values, a join of last resort
    assert kinds[("public.model_list", "city", "public.car_names")] == "overlap"


async def test_codes_held_by_one_text_key_are_references_to_it(pg_url: str) -> None:
    """``flights.origin`` and ``flights.dest`` name no table, but every code they hold is
    an ``airports.faa`` (a text key): each is a reference to airports, both of them (one
    for each direction). A code held by two tables' keys says nothing (``gate`` codes
    that are also terminal codes), and neither does one held by no key (``runway``)."""
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as admin:
        await admin.execute("DROP DATABASE IF EXISTS tandem_codes")
        await admin.execute("CREATE DATABASE tandem_codes")
    async with await psycopg.AsyncConnection.connect(
        database_url(pg_url, "tandem_codes"), autocommit=True
    ) as conn:
        for statement in (
            "CREATE TABLE airports (faa text, name text)",
            "CREATE TABLE terminals (code text, label text)",
            "CREATE TABLE flights (flight_id int, origin text, dest text, gate text, runway text)",
            "INSERT INTO airports SELECT 'A' || g, 'Airport ' || g FROM generate_series(1, 60) g",
            "INSERT INTO airports SELECT 'G' || g, 'Field ' || g FROM generate_series(1, 9) g",
            "INSERT INTO terminals SELECT 'G' || g, 'Terminal ' || g FROM generate_series(1, 9) g",
            "INSERT INTO flights SELECT g, 'A' || (1 + g % 3), 'A' || (4 + g % 50), "
            "'G' || (1 + g % 9), 'R' || (g % 4) FROM generate_series(1, 400) g",
        ):
            await conn.execute(statement)
        catalog = await infer_joins(conn, await introspect(conn, "codes"))
    joins = _joins(catalog)
    assert joins[("flights", "origin", "airports")].startswith("the only key holding them")
    assert joins[("flights", "dest", "airports")].startswith("the only key holding them")
    assert not any(j[1] in ("gate", "runway") for j in joins), joins


async def test_a_partial_parent_list_is_still_the_key_its_rows_are_reached_by(
    pg_url: str,
) -> None:
    """``flights.tailnum`` names the key ``planes.tailnum``, but the plane list lacks a
    fifth of the tail numbers flown (below the 90 % a reference needs). Every plane listed
    is flown and none repeats: the list is partial, the reference real, so a plane's
    flights are reached through it. A look-alike whose own values are mostly unreferenced
    (``hangars.tailnum``: a third of its rows name a flown tail) stays refuted."""
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as admin:
        await admin.execute("DROP DATABASE IF EXISTS tandem_tails")
        await admin.execute("CREATE DATABASE tandem_tails")
    async with await psycopg.AsyncConnection.connect(
        database_url(pg_url, "tandem_tails"), autocommit=True
    ) as conn:
        for statement in (
            "CREATE TABLE planes (tailnum text PRIMARY KEY, seats int)",
            "CREATE TABLE hangars (tailnum text PRIMARY KEY, bay int)",
            "CREATE TABLE flights (flight_id int PRIMARY KEY, tailnum text, delay int)",
            # 40 planes listed, 10 more flown that the list lacks (80 % contained)
            "INSERT INTO planes SELECT 'N' || g, 50 + g FROM generate_series(1, 40) g",
            "INSERT INTO flights SELECT g, 'N' || (1 + g % 50), g % 7 "
            "FROM generate_series(1, 400) g",
            # 90 hangar rows: 40 of the flown tails and 50 tails nobody flew
            "INSERT INTO hangars SELECT 'N' || g, g FROM generate_series(11, 100) g",
        ):
            await conn.execute(statement)
        catalog = await infer_joins(conn, await introspect(conn, "tails"))
    joins = _joins(catalog)
    assert "40 of 50 distinct values found" in joins[("flights", "tailnum", "planes")], joins
    assert ("flights", "tailnum", "hangars") not in joins, joins
