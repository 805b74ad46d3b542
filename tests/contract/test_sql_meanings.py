"""Words no name spells, read by meaning through the real embedding service: the SQL
service answers "How many firms are there?" over ``companies`` and "the sector of each
company" with ``industry``, and says so in the interpretation; with the embedding service
down it refuses the question as before."""

from __future__ import annotations

from datetime import date

import pytest

from services.sql import SqlSettings, TargetConfig, ensure_warehouse
from services.sql._server import build_deps, create_server, ready
from services.sql.memory._store import GrpcQuestionEmbedder
from tandem.v1 import sql_service_pb2 as pb
from tandem.v1 import sql_service_pb2_grpc as pb_grpc
from tests.conftest import server_settings

pytestmark = pytest.mark.integration

FIRMS = "How many firms are there?"


async def _ask(
    pg_url, telemetry_sink, channel_to, embedding_addr: str, question: str = FIRMS
) -> pb.AskQuestionResponse:
    warehouse = await ensure_warehouse(pg_url)
    deps = await build_deps(
        SqlSettings(reference_date=date(2025, 6, 30)),
        telemetry_sink("sql").telemetry,
        configs=[TargetConfig("warehouse", warehouse.reader_url, tenants=frozenset({"*"}))],
        phrase_embedder=GrpcQuestionEmbedder(channel_to(embedding_addr)),
    )
    server, servicer = await create_server(server_settings("sql"), telemetry_sink().telemetry)
    try:
        await ready(server, servicer, deps)
        stub = pb_grpc.SqlServiceStub(channel_to(server.address))
        response: pb.AskQuestionResponse = await stub.AskQuestion(
            pb.AskQuestionRequest(tenant_id="acme", question=question), timeout=30
        )
        return response
    finally:
        await server.stop(0)
        await deps.close()


async def test_a_word_no_name_spells_is_read_by_meaning(
    pg_url, embedding, telemetry_sink, channel_to
) -> None:
    reply = await _ask(pg_url, telemetry_sink, channel_to, embedding.server.address)
    assert reply.outcome == pb.SQL_ASK_OUTCOME_ANSWERED, reply.message
    assert "FROM public.companies" in reply.result.sql and "COUNT(*)" in reply.result.sql
    assert "'firms' read as public.companies (similarity" in reply.interpretation
    assert reply.result.rows[0].values[0].int_value > 0


async def test_without_the_embedding_service_the_question_is_refused(
    pg_url, telemetry_sink, channel_to
) -> None:
    reply = await _ask(pg_url, telemetry_sink, channel_to, "127.0.0.1:1")
    assert reply.outcome == pb.SQL_ASK_OUTCOME_UNANSWERABLE
    assert "firms" in reply.message


async def test_a_noun_nearest_one_column_by_a_margin_is_read_as_it(
    pg_url, embedding, telemetry_sink, channel_to
) -> None:
    """ "sector" is too far from ``industry`` for the catalog-wide meaning floor and was
    refused offering it; as the last reading (``linker/_unplaced``, s59) it is clearly
    nearest among the companies' columns and read as it, said in the interpretation.
    Without the embedding service the question is refused naming the word, and saying
    that the stored values' meanings are not loaded yet (the catalog's load could not
    embed them; they are embedded again in the background, s66 vecload)."""
    question = "List the sector of each company"
    reply = await _ask(pg_url, telemetry_sink, channel_to, embedding.server.address, question)
    assert reply.outcome == pb.SQL_ASK_OUTCOME_ANSWERED, reply.message
    assert "industry" in reply.result.sql and "FROM public.companies" in reply.result.sql
    assert "'sector' read as" in reply.interpretation and "industry" in reply.interpretation
    alone = await _ask(pg_url, telemetry_sink, channel_to, "127.0.0.1:1", question)
    assert alone.message == (
        "could not place 'sector' (no table, column or stored value is near it) (the "
        "meanings of the stored values are still being loaded, so a word that says a "
        "stored value in other words could not be read; ask again shortly)"
    )
