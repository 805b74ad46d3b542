"""Gateway logic without a network: edge validation, message re-parsing between the public
and internal contracts, error relay, bearer parsing and settings."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2

from gateway import GatewaySettings, Limits, key_pepper
from gateway import _validation as check
from gateway._admission import bearer_token, recent_key
from gateway._relay import RelayedError, relay, reparse, to_internal, unreachable
from gateway._routes import no_hits
from gateway._server import server_settings_for, unanswered
from services.common import (
    InvalidArgument,
    ServerSettings,
    SettingsError,
    Unauthenticated,
    status_for,
)
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import retrieval_service_pb2 as rpb
from tandem.v1 import router_service_pb2 as qpb
from tandem.v1 import sql_service_pb2 as spb

LIMITS = Limits()


def _fields(exc: pytest.ExceptionInfo[InvalidArgument]) -> list[str]:
    return [v.field for v in exc.value.violations]


# -- validation -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("request_", "fields"),
    [
        (gpb.GatewayServiceAskRequest(), ["question"]),
        (gpb.GatewayServiceAskRequest(question="   "), ["question"]),
        (gpb.GatewayServiceAskRequest(question="x" * 4001), ["question"]),
        (
            gpb.GatewayServiceAskRequest(
                question="q",
                mode=7,  # type: ignore[arg-type]
                options=qpb.AskOptions(
                    top_k=-1,
                    max_tool_calls=13,
                    max_rows=1001,
                    search_mode=5,  # type: ignore[arg-type]
                    search_filter=rpb.SearchFilter(document_ids=["a", ""]),
                ),
            ),
            [
                "options.top_k",
                "options.max_tool_calls",
                "options.max_rows",
                "options.search_filter.document_ids[1]",
                "mode",
                "options.search_mode",
            ],
        ),
    ],
)
def test_ask_validation_names_every_field(request_, fields):
    with pytest.raises(InvalidArgument) as err:
        check.check_ask(request_, LIMITS)
    assert _fields(err) == fields


def test_a_valid_ask_passes():
    # The longest question allowed passes; one character more names the field.
    check.check_ask(gpb.GatewayServiceAskRequest(question="x" * 4000), LIMITS)
    check.check_ask(gpb.GatewayServiceStreamAskRequest(question="q", mode=qpb.ASK_MODE_SQL), LIMITS)
    with pytest.raises(InvalidArgument) as err:
        check.check_ask(gpb.GatewayServiceAskRequest(question="x" * 4001), LIMITS)
    assert _fields(err) == ["question"]


def test_reasons_say_what_kind_of_violation_it_is():
    with pytest.raises(InvalidArgument) as err:
        check.check_ask(gpb.GatewayServiceAskRequest(question="x" * 4001), LIMITS)
    assert err.value.reason == "FIELD_TOO_LONG"
    with pytest.raises(InvalidArgument) as err:
        check.check_search(gpb.GatewayServiceSearchRequest(), LIMITS)
    assert err.value.reason == "FIELD_REQUIRED"
    status = status_for(err.value)
    assert status.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    bad = error_details_pb2.BadRequest()
    assert status.details[0].Unpack(bad) and bad.field_violations[0].field == "query"


def test_search_limits_and_nan():
    request = gpb.GatewayServiceSearchRequest(
        query="q", top_k=101, ef_search=1001, min_score=float("nan")
    )
    with pytest.raises(InvalidArgument) as err:
        check.check_search(request, LIMITS)
    assert _fields(err) == ["top_k", "ef_search", "min_score"]


def test_intent_validation_walks_nested_enums():
    request = gpb.GatewayServiceRunSqlIntentRequest(
        intent=spb.SqlIntent(
            kind=spb.INTENT_KIND_LIST,
            table="companies",
            filters=[spb.IntentFilter(column="name", op=99)],  # type: ignore[arg-type]
            group_by=[spb.IntentGroup(column="x", time_grain=42)],  # type: ignore[arg-type]
        )
    )
    with pytest.raises(InvalidArgument) as err:
        check.check_run_intent(request, LIMITS)
    assert _fields(err) == ["intent.filters[0].op", "intent.group_by[0].time_grain"]


def test_ingest_checks_the_batch_not_each_document():
    one_bad = gpb.GatewayServiceIngestDocumentsRequest(
        documents=[rpb.DocumentInput(document_id="", content_type=9)]  # type: ignore[arg-type]
    )
    check.check_ingest(one_bad, LIMITS)  # the retrieval service fails that document alone
    too_many = gpb.GatewayServiceIngestDocumentsRequest(
        documents=[rpb.DocumentInput(document_id=str(i)) for i in range(3)]
    )
    with pytest.raises(InvalidArgument) as err:
        check.check_ingest(too_many, Limits(max_batch_documents=2))
    assert _fields(err) == ["documents"] and err.value.reason == "BATCH_TOO_LARGE"
    unknown_kind = gpb.GatewayServiceIngestDocumentsRequest(
        documents=[rpb.DocumentInput(document_id="d")],
        redaction_policy=rpb.RedactionPolicy(keep_kinds=[20, 77]),  # type: ignore[list-item]
    )
    with pytest.raises(InvalidArgument) as err:
        check.check_ingest(unknown_kind, LIMITS)
    assert _fields(err) == ["redaction_policy.keep_kinds[1]"]


def test_other_rpcs_required_and_sizes():
    cases: list[tuple[Any, Any, list[str]]] = [
        (check.check_ask_sql, gpb.GatewayServiceAskSqlRequest(database="x" * 257),
         ["database", "question"]),
        (check.check_validate_sql, gpb.GatewayServiceValidateSqlRequest(), ["sql"]),
        (check.check_delete, gpb.GatewayServiceDeleteDocumentRequest(), ["document_id"]),
        (check.check_run_intent, gpb.GatewayServiceRunSqlIntentRequest(), ["intent"]),
        (check.check_run_intent,
         gpb.GatewayServiceRunSqlIntentRequest(intent=spb.SqlIntent(limit=-1)),
         ["intent.kind", "intent.table", "intent.limit"]),
        (check.check_describe,
         gpb.GatewayServiceDescribeSchemaRequest(max_chars=-1, tables=["a", ""]),
         ["max_chars", "tables[1]"]),
    ]  # fmt: skip
    for validate, request, fields in cases:
        with pytest.raises(InvalidArgument) as err:
            validate(request, LIMITS)
        assert _fields(err) == fields, request


# -- crossing between the contracts ---------------------------------------------------


def test_requests_cross_by_bytes_with_the_verified_tenant():
    public = gpb.GatewayServiceSearchRequest(
        query="q", top_k=3, filter=rpb.SearchFilter(categories=["policy"]), rerank=True
    )
    internal = to_internal(public, rpb.SearchRequest, "acme")
    assert internal.tenant_id == "acme" and internal.query == "q" and internal.top_k == 3
    assert list(internal.filter.categories) == ["policy"] and internal.rerank


def test_a_smuggled_tenant_field_never_survives():
    smuggled = rpb.SearchRequest(tenant_id="victim", query="q").SerializeToString()
    public = gpb.GatewayServiceSearchRequest.FromString(smuggled)
    internal = to_internal(public, rpb.SearchRequest, "attacker")
    assert internal.tenant_id == "attacker"
    # Even before the tenant is set, the unknown field is gone.
    public = gpb.GatewayServiceSearchRequest.FromString(smuggled)
    public.DiscardUnknownFields()
    assert rpb.SearchRequest.FromString(public.SerializeToString()).tenant_id == ""


@pytest.mark.parametrize(
    ("public", "internal"),
    [
        (gpb.GatewayServiceAskRequest, qpb.AskRequest),
        (gpb.GatewayServiceStreamAskRequest, qpb.StreamAskRequest),
        (gpb.GatewayServiceSearchRequest, rpb.SearchRequest),
        (gpb.GatewayServiceAskSqlRequest, spb.AskQuestionRequest),
        (gpb.GatewayServiceRunSqlIntentRequest, spb.RunIntentRequest),
        (gpb.GatewayServiceValidateSqlRequest, spb.ValidateSqlRequest),
        (gpb.GatewayServiceIngestDocumentsRequest, rpb.IngestDocumentsRequest),
        (gpb.GatewayServiceDeleteDocumentRequest, rpb.DeleteDocumentRequest),
        (gpb.GatewayServiceDescribeSchemaRequest, spb.DescribeSchemaRequest),
        (gpb.GatewayServiceAskResponse, qpb.AskResponse),
        (gpb.GatewayServiceStreamAskResponse, qpb.StreamAskResponse),
        (gpb.GatewayServiceSearchResponse, rpb.SearchResponse),
        (gpb.GatewayServiceAskSqlResponse, spb.AskQuestionResponse),
        (gpb.GatewayServiceRunSqlIntentResponse, spb.RunIntentResponse),
        (gpb.GatewayServiceValidateSqlResponse, spb.ValidateSqlResponse),
        (gpb.GatewayServiceIngestDocumentsResponse, rpb.IngestDocumentsResponse),
        (gpb.GatewayServiceDeleteDocumentResponse, rpb.DeleteDocumentResponse),
        (gpb.GatewayServiceDescribeSchemaResponse, spb.DescribeSchemaResponse),
    ],
)
def test_public_messages_mirror_the_internal_ones_field_for_field(public, internal):
    """Every public field has the same number, name and type inside (tenant aside)."""
    inner = {f.number: f for f in internal.DESCRIPTOR.fields}
    for field in public.DESCRIPTOR.fields:
        mirrored = inner[field.number]
        assert (mirrored.name, mirrored.type) == (field.name, field.type), field.full_name
        if field.message_type is not None:
            assert mirrored.message_type.full_name == field.message_type.full_name


def test_responses_drop_fields_the_public_contract_lacks():
    answer = qpb.AskResponse(answer=qpb.Answer(text="hi", request_id="r"))
    data = answer.SerializeToString() + b"\xf8\x07\x01"  # an unknown field 127
    parsed = qpb.AskResponse.FromString(data)
    out = reparse(parsed, gpb.GatewayServiceAskResponse)
    assert out.answer.text == "hi" and out.SerializeToString() == answer.SerializeToString()


# -- errors from internal services ----------------------------------------------------


def _rpc_error(code: grpc.StatusCode, details: str, status: status_pb2.Status | None = None):
    trailing: Any = grpc.aio.Metadata()
    if status is not None:
        trailing.add("grpc-status-details-bin", status.SerializeToString())
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), trailing, details)


def test_rich_errors_pass_through_unchanged():
    bad = any_pb2.Any()
    bad.Pack(
        error_details_pb2.BadRequest(
            field_violations=[error_details_pb2.BadRequest.FieldViolation(field="intent.table")]
        )
    )
    status = status_pb2.Status(code=3, message="intent.table: unknown table", details=[bad])
    error = relay(_rpc_error(grpc.StatusCode.INVALID_ARGUMENT, status.message, status), "sql")
    assert isinstance(error, RelayedError)
    sent = status_for(error)
    assert sent.code == 3 and sent.message == status.message
    assert list(sent.details) == list(status.details)


def test_transport_errors_never_leak_addresses():
    down = _rpc_error(
        grpc.StatusCode.UNAVAILABLE,
        "failed to connect to all addresses; last error: ipv4:10.1.2.3:50055: refused",
    )
    assert unreachable(down)
    error = relay(down, "sql")
    sent = status_for(error)
    assert sent.code == grpc.StatusCode.UNAVAILABLE.value[0]
    assert "10.1.2.3" not in sent.message and "sql" in sent.message
    assert error.reason == "DEPENDENCY_UNAVAILABLE" and error.metadata == {"service": "sql"}
    unknown = status_for(relay(_rpc_error(grpc.StatusCode.UNKNOWN, "boom at host-7"), "router"))
    assert unknown.code == grpc.StatusCode.INTERNAL.value[0] and "host-7" not in unknown.message
    late = relay(_rpc_error(grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded"), "sql")
    assert late.code == grpc.StatusCode.DEADLINE_EXCEEDED


def test_fail_open_responses_are_visibly_degraded():
    search = no_hits(gpb.GatewayServiceSearchRequest(mode=rpb.SEARCH_MODE_UNSPECIFIED))
    assert search.degraded and search.mode == rpb.SEARCH_MODE_HYBRID and not search.hits
    answer = unanswered(qpb.ASK_MODE_SQL)
    assert answer.degraded and answer.confidence == 0 and answer.disclaimer
    assert answer.mode == qpb.ASK_MODE_SQL and not answer.citations


KEY = "tdm_aaaaaaaaaaaaaaaa_" + "s" * 43


@pytest.mark.parametrize(
    ("metadata", "key"),
    [
        ((), None),
        ((("authorization", ""),), None),
        ((("authorization", f"Bearer {KEY}"),), KEY),
        ((("authorization", f"Bearer {KEY}".encode()),), KEY),
        ((("x-other", "1"), ("authorization", "Bearer k")), "k"),
    ],
)
def test_bearer_token(metadata, key):
    assert bearer_token(metadata) == key


@pytest.mark.parametrize(
    "header",
    [
        f"bearer {KEY}",
        f"BEARER {KEY}",
        f"Bearer  {KEY}",
        f" Bearer {KEY}",
        f"Bearer {KEY} ",
        f"Bearer\t{KEY}",
        KEY,
        "Bearer ",
        "Basic dXNlcjpwYXNz",
        f"Bearer {KEY}, Bearer {KEY}",
    ],
)
def test_every_other_spelling_is_unauthenticated_naming_the_form(header):
    with pytest.raises(Unauthenticated) as refused:
        bearer_token((("authorization", header),))
    assert refused.value.reason == "AUTHORIZATION_MALFORMED"
    assert "`authorization: Bearer <key>`" in str(refused.value)
    assert recent_key((("authorization", header),)) is None


def test_two_authorization_headers_are_unauthenticated():
    twice = (("authorization", f"Bearer {KEY}"), ("authorization", f"Bearer {KEY}"))
    with pytest.raises(Unauthenticated, match="more than one authorization header") as refused:
        bearer_token(twice)
    assert refused.value.reason == "AUTHORIZATION_MALFORMED"


# -- settings -------------------------------------------------------------------------


def test_settings_from_env():
    settings = GatewaySettings.from_env(
        {
            "ROUTER_ADDR": "router:1",
            "GATEWAY_RATE_PER_S": "2.5",
            "GATEWAY_BURST": "5",
            "GRPC_DEFAULT_DEADLINE_S": "12",
            "GATEWAY_MAX_QUESTION_CHARS": "100",
        }
    )
    assert settings.router_addr == "router:1" and settings.rate_per_s == 2.5
    assert settings.default_deadline_s == 12 and settings.server_deadline_s == 300
    assert settings.limits.max_question_chars == 100
    with pytest.raises(SettingsError, match="GATEWAY_BURST"):
        GatewaySettings.from_env({"GATEWAY_BURST": "0"})


def test_a_callers_deadline_is_capped_at_the_longest_the_internal_connections_cover():
    gateway = GatewaySettings.from_env({"GATEWAY_INGEST_DEADLINE_S": "120"})
    runtime = server_settings_for(ServerSettings.from_env("gateway", 50051, {}), gateway)
    assert runtime.max_deadline_s == runtime.default_deadline_s == 120.0
    # Every internal server reading the same variables keeps its calls that long.
    internal = ServerSettings.from_env("retrieval", 50053, {"GATEWAY_INGEST_DEADLINE_S": "120"})
    assert internal.connection_age_grace_s >= runtime.max_deadline_s


def test_the_key_memory_lasts_30_s_by_default_and_0_turns_it_off():
    assert GatewaySettings.from_env({}).key_cache_ttl_s == 30.0
    assert GatewaySettings.from_env({"GATEWAY_KEY_CACHE_TTL_S": "0"}).key_cache_ttl_s == 0.0
    with pytest.raises(SettingsError, match="GATEWAY_KEY_CACHE_TTL_S"):
        GatewaySettings.from_env({"GATEWAY_KEY_CACHE_TTL_S": "-1"})


def test_pepper_from_env_or_a_private_file(tmp_path: Path):
    assert key_pepper({"GATEWAY_KEY_PEPPER": "p" * 16}) == b"p" * 16
    with pytest.raises(SettingsError, match="GATEWAY_KEY_PEPPER"):
        key_pepper({"GATEWAY_KEY_PEPPER": "short"})
    env = {"TANDEM_DATA_DIR": str(tmp_path)}
    first = key_pepper(env)
    assert len(first) >= 32 and key_pepper(env) == first
    files = list(tmp_path.rglob("*pepper*"))
    assert len(files) == 1 and os.stat(files[0]).st_mode & 0o077 == 0
