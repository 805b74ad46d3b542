"""End-to-end smoke of the container stack, through the edge (scripts/container-test.sh).

A backend's view: every call goes to the edge (nginx, the front door) with an API key, and
the edge passes it to the gateway. Checked: an Ask answered with citations, a Search with
hits from the demo documents, an AskSql answered from the demo warehouse, and an ingest
whose document a Search then finds. Prints one JSON line per call; exits non-zero on the
first failure.

    python scripts/container_smoke.py --addr 127.0.0.1:58050 --api-key tdm_…
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

import grpc

from tandem.v1 import common_pb2 as cpb
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import gateway_service_pb2_grpc as gpb_grpc
from tandem.v1 import retrieval_service_pb2 as rpb
from tandem.v1 import router_service_pb2 as qpb
from tandem.v1 import sql_service_pb2 as spb

# Both engines: a count from the warehouse and what the demo call notes say.
ASK = (
    "How many open Security Suite opportunities are there, and what do call notes say "
    "about security reviews?"
)
SEARCH = "security review"
ASK_SQL = "How many companies are there?"


class SmokeError(AssertionError):
    pass


def check(condition: object, message: str) -> None:
    if not condition:
        raise SmokeError(message)


def timed(name: str, call: Callable[[], dict[str, Any]]) -> None:
    started = time.monotonic()
    try:
        fields = call()
    except grpc.RpcError as exc:
        print(json.dumps({"call": name, "ok": False, "code": str(exc.code()),
                          "details": exc.details()}), flush=True)  # fmt: skip
        raise
    except SmokeError as exc:
        print(json.dumps({"call": name, "ok": False, "error": str(exc)}), flush=True)
        raise
    ms = round((time.monotonic() - started) * 1000)
    print(json.dumps({"call": name, "ok": True, "ms": ms, **fields}), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--addr", required=True, help="the edge, host:port")
    parser.add_argument("--api-key", required=True)
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args(argv)
    metadata = (("authorization", f"Bearer {args.api_key}"),)
    timeout = args.timeout

    with grpc.insecure_channel(args.addr) as channel:
        grpc.channel_ready_future(channel).result(timeout=30)
        stub = gpb_grpc.GatewayServiceStub(channel)

        def ask() -> dict[str, Any]:
            reply = stub.Ask(gpb.GatewayServiceAskRequest(question=ASK), metadata=metadata,
                             timeout=timeout)  # fmt: skip
            answer = reply.answer
            kinds = sorted({cpb.CitationKind.Name(c.kind) for c in answer.citations})
            outcome = qpb.AnswerOutcome.Name(answer.outcome)
            check(answer.outcome == qpb.ANSWER_OUTCOME_ANSWERED, f"{outcome}: {answer.text[:200]}")
            check(answer.citations, "no citations")
            check(cpb.CITATION_KIND_PASSAGE in {c.kind for c in answer.citations},
                  "no passage cited")  # fmt: skip
            return {"route": qpb.Route.Name(answer.route), "citations": len(answer.citations),
                    "kinds": kinds, "degraded": answer.degraded}  # fmt: skip

        def search() -> dict[str, Any]:
            reply = stub.Search(gpb.GatewayServiceSearchRequest(query=SEARCH, top_k=5),
                                metadata=metadata, timeout=timeout)  # fmt: skip
            check(reply.hits, "no hits")
            check(not reply.degraded, f"degraded: {reply}")
            return {"hits": len(reply.hits), "top": reply.hits[0].document_id}

        def ask_sql() -> dict[str, Any]:
            reply = stub.AskSql(gpb.GatewayServiceAskSqlRequest(question=ASK_SQL),
                                metadata=metadata, timeout=timeout)  # fmt: skip
            check(reply.outcome == spb.SQL_ASK_OUTCOME_ANSWERED,
                  f"outcome {spb.SqlAskOutcome.Name(reply.outcome)}")  # fmt: skip
            check(reply.result.row_count >= 1, "no rows")
            return {"sql": reply.result.sql, "rows": reply.result.row_count}

        document_id = f"container-smoke-{uuid.uuid4().hex[:8]}"
        marker = f"Quillfeather{uuid.uuid4().hex[:6]}"

        def ingest() -> dict[str, Any]:
            document = rpb.DocumentInput(
                document_id=document_id,
                title="Container smoke note",
                text=f"{marker} Robotics renewed its Growth plan for the warehouse fleet "
                "after the container smoke test.",
                category="call_note",
            )
            events = list(stub.IngestDocuments(
                gpb.GatewayServiceIngestDocumentsRequest(documents=[document]),
                metadata=metadata, timeout=timeout))  # fmt: skip
            check(events and events[-1].HasField("summary"), "no summary")
            summary = events[-1].summary
            check(summary.documents_failed == 0, f"failed: {summary}")
            check(summary.documents_included + summary.documents_unchanged == 1, f"{summary}")
            found = stub.Search(gpb.GatewayServiceSearchRequest(query=f"{marker} Robotics"),
                                metadata=metadata, timeout=timeout)  # fmt: skip
            ranked = [h.document_id for h in found.hits]
            check(ranked[:1] == [document_id], f"ingested document not found first: {ranked}")
            return {"document": document_id, "chunks": summary.chunks_written}

        failed = 0
        for name, call in (("Ask", ask), ("Search", search), ("AskSql", ask_sql),
                           ("IngestDocuments", ingest)):  # fmt: skip
            try:
                timed(name, call)
            except (grpc.RpcError, SmokeError):
                failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
