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
    Unavailable,
    configure_logging,
    embedded_server_url,
    serve,
)
from services.sql import _convert as convert
from services.sql._ask import AskPipeline, SqlGenerator
from services.sql._engine import EngineLimits, SqlEngine
from services.sql._execute import StatementRunner
from services.sql._gate import SqlGate
from services.sql._llm_adapter import generator_from_env
from services.sql._rules import RuleBasedGenerator
from services.sql._settings import DEFAULT_PORT, SqlSettings
from services.sql._targets import Target, TargetConfig, TargetRegistry
from services.sql._warehouse import ensure_warehouse, reader_url
from services.sql.demo_data import ANCHOR_DATE
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
            request.tenant_id, request.database, request.question, max_rows=request.max_rows
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
            convert.intent_from_pb(request.intent),
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


async def create_server(
    settings: ServerSettings, telemetry: Telemetry, deps: SqlDeps | None = None
) -> tuple[GrpcServer, SqlServicer]:
    """Build and start the server NOT_SERVING; ``ready`` flips it once the engine is up."""
    server = GrpcServer(settings, telemetry)
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
        max_sql_chars=settings.max_sql_chars,
        max_question_chars=settings.max_question_chars,
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


def target_configs(settings: SqlSettings, warehouse: str | None) -> list[TargetConfig]:
    """Every configured database: SQL_DATABASES, plus ``warehouse`` by default."""
    urls = dict(settings.databases)
    if warehouse is not None and (settings.warehouse_url or "warehouse" not in urls):
        urls["warehouse"] = warehouse
    return [
        TargetConfig(
            name=name,
            url=url,
            allow_writable=name in settings.allow_writable,
            tenants=settings.database_tenants.get(name),
        )
        for name, url in urls.items()
    ]


async def build_deps(
    settings: SqlSettings,
    telemetry: Telemetry,
    *,
    generator: SqlGenerator | None = None,
    configs: list[TargetConfig] | None = None,
    today: Callable[[], date] | None = None,
) -> SqlDeps:
    """Reach every target database and assemble the engine.

    ``generator`` is the primary SQL generator (an LLM adapter); the rule-based one is
    always the fallback, and the primary when none is given.
    """
    serves_demo = False
    if configs is None:
        needs_warehouse = settings.warehouse_url or "warehouse" not in dict(settings.databases)
        serves_demo = bool(needs_warehouse) and not settings.warehouse_url
        configs = target_configs(
            settings, await warehouse_url(settings) if needs_warehouse else None
        )
    targets = TargetRegistry(
        [
            Target(
                config,
                pool_max_size=settings.pool_max_size,
                catalog_ttl_s=settings.catalog_ttl_s,
                statement_timeout_cap_s=settings.max_statement_timeout_s,
            )
            for config in configs
        ],
        settings.default_database,
    )
    try:
        await targets.open()
    except BaseException:
        await targets.close()
        raise
    clock = today or reference_clock(settings, serves_demo=serves_demo)
    tracer = telemetry.tracer("tandem.sql")
    meter = telemetry.meter("tandem.sql")
    gate = SqlGate(max_chars=settings.max_sql_chars)
    runner = StatementRunner(tracer=tracer, meter=meter)
    rules = RuleBasedGenerator()
    pipeline = AskPipeline(
        generator or rules,
        gate=gate,
        runner=runner,
        fallback=rules,
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
    telemetry = Telemetry(telemetry_settings)
    server = GrpcServer(server_settings, telemetry)
    servicer = SqlServicer()
    server.add_service(SERVICE_NAME, pb_grpc.add_SqlServiceServicer_to_server, servicer)
    opened: list[SqlDeps] = []
    # Gemini behind the generator seam only when GEMINI_API_KEY is set; rules otherwise.
    generator = generator_from_env(tracer=telemetry.tracer("tandem.sql.llm"))

    async def load() -> None:
        deps = await build_deps(settings, telemetry, generator=generator)
        opened.append(deps)
        await ready(server, servicer, deps)
        server.watch_dependencies({"warehouse": deps.targets.get("").ping})

    async def close() -> None:
        for deps in opened:
            await deps.close()
        if generator is not None:
            await generator.aclose()

    await serve(server, on_start=load, on_stop=close)
