"""``tandem chat``: the loop keeps the conversation id the first answer returns, shows what
each follow-up was answered as, survives a failed turn, and stops on 'exit'."""

from __future__ import annotations

import io
from typing import Any, cast

import grpc

from services.cli._chat import chat_loop
from services.cli._client import render_answer
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import gateway_service_pb2_grpc as gpb_grpc
from tandem.v1 import router_service_pb2 as qpb


class _Failed(grpc.RpcError):
    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.NOT_FOUND

    def details(self) -> str:
        return "conversation not found"

    def trailing_metadata(self) -> tuple[()]:
        return ()


class _Stub:
    def __init__(self, fail_on: str = "") -> None:
        self.requests: list[gpb.GatewayServiceAskRequest] = []
        self.fail_on = fail_on

    def Ask(self, request: gpb.GatewayServiceAskRequest, **_: Any) -> Any:
        self.requests.append(request)
        if request.question == self.fail_on:
            raise _Failed()
        follow_up = len(self.requests) > 1
        return gpb.GatewayServiceAskResponse(
            answer=qpb.Answer(
                text=f"answer {len(self.requests)}",
                conversation_id="conv-1",
                resolution=qpb.FollowUpResolution(
                    kind=qpb.FOLLOW_UP_KIND_TIME_SHIFT
                    if follow_up
                    else qpb.FOLLOW_UP_KIND_STANDALONE,
                    resolved_question="How many deals in 2024?" if follow_up else request.question,
                ),
            )
        )


def _as_stub(stub: _Stub) -> gpb_grpc.GatewayServiceStub:
    return cast(gpb_grpc.GatewayServiceStub, stub)


def test_the_loop_keeps_the_conversation_and_stops_on_exit():
    stub, out = _Stub(), io.StringIO()
    lines = ["How many deals?", "", "and in 2024?", "exit", "never asked"]
    conversation = chat_loop(_as_stub(stub), lines, out, metadata=(), prompt=False)
    assert conversation == "conv-1"
    assert [r.question for r in stub.requests] == ["How many deals?", "and in 2024?"]
    assert [r.conversation_id for r in stub.requests] == ["", "conv-1"]
    assert "Answering: How many deals in 2024?" in out.getvalue()
    assert "Conversation: conv-1 · time_shift" in out.getvalue()


def test_a_failed_turn_is_reported_and_the_loop_goes_on():
    stub, out = _Stub(fail_on="bad"), io.StringIO()
    chat_loop(_as_stub(stub), ["bad", "How many deals?"], out, metadata=(),
              conversation_id="c-9", prompt=False)  # fmt: skip
    assert "NOT_FOUND" in out.getvalue()
    assert [r.conversation_id for r in stub.requests] == ["c-9", "c-9"]


def test_a_standalone_answer_shows_no_rewrite():
    text = render_answer(qpb.Answer(text="Count: 3.", resolution=qpb.FollowUpResolution(
        kind=qpb.FOLLOW_UP_KIND_STANDALONE, resolved_question="How many?")))  # fmt: skip
    assert "Answering:" not in text


def test_every_turn_carries_the_chosen_database_and_mode():
    # A user with several databases could only chat with the default one.
    stub, out = _Stub(), io.StringIO()
    chat_loop(_as_stub(stub), ["How many orders?", "and in 2024?"], out, metadata=(),
              prompt=False, mode="sql", database="shop")  # fmt: skip
    assert [r.options.database for r in stub.requests] == ["shop", "shop"]
    assert [r.mode for r in stub.requests] == [qpb.ASK_MODE_SQL, qpb.ASK_MODE_SQL]


def test_chat_takes_database_and_mode_options():
    from services.cli._main import build_parser

    args = build_parser().parse_args(["chat", "--database", "shop", "--mode", "retrieve"])
    assert (args.database, args.mode) == ("shop", "retrieve")
    assert build_parser().parse_args(["chat"]).mode == "auto"


def test_a_declined_answer_says_why_beside_its_outcome():
    text = render_answer(qpb.Answer(
        text="Tandem never changes your data.", outcome=qpb.ANSWER_OUTCOME_REFUSED,
        route=qpb.ROUTE_SQL, refusal_reason="SQL_READ_ONLY"))  # fmt: skip
    assert "Route: sql · mode unspecified · outcome refused (SQL_READ_ONLY)" in text
    assert text.startswith("Tandem never changes your data.")
