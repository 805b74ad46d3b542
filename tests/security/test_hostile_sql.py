"""Hostile SQL end to end, on the whole stack as processes: injection payloads of every
public class, wrapped into full statements, go through the gateway's ValidateSql and the
SQL service's ExecuteSql (the gateway has no execute RPC; product backends reach it on
the internal service) over gRPC against the real warehouse. Nothing changes in the
warehouse, every call returns within its deadline, every refusal names its rule;
natural-language questions carrying payloads never lead the text-to-SQL pipeline to a
write.

The shared stack's per-tenant quota is small, so the calls are spread over a few tenants
and wait out RESOURCE_EXHAUSTED for its RetryInfo delay, as a client would.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import grpc
import pytest
from google.protobuf import duration_pb2

from services.common import TENANT_TOKEN_HEADER, create_channel
from services.sql.demo._warehouse import DEFAULT_DATABASE
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import gateway_service_pb2_grpc as gpb_grpc
from tandem.v1 import sql_service_pb2 as spb
from tandem.v1 import sql_service_pb2_grpc as spb_grpc
from tests.processes import ProcessStack
from tests.security.corpora.sql import HOSTILE_QUESTIONS, READ, hostile_statements, kinds
from tests.security.corpora.stacks import admitted, error_details, warehouse_state

pytestmark = pytest.mark.e2e

DEADLINE_S = 10.0
STATEMENT_TIMEOUT_S = 1.0
# Scheduling slack on a loaded machine: a call that returns at all returns by its
# deadline (gRPC enforces it); this bounds how late the client may observe it.
SLACK_S = 0.5
TENANTS = 8


@dataclass
class Running:
    gateway: gpb_grpc.GatewayServiceAsyncStub
    sql: spb_grpc.SqlServiceAsyncStub
    keys: Iterator[str]
    owner_url: str
    # The SQL service is called as the gateway calls it: its certificate, a signed tenant.
    sql_metadata: tuple[tuple[str, str], ...]

    def _metadata(self) -> tuple[tuple[str, str], ...]:
        """The next tenant in turn."""
        return (("authorization", f"Bearer {next(self.keys)}"),)

    async def validate(self, sql: str) -> gpb.GatewayServiceValidateSqlResponse:
        request = gpb.GatewayServiceValidateSqlRequest(sql=sql)
        metadata = self._metadata()
        return await admitted(
            lambda: self.gateway.ValidateSql(request, metadata=metadata, timeout=DEADLINE_S)
        )

    async def ask_sql(self, question: str) -> gpb.GatewayServiceAskSqlResponse:
        request = gpb.GatewayServiceAskSqlRequest(question=question)
        metadata = self._metadata()
        return await admitted(
            lambda: self.gateway.AskSql(request, metadata=metadata, timeout=DEADLINE_S)
        )


@pytest.fixture
async def running(process_stack: ProcessStack) -> AsyncIterator[Running]:
    keys = [
        await asyncio.to_thread(process_stack.create_key, f"hostile-sql-{i}")
        for i in range(TENANTS)
    ]
    trust = process_stack.trust("gateway")
    assert trust.signer is not None
    async with (
        grpc.aio.insecure_channel(process_stack.gateway_address) as gateway,
        create_channel(process_stack.address("sql"), trust=trust, peer="sql") as sql,
    ):
        yield Running(
            gpb_grpc.GatewayServiceStub(gateway),
            spb_grpc.SqlServiceStub(sql),
            itertools.cycle(keys),
            process_stack.database_url(DEFAULT_DATABASE),
            (
                (
                    TENANT_TOKEN_HEADER,
                    trust.signer.token("hostile-sql", "/tandem.v1.SqlService/ExecuteSql"),
                ),
            ),
        )


async def test_the_corpus_covers_every_injection_class() -> None:
    assert set(kinds()) >= {
        "union",
        "error",
        "boolean-blind",
        "time-blind",
        "stacked",
        "comment",
        "encoding",
        "dollar-quote",
        "copy-do-call",
        "function",
        "modifying-cte",
        "select-into",
        "locking",
    }
    assert len(hostile_statements()) >= 80


async def test_injected_statements_are_refused_by_rule_or_read_only_and_change_nothing(
    running: Running,
) -> None:
    before = await warehouse_state(running.owner_url)
    problems: list[str] = []
    outcomes: dict[str, int] = {}
    for statement in hostile_statements():
        # The gate through the public door.
        started = time.monotonic()
        verdict = await running.validate(statement.sql)
        if time.monotonic() - started > DEADLINE_S + SLACK_S:
            problems.append(f"validate past its deadline: {statement.label}")
        rules = [spb.SqlGateRule.Name(v.rule) for v in verdict.violations]
        expected = None if statement.rule is READ else statement.rule.wire_name
        if verdict.valid != (expected is None) or (rules[:1] != ([expected] if expected else [])):
            problems.append(
                f"validate: {verdict.valid} {rules}, want {expected}: {statement.label}"
            )
        if any(v.rule == spb.SQL_GATE_RULE_UNSPECIFIED for v in verdict.violations):
            problems.append(f"a violation names no rule: {statement.label}")

        # Execution on the SQL service, with a short statement timeout.
        started = time.monotonic()
        try:
            reply = await running.sql.ExecuteSql(
                spb.ExecuteSqlRequest(
                    tenant_id="hostile-sql",
                    sql=statement.sql,
                    statement_timeout=duration_pb2.Duration(seconds=int(STATEMENT_TIMEOUT_S)),
                ),
                timeout=DEADLINE_S,
                metadata=running.sql_metadata,
            )
            outcome = "executed"
            if expected is not None:
                problems.append(f"executed although the gate refuses it: {statement.label}")
            if len(reply.result.rows) > 50:
                problems.append(f"row cap not applied: {statement.label}")
        except grpc.aio.AioRpcError as exc:
            details = error_details(exc)
            outcome = f"{details.code.name}/{details.reason}"
            refused = (details.code, details.reason) == (
                grpc.StatusCode.INVALID_ARGUMENT,
                "SQL_REJECTED",
            )
            if refused:
                if details.metadata.get("rule") != expected:
                    problems.append(
                        f"rejected under {details.metadata.get('rule')}, want {expected}: "
                        f"{statement.label}"
                    )
            elif expected is not None:
                problems.append(
                    f"reached the database though refused ({outcome}): {statement.label}"
                )
            elif (details.code, details.reason) not in {
                (grpc.StatusCode.INVALID_ARGUMENT, "SQL_DATABASE_ERROR"),
                (grpc.StatusCode.DEADLINE_EXCEEDED, "STATEMENT_TIMEOUT"),
                (grpc.StatusCode.RESOURCE_EXHAUSTED, "SQL_RESOURCE_LIMIT"),
            }:
                problems.append(f"unexpected {outcome} {details.message!r}: {statement.label}")
        elapsed = time.monotonic() - started
        if elapsed > DEADLINE_S + SLACK_S:
            problems.append(f"execute took {elapsed:.1f}s, past its deadline: {statement.label}")
        if outcome.endswith("STATEMENT_TIMEOUT") and elapsed > STATEMENT_TIMEOUT_S + 3.0:
            problems.append(f"statement timeout took {elapsed:.1f}s: {statement.label}")
        outcomes[outcome] = outcomes.get(outcome, 0) + 1

    after = await warehouse_state(running.owner_url)
    print(f"\n{len(hostile_statements())} hostile statements, execute outcomes: {outcomes}")
    assert after == before, "the warehouse changed"
    assert not problems, "\n".join(problems)
    # Both defences were exercised: refusals by rule, and reads that ran or were stopped.
    assert outcomes.get("INVALID_ARGUMENT/SQL_REJECTED", 0) >= 60
    assert outcomes.get("executed", 0) >= 10
    assert outcomes.get("DEADLINE_EXCEEDED/STATEMENT_TIMEOUT", 0) >= 1


async def test_questions_carrying_sql_payloads_never_write(running: Running) -> None:
    before = await warehouse_state(running.owner_url)
    for question in HOSTILE_QUESTIONS:
        started = time.monotonic()
        reply = await running.ask_sql(question)
        assert time.monotonic() - started < DEADLINE_S + SLACK_S, question
        ran = [a.sql for a in reply.attempts if a.outcome == spb.SQL_ATTEMPT_OUTCOME_SUCCEEDED]
        if reply.outcome == spb.SQL_ASK_OUTCOME_ANSWERED:
            ran.append(reply.result.sql)
        for sql in ran:
            # Whatever ran is a plain read that the gate passes on its own.
            verdict = await running.validate(sql)
            assert verdict.valid, (question, sql)
            assert sql.lstrip().upper().startswith(("SELECT", "WITH")), (question, sql)
    assert await warehouse_state(running.owner_url) == before
