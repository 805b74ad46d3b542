"""Deadlines and cancellation across the real stack (gateway → router → retrieval/SQL →
embedding, each a real server on loopback): every hop is observed by a recording
interceptor, so the remaining time each one saw and how each handler ended are facts
of the run, not assumptions."""

from __future__ import annotations

import time

import grpc
import pytest

from tandem.v1 import gateway_service_pb2 as gpb
from tests.faults.inprocess import Hop, HopLog, Stack

pytestmark = pytest.mark.integration

COMPOUND = (
    "How many companies are in the Healthcare industry, and which accounts look like a "
    "good fit for healthcare?"
)
# Under one second gRPC encodes a deadline on the wire in exact milliseconds (longer
# ones are rounded up to 100 ms or coarser), so a hop can be compared with its caller.
DEADLINE_S = 0.9
# grpc-timeout is relative: the receiver starts its clock when the headers arrive, so a
# hop's deadline can end later than its caller's by the transit time (plus rounding to
# whole milliseconds). On two loaded cores that is a few milliseconds.
SLACK_S = 0.02
# gRPC's HPACK encoder re-sends an earlier grpc-timeout header on the same connection when
# it is at most 3% longer than the one wanted (chttp2 TimeoutCompressor), so a repeated
# call on a warm connection may see up to 3% more time than its caller had left. The
# caller's own client still enforces its exact deadline and cancels the call then.
HPACK_REUSE = 0.03
# The wire rounds a sub-second grpc-timeout up to the next whole millisecond: a hop that
# sent its remainder within a millisecond of its own arrival can hand on up to 1 ms more
# than it had when it arrived (seen once in CI: 0.8996 s at the router, 0.8993 s at the
# gateway). "Strictly less" is therefore less at the wire's resolution.
WIRE_ROUNDING_S = 0.001


def _one(hops: HopLog, service: str) -> Hop:
    found = hops.of(service)
    assert len(found) == 1, [h.method for h in hops.hops]
    return found[0]


def _within(child: Hop, parent: Hop, *, strict: bool) -> None:
    """``child`` (called by ``parent``) arrived with less time than ``parent`` had."""
    assert child.remaining is not None and parent.deadline is not None
    assert child.deadline is not None and parent.remaining is not None
    parent_left = parent.deadline - child.arrived
    allowed = parent_left + SLACK_S + (0.0 if strict else HPACK_REUSE * parent_left)
    assert child.remaining <= allowed, (child, parent)
    if strict:
        assert child.remaining < parent.remaining + WIRE_ROUNDING_S, (child, parent)


def _caller(hops: HopLog, child: Hop, service: str) -> Hop:
    callers = [h for h in hops.of(service) if h.arrived <= child.arrived]
    assert callers, child
    return max(callers, key=lambda h: h.arrived)


async def test_each_hop_sees_a_shorter_remaining_time(recorded: tuple[Stack, HopLog]):
    stack, hops = recorded
    try:
        await stack.stub.Ask(
            gpb.GatewayServiceAskRequest(question=COMPOUND),
            metadata=stack.metadata,
            timeout=DEADLINE_S,
        )
    except grpc.aio.AioRpcError as exc:  # a slow machine may run out of time: still bounded
        assert exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    gateway = _one(hops, "GatewayService")
    router = _one(hops, "RouterService")
    assert gateway.remaining is not None and gateway.remaining <= DEADLINE_S
    _within(router, gateway, strict=True)
    retrievals, sqls = hops.of("RetrievalService"), hops.of("SqlService")
    embeds = hops.of("EmbeddingService")
    assert retrievals and sqls and embeds, [h.method for h in hops.hops]
    # The first call on each connection is exact: strictly less time at every hop.
    _within(retrievals[0], router, strict=True)
    _within(sqls[0], router, strict=True)
    _within(embeds[0], _caller(hops, embeds[0], "RetrievalService"), strict=True)
    for hop in [*retrievals[1:], *sqls[1:]]:
        _within(hop, router, strict=False)
    for embed in embeds[1:]:
        _within(embed, _caller(hops, embed, "RetrievalService"), strict=False)
    # Whatever a hop was told, no handler outlives the caller's deadline.
    assert gateway.deadline is not None
    for hop in hops.hops:
        assert hop.ended is not None
        assert hop.ended <= gateway.deadline + 0.1, hop


