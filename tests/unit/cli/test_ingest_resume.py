"""``tandem ingest`` resuming a call cut midway, against a plain fake of the stub's call."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import grpc
import pytest
from google.rpc import status_pb2

from services.cli._client import resumed_ingest
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import retrieval_service_pb2 as rpb

DOCS = [rpb.DocumentInput(document_id=f"d{i}", text=f"text {i}") for i in range(5)]


class Cut(grpc.RpcError):
    """A call's failure as the sync stub raises it: code, details and trailers."""

    def __init__(self, code: grpc.StatusCode, settled: Sequence[rpb.DocumentResult] = ()) -> None:
        self._code = code
        status = status_pb2.Status(code=code.value[0], message="cut")
        if settled:
            status.details.add().Pack(rpb.IngestCheckpoint(documents=settled))
        self._trailers = (("grpc-status-details-bin", status.SerializeToString()),)

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return "cut"

    def trailing_metadata(self) -> Any:
        return self._trailers


def _included(index: int, document: rpb.DocumentInput) -> rpb.DocumentResult:
    return rpb.DocumentResult(
        index=index,
        document_id=document.document_id,
        outcome=rpb.DOCUMENT_OUTCOME_INCLUDED,
        chunk_count=2,
    )


def _finished(result: rpb.DocumentResult) -> gpb.GatewayServiceIngestDocumentsResponse:
    return gpb.GatewayServiceIngestDocumentsResponse(document_finished=result)


class Gateway:
    """Answers each call with the given plans: how many documents it settles (as events;
    ``listed`` more only in the cut's checkpoint), then the error that cuts it, or None
    to finish with a summary."""

    def __init__(self, plans: list[tuple[int, int, grpc.StatusCode | None]]) -> None:
        self.plans = plans
        self.sent: list[list[str]] = []

    def __call__(self, batch: Sequence[rpb.DocumentInput]) -> Iterator[Any]:
        self.sent.append([d.document_id for d in batch])
        events, listed, code = self.plans[len(self.sent) - 1]
        results = [_included(i, d) for i, d in enumerate(batch)]
        for result in results[:events]:
            yield _finished(result)
        if code is not None:
            raise Cut(code, results[: events + listed])
        yield gpb.GatewayServiceIngestDocumentsResponse(
            summary=rpb.IngestSummary(documents=results, model_name="m")
        )


def test_a_cut_call_is_resumed_with_only_what_it_had_not_settled(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Two events came, a third document is named only by the cut's checkpoint.
    gateway = Gateway([(2, 1, grpc.StatusCode.UNAVAILABLE), (2, 0, None)])
    summary = resumed_ingest(DOCS, gateway, lambda _: None, dry_run=False, sleep=lambda _: None)
    assert gateway.sent == [["d0", "d1", "d2", "d3", "d4"], ["d3", "d4"]]
    assert [(d.index, d.document_id) for d in summary.documents] == [(i, f"d{i}") for i in range(5)]
    assert (summary.documents_included, summary.chunks_written, summary.model_name) == (5, 10, "m")
    assert "3 of 5 documents settled; resuming with the 2 left" in capsys.readouterr().err


def test_resuming_stops_after_calls_that_settle_nothing() -> None:
    cut = (0, 0, grpc.StatusCode.DEADLINE_EXCEEDED)
    gateway = Gateway([(1, 0, grpc.StatusCode.DEADLINE_EXCEEDED), cut, cut, cut, cut])
    with pytest.raises(grpc.RpcError):
        resumed_ingest(DOCS, gateway, lambda _: None, dry_run=False, sleep=lambda _: None)
    assert len(gateway.sent) == 5 and gateway.sent[1] == ["d1", "d2", "d3", "d4"]


def test_other_errors_are_not_resumed() -> None:
    gateway = Gateway([(1, 0, grpc.StatusCode.INVALID_ARGUMENT)])
    with pytest.raises(grpc.RpcError):
        resumed_ingest(DOCS, gateway, lambda _: None, dry_run=False, sleep=lambda _: None)
    assert len(gateway.sent) == 1


def test_an_uncut_call_keeps_the_servers_manifest() -> None:
    gateway = Gateway([(5, 0, None)])
    summary = resumed_ingest(DOCS, gateway, lambda _: None, dry_run=False, sleep=lambda _: None)
    assert summary.model_name == "m" and len(summary.documents) == 5 and len(gateway.sent) == 1
