"""``tandem sql teach | memory list | memory delete | feedback`` against a recording
gateway on loopback: each command sends the right request, a plain question still asks,
and a malformed command is a usage error, not a question."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
import pytest

from services.cli._main import main
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import gateway_service_pb2_grpc as gpb_grpc
from tandem.v1 import sql_service_pb2 as spb

PAIR = spb.ConfirmedPair(pair_id="p-1", database="warehouse", question="q", sql="SELECT 1")


class Recording(gpb_grpc.GatewayServiceServicer):
    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []

    def TeachSql(self, request: Any, context: Any) -> Any:
        self.seen.append(("TeachSql", request))
        return gpb.GatewayServiceTeachSqlResponse(pair=PAIR)

    def ListConfirmedPairs(self, request: Any, context: Any) -> Any:
        self.seen.append(("ListConfirmedPairs", request))
        if not request.page_token:
            return gpb.GatewayServiceListConfirmedPairsResponse(pairs=[PAIR], next_page_token="n")
        return gpb.GatewayServiceListConfirmedPairsResponse(pairs=[PAIR])

    def DeleteConfirmedPair(self, request: Any, context: Any) -> Any:
        self.seen.append(("DeleteConfirmedPair", request))
        return gpb.GatewayServiceDeleteConfirmedPairResponse(deleted=True)

    def SubmitSqlFeedback(self, request: Any, context: Any) -> Any:
        self.seen.append(("SubmitSqlFeedback", request))
        return gpb.GatewayServiceSubmitSqlFeedbackResponse(feedback_id="f-1")

    def AskSql(self, request: Any, context: Any) -> Any:
        self.seen.append(("AskSql", request))
        return gpb.GatewayServiceAskSqlResponse(
            outcome=spb.SQL_ASK_OUTCOME_UNANSWERABLE, answer_id="a-1"
        )


@pytest.fixture
def gateway() -> Iterator[tuple[Recording, str]]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    recording = Recording()  # type: ignore[abstract]  # only the RPCs the CLI calls
    gpb_grpc.add_GatewayServiceServicer_to_server(recording, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield recording, f"127.0.0.1:{port}"
    server.stop(0)


def _tandem(address: str, *words: str) -> int:
    return main(["sql", *words, "--gateway", address, "--api-key", "k"])


def test_teach_sends_the_question_the_statement_and_the_database(gateway):
    recording, address = gateway
    assert _tandem(address, "teach", "How many?", "SELECT 1", "--database", "finance") == 0
    [(method, request)] = recording.seen
    assert method == "TeachSql"
    assert (request.question, request.sql, request.database) == ("How many?", "SELECT 1", "finance")


def test_memory_list_pages_to_the_end_and_delete_names_the_pair(gateway, capsys):
    recording, address = gateway
    assert _tandem(address, "memory", "list") == 0
    assert [m for m, _ in recording.seen] == ["ListConfirmedPairs", "ListConfirmedPairs"]
    assert recording.seen[1][1].page_token == "n"
    assert "2 confirmed pair(s)" in capsys.readouterr().out
    assert _tandem(address, "memory", "delete", "p-1") == 0
    assert recording.seen[-1][1].pair_id == "p-1"


def test_feedback_sends_the_rating_the_correction_and_the_note(gateway):
    recording, address = gateway
    assert _tandem(address, "feedback", "a-1", "wrong", "--corrected-sql", "SELECT 2",
                   "--note", "off by one") == 0  # fmt: skip
    [(method, request)] = recording.seen
    assert method == "SubmitSqlFeedback"
    assert request.rating == spb.FEEDBACK_RATING_WRONG
    assert (request.answer_id, request.corrected_sql, request.note) == (
        "a-1", "SELECT 2", "off by one"
    )  # fmt: skip


def test_a_question_is_still_a_question_and_prints_its_answer_id(gateway, capsys):
    recording, address = gateway
    assert _tandem(address, "teach") == 0  # one word: a question, even this one
    assert _tandem(address, "how", "many", "companies") == 0
    assert [r.question for _, r in recording.seen] == ["teach", "how many companies"]
    assert "tandem sql feedback a-1 wrong" in capsys.readouterr().out


def test_a_malformed_memory_command_is_a_usage_error_and_sends_nothing(gateway, capsys):
    recording, address = gateway
    assert _tandem(address, "memory", "purge", "everything") == 1
    assert _tandem(address, "feedback", "a-1", "meh") == 1
    assert not recording.seen
    assert "usage: tandem sql teach" in capsys.readouterr().err