async def test_without_a_caller_deadline_the_gateway_default_bounds_every_hop(
    recorded: tuple[Stack, HopLog],
):
    stack, hops = recorded
    await stack.stub.Search(
        gpb.GatewayServiceSearchRequest(query="renewal risk"), metadata=stack.metadata
    )
    gateway = _one(hops, "GatewayService")
    retrieval = _one(hops, "RetrievalService")
    # The caller sent none; the gateway gives the engine its per-RPC default (30 s,
    # rounded up to whole seconds on the wire), never an unbounded call.
    assert gateway.remaining is None
    assert retrieval.remaining is not None
    assert retrieval.remaining <= stack.gateway_settings.default_deadline_s + 1.0
    assert all(h.remaining is not None for h in hops.hops[1:])


async def test_a_caller_asking_for_an_hour_gets_the_longest_deadline(
    recorded: tuple[Stack, HopLog],
):
    """Issue 46 item 7: no internal call may outlive the grace a connection past its
    maximum age gives its calls (the longest deadline), so the gateway cuts what a caller
    asks for to it."""
    stack, hops = recorded
    await stack.stub.Search(
        gpb.GatewayServiceSearchRequest(query="renewal risk"),
        metadata=stack.metadata,
        timeout=3600,
    )
    retrieval = _one(hops, "RetrievalService")
    assert retrieval.remaining is not None
    assert retrieval.remaining <= stack.gateway_settings.server_deadline_s + 1.0


async def test_an_expired_deadline_cancels_the_work_downstream(recorded: tuple[Stack, HopLog]):
    stack, hops = recorded
    hops.delays["Embed"] = 30.0  # the embedding service hangs
    deadline_s = 0.5
    started = time.monotonic()
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stack.stub.Search(
            gpb.GatewayServiceSearchRequest(query="which accounts are at risk"),
            metadata=stack.metadata,
            timeout=deadline_s,
        )
    elapsed = time.monotonic() - started
    assert err.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert elapsed <= deadline_s + 0.1
    # Every handler down the chain ends (cancelled by gRPC) close to the deadline,
    # including the hung embedding handler, instead of working on for 30 s.
    await hops.wait_until(
        lambda: bool(hops.of("EmbeddingService")) and all(h.ended is not None for h in hops.hops),
        timeout_s=2.0,
    )
    embed = hops.of("EmbeddingService")[0]
    assert embed.outcome == "cancelled", hops.hops
    assert embed.ended is not None and embed.ended <= started + deadline_s + 0.25
    retrieval = _one(hops, "RetrievalService")
    assert retrieval.outcome != "ok", retrieval


async def test_a_cancelled_stream_cancels_the_work_downstream(recorded: tuple[Stack, HopLog]):
    stack, hops = recorded
    hops.delays["Embed"] = 30.0
    call = stack.stub.StreamAsk(
        gpb.GatewayServiceStreamAskRequest(question="which accounts look like a good fit?"),
        metadata=stack.metadata,
        timeout=20,
    )
    first = await call.read()
    assert isinstance(first, gpb.GatewayServiceStreamAskResponse)
    await hops.wait_until(lambda: bool(hops.of("EmbeddingService")), timeout_s=5.0)
    cancelled_at = time.monotonic()
    call.cancel()
    await hops.wait_until(lambda: all(h.ended is not None for h in hops.hops), timeout_s=2.0)
    for service in ("GatewayService", "RouterService", "EmbeddingService"):
        for hop in hops.of(service):
            assert hop.outcome == "cancelled", hop
            assert hop.ended is not None and hop.ended - cancelled_at < 1.0
