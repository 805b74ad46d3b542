"""The gateway's pass-through RPCs, as data.

Most public RPCs are the same four steps — admit the key's tenant for the RPC's scope,
validate the request, re-parse it as the internal request scoped to that tenant, call one
internal service and relay its reply or error. What differs between them is only which
validator, which internal RPC and message types, and whether an unreachable service fails
open; that is this table. The servicer runs one generic relay over it (``_server``), so a
new pass-through RPC is one row here, one validator and one line in the servicer.

RPCs with logic of their own (Ask and StreamAsk keep conversations, UploadDocument reads a
client stream, the conversation RPCs answer from the gateway's store) are written out in
the servicer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from google.protobuf.message import Message

from gateway import _validation as check
from gateway._settings import Limits
from tandem.v1 import common_pb2 as cpb
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import retrieval_service_pb2 as rpb
from tandem.v1 import sql_service_pb2 as spb

Backend = Literal["retrieval", "sql"]


def no_hits(request: gpb.GatewayServiceSearchRequest) -> gpb.GatewayServiceSearchResponse:
    """What Search returns when the retrieval service cannot be reached."""
    return gpb.GatewayServiceSearchResponse(
        degraded=True,
        degradations=[
            cpb.Degradation(
                reason=cpb.DEGRADATION_REASON_RETRIEVAL_UNAVAILABLE,
                component="retrieval",
                message="the retrieval service is unreachable",
            )
        ],
        mode=request.mode or rpb.SEARCH_MODE_HYBRID,
    )


@dataclass(frozen=True)
class Route:
    """One public RPC that forwards to one internal RPC."""

    backend: Backend  # which service's stub: also the name its errors are relayed under
    method: str  # the internal RPC on that stub
    internal: type[Message]  # the internal request the public one is re-parsed into
    response: type[Message]  # the public response the internal one is re-parsed into
    check: Callable[[Any, Limits], None]  # INVALID_ARGUMENT naming the field, or nothing
    # The reply when the service cannot be reached at all (None: the error is relayed).
    fail_open: Callable[[Any], Message] | None = None
    streaming: bool = False  # a server stream (ingest deadline), else unary


ROUTES: dict[str, Route] = {
    "Search": Route(
        "retrieval", "Search", rpb.SearchRequest, gpb.GatewayServiceSearchResponse,
        check.check_search, fail_open=no_hits,
    ),
    "IngestDocuments": Route(
        "retrieval", "IngestDocuments", rpb.IngestDocumentsRequest,
        gpb.GatewayServiceIngestDocumentsResponse, check.check_ingest, streaming=True,
    ),
    "DeleteDocument": Route(
        "retrieval", "DeleteDocument", rpb.DeleteDocumentRequest,
        gpb.GatewayServiceDeleteDocumentResponse, check.check_delete,
    ),
    "UpdateDocumentAcl": Route(
        "retrieval", "UpdateDocumentAcl", rpb.UpdateDocumentAclRequest,
        gpb.GatewayServiceUpdateDocumentAclResponse, check.check_update_acl,
    ),
    "AskSql": Route(
        "sql", "AskQuestion", spb.AskQuestionRequest, gpb.GatewayServiceAskSqlResponse,
        check.check_ask_sql,
    ),
    "RunSqlIntent": Route(
        "sql", "RunIntent", spb.RunIntentRequest, gpb.GatewayServiceRunSqlIntentResponse,
        check.check_run_intent,
    ),
    "ValidateSql": Route(
        "sql", "ValidateSql", spb.ValidateSqlRequest, gpb.GatewayServiceValidateSqlResponse,
        check.check_validate_sql,
    ),
    "DescribeSchema": Route(
        "sql", "DescribeSchema", spb.DescribeSchemaRequest,
        gpb.GatewayServiceDescribeSchemaResponse, check.check_describe,
    ),
    "SubmitSqlFeedback": Route(
        "sql", "SubmitFeedback", spb.SubmitFeedbackRequest,
        gpb.GatewayServiceSubmitSqlFeedbackResponse, check.check_sql_feedback,
    ),
    "TeachSql": Route(
        "sql", "TeachSql", spb.TeachSqlRequest, gpb.GatewayServiceTeachSqlResponse,
        check.check_teach_sql,
    ),
    "ListConfirmedPairs": Route(
        "sql", "ListConfirmedPairs", spb.ListConfirmedPairsRequest,
        gpb.GatewayServiceListConfirmedPairsResponse, check.check_list_pairs,
    ),
    "DeleteConfirmedPair": Route(
        "sql", "DeleteConfirmedPair", spb.DeleteConfirmedPairRequest,
        gpb.GatewayServiceDeleteConfirmedPairResponse, check.check_delete_pair,
    ),
}  # fmt: skip
