"""The SqlService servicer (protobuf <-> engine) and its server bootstrap."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from typing import Any

import grpc

from services.common import (
    GrpcServer,
    ServerSettings,
    Telemetry,
    TelemetrySettings,
    Trust,
    Unavailable,
    configure_logging,
    create_channel,
    embedded_server_url,
    serve,
)
from services.sql import _convert as convert
from services.sql._engine import EngineLimits, SqlEngine
from services.sql._settings import DEFAULT_PORT, DEFAULT_TARGET, DEMO_TENANT, SqlSettings
from services.sql.ask import AskPipeline, OfflineGenerator, SqlGenerator, generator_from_env
from services.sql.demo import demo_glossary, ensure_warehouse, reader_url
from services.sql.demo.data import ANCHOR_DATE
from services.sql.gate import SqlGate, StatementRunner
from services.sql.intents import intent_from_pb
from services.sql.linker import PhraseEmbedder
from services.sql.memory import (
    AnswerMemory,
    GrpcQuestionEmbedder,
    MemorySettings,
    MemoryStore,
    QuestionEmbedder,
    open_memory,
)
from services.sql.targets import TargetConfig, TargetRegistry, open_target
from services.sql.verify import StatementChecker
from tandem.v1 import sql_service_pb2 as pb
from tandem.v1 import sql_service_pb2_grpc as pb_grpc

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["SqlService"].full_name
_log = logging.getLogger("tandem.sql")


@dataclass(frozen=True)
class SqlDeps:
    """What the servicer needs: the engine over the opened target databases."""

    engine: SqlEngine
    targets: TargetRegistry

    async def close(self) -> None:
        await self.targets.close()
        if self.engine.memory is not None:
            await self.engine.memory.store.close()


class SqlServicer(pb_grpc.SqlServiceServicer):
    """Thin: converts protobuf to plain values and back, delegates to the engine.

    The server binds before the databases are reached (health answers NOT_SERVING
    meanwhile), so the engine arrives through ``attach``; until then calls get
    UNAVAILABLE.
    """

    def __init__(self, deps: SqlDeps | None = None) -> None:
        self._deps = deps

    def attach(self, deps: SqlDeps) -> None:
        self._deps = deps

    def _engine(self) -> SqlEngine:
        if self._deps is None:
            raise Unavailable("the SQL service is starting", reason="CATALOG_UNAVAILABLE")
        return self._deps.engine

    async def AskQuestion(
        self, request: pb.AskQuestionRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.AskQuestionResponse:
        result = await self._engine().ask(
            request.tenant_id,
            request.database,
            request.question,
            max_rows=request.max_rows,
            instructions=request.instructions,
            prior=convert.prior_from_pb(request) if request.HasField("prior") else None,
        )
        return convert.ask_response(result)

    async def ValidateSql(
        self, request: pb.ValidateSqlRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.ValidateSqlResponse:
        verdict = await self._engine().validate(request.tenant_id, request.database, request.sql)
        return convert.validate_response(verdict)

    async def ExecuteSql(
        self, request: pb.ExecuteSqlRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.ExecuteSqlResponse:
        executed = await self._engine().execute(
            request.tenant_id,
            request.database,
            request.sql,
            max_rows=request.max_rows,
            statement_timeout_s=convert.seconds(request.statement_timeout),
        )
        return pb.ExecuteSqlResponse(result=convert.sql_result(executed))

    async def RunIntent(
        self, request: pb.RunIntentRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.RunIntentResponse:
        engine = self._engine()
        engine.check_tenant(request.tenant_id)
        executed = await engine.run_intent(
            request.tenant_id,
            request.database,
            intent_from_pb(request.intent),
            max_rows=request.max_rows,
        )
        return pb.RunIntentResponse(result=convert.sql_result(executed))

    async def DescribeSchema(
        self, request: pb.DescribeSchemaRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.DescribeSchemaResponse:
        described = await self._engine().describe(
            request.tenant_id,
            request.database,
            question=request.question,
            max_chars=request.max_chars,
            tables=list(request.tables),
        )
        return convert.describe_response(described)

    async def TeachSql(
        self, request: pb.TeachSqlRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.TeachSqlResponse:
        pair = await self._engine().teach(
            request.tenant_id, request.database, request.question, request.sql
        )
        return pb.TeachSqlResponse(pair=convert.confirmed_pair(pair))

    async def ListConfirmedPairs(
        self, request: pb.ListConfirmedPairsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.ListConfirmedPairsResponse:
        pairs, token = await self._engine().list_pairs(
            request.tenant_id,
            request.database,
            page_size=request.page_size,
            page_token=request.page_token,
        )
        return pb.ListConfirmedPairsResponse(
            pairs=[convert.confirmed_pair(p) for p in pairs], next_page_token=token
        )

    async def DeleteConfirmedPair(
        self, request: pb.DeleteConfirmedPairRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.DeleteConfirmedPairResponse:
        deleted = await self._engine().delete_pair(
            request.tenant_id, request.pair_id, allow_missing=request.allow_missing
        )
        return pb.DeleteConfirmedPairResponse(deleted=deleted)

    async def SubmitFeedback(
        self, request: pb.SubmitFeedbackRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.SubmitFeedbackResponse:
        stored = await self._engine().feedback(
            request.tenant_id,
            request.answer_id,
            request.rating,
            corrected_sql=request.corrected_sql,
            note=request.note,
        )
        response = pb.SubmitFeedbackResponse(feedback_id=stored.feedback_id)
        if stored.pair is not None:
            response.pair.CopyFrom(convert.confirmed_pair(stored.pair))
        return response


async def create_server(
    settings: ServerSettings,
    telemetry: Telemetry,
    deps: SqlDeps | None = None,
    *,
    trust: Trust | None = None,
) -> tuple[GrpcServer, SqlServicer]:
    """Build and start the server NOT_SERVING; ``ready`` flips it once the engine is up."""
    server = GrpcServer(settings, telemetry, trust=trust)
    servicer = SqlServicer(deps)
    server.add_service(SERVICE_NAME, pb_grpc.add_SqlServiceServicer_to_server, servicer)
    await server.start()
    return server, servicer


async def ready(server: GrpcServer, servicer: SqlServicer, deps: SqlDeps) -> None:
    """Attach the engine, then report SERVING."""
    servicer.attach(deps)
    await server.set_serving(True)
    _log.info("ready", extra={"fields": {"databases": deps.targets.names}})


def engine_limits(settings: SqlSettings) -> EngineLimits:
    return EngineLimits(
        default_max_rows=settings.default_max_rows,
        max_rows=settings.max_rows,
        statement_timeout_s=settings.statement_timeout_s,
        max_statement_timeout_s=settings.max_statement_timeout_s,
        client_timeout_grace_s=settings.client_timeout_grace_s,
        max_result_bytes=settings.max_result_bytes,
        work_mem_kb=settings.work_mem_kb,
        max_sql_chars=settings.max_sql_chars,
        max_question_chars=settings.max_question_chars,
        max_instructions_chars=settings.max_instructions_chars,
        catalog_max_chars=settings.catalog_max_chars,
    )


async def warehouse_url(settings: SqlSettings) -> str:
    """The default target's read-only URL: WAREHOUSE_DATABASE_URL, or the demo warehouse
    in the embedded server (or DATABASE_URL's server), set up on the way when allowed."""
    if settings.warehouse_url:
        return settings.warehouse_url
    admin: str
    if settings.admin_url:
        admin = settings.admin_url
    else:
        admin = await asyncio.to_thread(embedded_server_url, settings.data_dir, "postgres")
    if not settings.setup_warehouse:
        return reader_url(admin, settings.warehouse_database, settings.reader_role)
    warehouse = await ensure_warehouse(
        admin,
        database=settings.warehouse_database,
        reader_role=settings.reader_role,
        seed=settings.demo_seed,
    )
    return warehouse.reader_url


def serves_demo_warehouse(settings: SqlSettings) -> bool:
    """Whether the ``warehouse`` target is the demo one this service sets up (or expects)."""
    return (
        settings.demo_warehouse
        and not settings.warehouse_url
        and DEFAULT_TARGET not in dict(settings.databases)
    )


def target_configs(
    settings: SqlSettings, warehouse: str | None, *, demo: bool = False
) -> list[TargetConfig]:
    """Every configured database: SQL_DATABASES, plus ``warehouse`` when given (``demo``:
    it is the demo warehouse, which serves tenant ``demo`` unless configured otherwise)."""
    urls = dict(settings.databases)
    if warehouse is not None and (settings.warehouse_url or DEFAULT_TARGET not in urls):
        urls[DEFAULT_TARGET] = warehouse
    configs = []
    for name, url in urls.items():
        tenants = settings.database_tenants.get(name)
        if tenants is None and demo and name == DEFAULT_TARGET:
            tenants = frozenset({DEMO_TENANT})
        configs.append(
            TargetConfig(
                name=name,
                url=url,
                allow_writable=name in settings.writable_databases,
                allow_superuser=name in settings.superuser_databases,
                tenants=tenants or frozenset(),
                glossary=settings.glossaries.get(name)
                or (demo_glossary() if demo and name == DEFAULT_TARGET else ()),
                joins=settings.glossary_joins.get(name, ()),
                exclude=settings.exclude_tables.get(name, ()),
                access=settings.access_policies.get(name),
            )
        )
    return configs


async def build_deps(
    settings: SqlSettings,
    telemetry: Telemetry,
    *,
    generator: SqlGenerator | None = None,
    configs: list[TargetConfig] | None = None,
    today: Callable[[], date] | None = None,
    memory: tuple[MemoryStore, QuestionEmbedder] | None = None,
    memory_settings: MemorySettings | None = None,
    phrase_embedder: PhraseEmbedder | None = None,
) -> SqlDeps:
    """Reach every target database and assemble the engine.

    ``generator`` is the primary SQL generator (an LLM adapter); the offline one is
    always the fallback, and the primary when none is given. ``memory`` (an opened
    store and a question embedder) switches the answer memory on; the deps close the
    store. ``phrase_embedder`` lets the offline generator link words no name spells by
    meaning.
    """
    serves_demo = False
    if configs is None:
        serves_demo = serves_demo_warehouse(settings)
        needs_warehouse = bool(settings.warehouse_url) or serves_demo
        configs = target_configs(
            settings,
            await warehouse_url(settings) if needs_warehouse else None,
            demo=serves_demo,
        )
    targets = TargetRegistry(
        [
            open_target(
                config,
                pool_max_size=settings.pool_max_size,
                catalog_ttl_s=settings.catalog_ttl_s,
                statement_timeout_cap_s=settings.max_statement_timeout_s,
                work_mem_kb=settings.work_mem_kb,
            )
            for config in configs
        ],
        settings.default_database,
    )
    offline = OfflineGenerator(phrase_embedder)
    for name in targets.names:
        # the value vectors are part of each catalog load, so no question waits for them
        targets.get(name).catalog.prepare_with(offline.prepare)
    try:
        await targets.open()
    except BaseException:
        await targets.close()
        raise
    clock = today or reference_clock(settings, serves_demo=serves_demo)
    tracer = telemetry.tracer("tandem.sql")
    meter = telemetry.meter("tandem.sql")
    # No statement may build a value larger than the largest result it could return.
    gate = SqlGate(max_chars=settings.max_sql_chars, max_built=settings.max_result_bytes)
    runner = StatementRunner(tracer=tracer, meter=meter)
    checker = (
        StatementChecker(gate, runner, mode=settings.verify, tracer=tracer)
        if settings.verify is not None
        else None
    )
    pipeline = AskPipeline(
        generator or offline,
        gate=gate,
        runner=runner,
        fallback=offline,
        checker=checker,
        max_repairs=settings.max_repairs,
        catalog_max_chars=settings.catalog_max_chars,
        today=clock,
        tracer=tracer,
        meter=meter,
    )
    engine = SqlEngine(
        targets,
        gate=gate,
        runner=runner,
        limits=engine_limits(settings),
        ask=pipeline,
        checker=checker,
        memory=(
            AnswerMemory(
                memory[0],
                memory[1],
                gate=gate,
                runner=runner,
                settings=memory_settings,
                tracer=tracer,
                few_shot=generator is not None,
                checker=checker,
            )
            if memory is not None
            else None
        ),
        tracer=tracer,
        meter=meter,
    )
    return SqlDeps(engine=engine, targets=targets)


def reference_clock(settings: SqlSettings, *, serves_demo: bool) -> Callable[[], date]:
    """What relative dates ("last quarter") are read against: SQL_REFERENCE_DATE when set;
    else the demo data's anchor when the default target is the demo warehouse this service
    set up (its rows end there, so today would find nothing); else today."""
    fixed = settings.reference_date
    if fixed is None and serves_demo:
        fixed = ANCHOR_DATE
    if fixed is None:
        return date.today
    return lambda: fixed


async def run_until_signalled() -> None:
    """Process entry point: bind, reach the databases, serve until SIGTERM."""
    telemetry_settings = TelemetrySettings.from_env("sql")
    configure_logging("sql", telemetry_settings.log_level)
    server_settings = ServerSettings.from_env("sql", DEFAULT_PORT)
    settings = SqlSettings.from_env()
    trust = Trust.from_env("sql")
    telemetry = Telemetry(telemetry_settings)
    server = GrpcServer(server_settings, telemetry, trust=trust)
    servicer = SqlServicer()
    server.add_service(SERVICE_NAME, pb_grpc.add_SqlServiceServicer_to_server, servicer)
    opened: list[SqlDeps] = []
    # The configured model (LLM_PROVIDER) behind the generator seam; rules offline.
    generator = generator_from_env(tracer=telemetry.tracer("tandem.sql.llm"))

    memory_settings = MemorySettings.from_env()
    embedding_channel = create_channel(
        memory_settings.embedding_addr,
        interceptors=telemetry.client_interceptors(),
        trust=trust,
        peer="embedding",
    )

    async def load() -> None:
        memory = None
        if memory_settings.enabled:
            try:
                store = await open_memory(settings.admin_url, settings.data_dir, memory_settings)
            except Exception as exc:
                # Text-to-SQL does not need the memory: serve without it, loudly (its RPCs
                # answer FAILED_PRECONDITION MEMORY_DISABLED until a restart finds it).
                _log.error("answer memory unavailable; serving without it",
                           extra={"fields": {"error.type": type(exc).__name__}})  # fmt: skip
            else:
                embedder = GrpcQuestionEmbedder(
                    embedding_channel, timeout_s=memory_settings.embedding_timeout_s
                )
                memory = (store, embedder)
        # the same embedding service reads questions' words by meaning
        phrases = GrpcQuestionEmbedder(
            embedding_channel, timeout_s=memory_settings.embedding_timeout_s
        )
        deps = await build_deps(
            settings, telemetry, generator=generator, memory=memory,
            memory_settings=memory_settings, phrase_embedder=phrases,
        )  # fmt: skip
        opened.append(deps)
        await ready(server, servicer, deps)
        server.watch_dependencies({"warehouse": deps.targets.get("").ping})

    async def close() -> None:
        for deps in opened:
            await deps.close()
        if generator is not None:
            await generator.aclose()
        await embedding_channel.close()

    await serve(server, on_start=load, on_stop=close)
