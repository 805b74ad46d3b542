"""``fused``: a channel's rewriting interceptors of one call kind folded into one, with the
same rewrites and settles in the same order, and an interceptor of another kind (the
tracing instrumentation's) left where it is."""

from __future__ import annotations

from typing import Any

import grpc

from services.common._channels import _UnaryUnary, fused, rewriting_interceptors


def _details(*metadata: tuple[str, str]) -> grpc.aio.ClientCallDetails:
    return grpc.aio.ClientCallDetails(
        method="/s.S/M", timeout=None, metadata=grpc.aio.Metadata(*metadata),
        credentials=None, wait_for_ready=None,
    )  # fmt: skip


def _tagging(tag: str, log: list[str]) -> list[grpc.aio.ClientInterceptor]:
    def rewrite(details: grpc.aio.ClientCallDetails) -> grpc.aio.ClientCallDetails:
        log.append(f"rewrite {tag}")
        return _details(*(details.metadata or ()), ("x-tag", tag))

    def settle(call: Any) -> Any:
        log.append(f"settle {tag}")
        return [*call, tag]

    return rewriting_interceptors(rewrite, settle)


class Foreign(grpc.aio.UnaryUnaryClientInterceptor):
    async def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return await continuation(details, request)


async def _run(chain: list[grpc.aio.ClientInterceptor]) -> Any:
    """The unary-unary interceptors of ``chain`` run as grpc.aio runs them, one inside
    the other, around a call that returns the metadata values it was sent."""
    unary = [i for i in chain if isinstance(i, grpc.aio.UnaryUnaryClientInterceptor)]

    async def call(index: int, details: grpc.aio.ClientCallDetails) -> Any:
        if index == len(unary):
            return [value for _, value in details.metadata or ()]

        async def continuation(inner: grpc.aio.ClientCallDetails, request: Any) -> Any:
            return await call(index + 1, inner)

        return await unary[index].intercept_unary_unary(continuation, details, b"")

    return await call(0, _details())


async def test_a_run_of_rewrites_is_one_interceptor_doing_the_same_in_the_same_order():
    plain_log: list[str] = []
    plain = [*_tagging("a", plain_log), *_tagging("b", plain_log), *_tagging("c", plain_log)]
    fused_log: list[str] = []
    folded = fused(
        [*_tagging("a", fused_log), *_tagging("b", fused_log), *_tagging("c", fused_log)]
    )
    assert [type(i) for i in folded].count(_UnaryUnary) == 1
    assert len(folded) == 4  # one per call kind
    plain_result = await _run(plain)
    fused_result = await _run(folded)
    # sent: a's header, then b's, then c's; settled innermost first
    assert plain_result == fused_result == ["a", "b", "c", "c", "b", "a"]
    assert plain_log == fused_log == [
        "rewrite a", "rewrite b", "rewrite c", "settle c", "settle b", "settle a",
    ]  # fmt: skip


async def test_another_interceptor_stays_in_place_and_ends_a_run():
    log: list[str] = []
    foreign = Foreign()
    folded = fused([*_tagging("a", log), *_tagging("b", log), foreign, *_tagging("c", log)])
    unary = [i for i in folded if isinstance(i, grpc.aio.UnaryUnaryClientInterceptor)]
    assert len(unary) == 3 and unary[1] is foreign
    result = await _run(folded)
    assert result == ["a", "b", "c", "c", "b", "a"]
