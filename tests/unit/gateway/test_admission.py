"""The quota gate: over-quota callers with a recently verified key are refused before
anything else runs, with the servicer's error contract; everyone else passes through."""

from __future__ import annotations

import logging
from typing import Any, cast

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2

from gateway import TokenBuckets
from gateway._admission import QuotaGate
from tandem.v1 import gateway_service_pb2 as gpb

SERVICE = gpb.DESCRIPTOR.services_by_name["GatewayService"]
VALIDATE = "/tandem.v1.GatewayService/ValidateSql"
STREAM_ASK = "/tandem.v1.GatewayService/StreamAsk"
KEY = "tdm_aaaaaaaaaaaaaaaa_" + "s" * 43


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Keys:
    """Recognises ``KEY`` as tenant ``acme``; every other key is unknown."""

    def recent_tenant(self, presented: str | None) -> str | None:
        return "acme" if presented == KEY else None


class Details(grpc.HandlerCallDetails):
    def __init__(self, method: str, key: str | None = KEY) -> None:
        self.method = method
        self.invocation_metadata = (("authorization", f"Bearer {key}"),) if key else ()


class Aborted(Exception):
    pass


class Context:
    async def abort(self, code: grpc.StatusCode, details: str, trailers: Any) -> None:
        self.code, self.details, self.trailers = code, details, dict(trailers)
        raise Aborted


async def _noop(request: Any, context: Any) -> None:
    return None


PASSED: grpc.RpcMethodHandler[Any, Any] = grpc.unary_unary_rpc_method_handler(_noop)


async def passed(details: Any) -> Any:
    return PASSED


def gate(clock: Clock, rate: float = 2.0, burst: float = 1.0) -> tuple[QuotaGate, TokenBuckets]:
    quota = TokenBuckets(rate=rate, burst=burst, clock=clock)
    made = QuotaGate(SERVICE, clock=clock, log_every_s=10.0)
    made.attach(Keys(), quota)
    return made, quota


async def test_callers_with_tokens_unknown_keys_and_other_services_pass_through():
    clock = Clock()
    made, quota = gate(clock)
    assert await made.intercept_service(passed, Details(VALIDATE)) is PASSED
    quota.take("acme")  # the servicer spends the only token; the gate spent nothing
    for details in (
        Details(VALIDATE, key="tdm_bbbbbbbbbbbbbbbb_" + "x" * 43),
        Details(VALIDATE, key=None),
        Details("/grpc.health.v1.Health/Check"),
    ):
        assert await made.intercept_service(passed, details) is PASSED
    assert made.refused == 0
    unattached = QuotaGate(SERVICE)
    assert await unattached.intercept_service(passed, Details(VALIDATE)) is PASSED


async def test_an_empty_bucket_is_refused_with_retry_info_without_the_chain():
    clock = Clock()
    made, quota = gate(clock, rate=2.0)
    quota.take("acme")
    clock.now += 0.1  # 0.2 tokens back: the next one in 0.4 s

    async def never(details: Any) -> Any:
        raise AssertionError("the chain ran for a refused call")

    handler = await made.intercept_service(never, Details(VALIDATE))
    assert handler is not None and handler.unary_unary is not None
    assert handler.request_deserializer is None  # the request is never parsed
    context = Context()
    with pytest.raises(Aborted):
        await handler.unary_unary(b"\xff", cast(Any, context))
    assert context.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    status = status_pb2.Status.FromString(context.trailers["grpc-status-details-bin"])
    assert status.code == grpc.StatusCode.RESOURCE_EXHAUSTED.value[0]
    retry, info = error_details_pb2.RetryInfo(), error_details_pb2.ErrorInfo()
    assert [d.Unpack(retry) or d.Unpack(info) for d in status.details] == [True, True]
    assert retry.retry_delay.ToTimedelta().total_seconds() == pytest.approx(0.4)
    assert (info.reason, info.domain) == ("QUOTA_EXCEEDED", "tandem")
    # A server-streaming method gets a streaming handler; the same delay is built once.
    stream = await made.intercept_service(never, Details(STREAM_ASK))
    assert stream is not None and stream.unary_stream is not None
    assert await made.intercept_service(never, Details(VALIDATE)) is handler
    assert made.refused == 3


async def test_refusals_are_counted_and_logged_in_aggregate_without_the_key(caplog):
    clock = Clock()
    made, quota = gate(clock, rate=0.001)
    quota.take("acme")
    caplog.set_level(logging.INFO, logger="tandem.gateway")
    for _ in range(50):
        await made.intercept_service(passed, Details(VALIDATE))
    assert not caplog.records
    clock.now += 10
    await made.intercept_service(passed, Details(VALIDATE))
    [record] = caplog.records
    assert getattr(record, "fields", None) == {"refused": 51, "window_s": 10.0}
    assert KEY not in caplog.text and "acme" not in caplog.text
    assert made.refused == 51
