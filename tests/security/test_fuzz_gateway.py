"""Property-based fuzzing of every gateway RPC (hypothesis): random unicode, empty, huge,
negative and out-of-range values, unknown enum numbers, malformed filters, metadata and
raw bytes. Whatever arrives, the gateway answers OK or with an error that keeps the
error contract — never UNKNOWN or INTERNAL — and stays healthy.

Examples are derandomized (the same inputs every run) and few per RPC, so the suite
stays fast and stable in CI; raise FUZZ_EXAMPLES locally for a deeper run."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Any

import grpc
import pytest
from google.protobuf import struct_pb2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tandem.v1 import common_pb2 as cpb
from tandem.v1 import gateway_service_pb2 as gpb
from tandem.v1 import gateway_service_pb2_grpc as gpb_grpc
from tandem.v1 import retrieval_service_pb2 as rpb
from tandem.v1 import router_service_pb2 as qpb
from tandem.v1 import sql_service_pb2 as spb
from tests.faults.contract import assert_contract, decode
from tests.faults.inprocess import Stack, pg_url, stack
from tests.faults.procs import health

__all__ = ["pg_url", "stack"]

pytestmark = pytest.mark.integration

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "12"))
FUZZ = settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[
        # One stack serves every example on purpose (starting one per example is slow).
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)

# -- strategies --------------------------------------------------------------------------

INT32 = st.one_of(
    st.sampled_from([0, 1, -1, 50, 51, 100, 101, 1000, 1001, 2**31 - 1, -(2**31)]),
    st.integers(min_value=-(2**31), max_value=2**31 - 1),
)
ENUM = st.one_of(st.integers(min_value=0, max_value=8), st.integers(-(2**31), 2**31 - 1))


def huge(limit: int) -> st.SearchStrategy[str]:
    """A string just under, at and over ``limit`` characters (and far over it)."""
    return st.builds(
        lambda ch, n: ch * n,
        st.characters(),
        st.sampled_from([limit - 1, limit, limit + 1, limit * 10]),
    )


def text(limit: int) -> st.SearchStrategy[str]:
    return st.one_of(
        st.just(""),
        st.just("   "),
        st.text(max_size=40),
        st.text(alphabet=st.characters(codec="utf-8"), max_size=200),
        st.sampled_from(["\x00", "' OR 1=1 --", "<script>", "../../etc/passwd", "%s%n", "\u202e"]),
        huge(limit),
    )


NAMES = st.lists(text(256), max_size=4) | st.lists(st.just("x"), min_size=101, max_size=1002)
JSON_LEAF = st.one_of(
    st.none(), st.booleans(), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=30)
)
JSON = st.recursive(
    JSON_LEAF,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3)
    ),
    max_leaves=8,
)


def struct(value: dict[str, Any]) -> struct_pb2.Struct:
    out = struct_pb2.Struct()
    out.update(value)
    return out


STRUCT = st.builds(struct, st.dictionaries(st.text(max_size=20), JSON, max_size=4))
FILTER = st.builds(rpb.SearchFilter, categories=NAMES, document_ids=NAMES, metadata=STRUCT)
OPTIONS = st.builds(
    qpb.AskOptions,
    top_k=INT32,
    include_trajectory=st.booleans(),
    max_tool_calls=INT32,
    database=text(256),
    search_filter=FILTER,
    search_mode=ENUM,
    max_rows=INT32,
)


def sql_value(kind: str, value: Any) -> cpb.SqlValue:
    out = cpb.SqlValue()
    setattr(out, kind, value)
    return out


SQL_VALUE = st.one_of(
    st.builds(sql_value, st.just("string_value"), text(1000)),
    st.builds(sql_value, st.just("int_value"), st.integers(-(2**63), 2**63 - 1)),
    st.builds(sql_value, st.just("double_value"), st.floats()),
    st.builds(sql_value, st.just("bool_value"), st.booleans()),
    st.builds(sql_value, st.just("date_value"), st.text(max_size=20)),
    st.builds(sql_value, st.just("json_value"), st.text(max_size=50)),
    st.builds(sql_value, st.just("bytes_value"), st.binary(max_size=50)),
)
INTENT = st.builds(
    spb.SqlIntent,
    kind=ENUM,
    table=st.one_of(st.sampled_from(["companies", "opportunities", "contacts"]), text(256)),
    join_tables=NAMES,
    columns=NAMES,
    filters=st.lists(
        st.builds(
            spb.IntentFilter,
            column=st.one_of(st.sampled_from(["name", "industry", "amount"]), text(256)),
            op=ENUM,
            values=st.lists(SQL_VALUE, max_size=3),
        ),
        max_size=3,
    ),
    group_by=st.lists(st.builds(spb.IntentGroup, column=text(256), time_grain=ENUM), max_size=2),
    order_by=st.lists(
        st.builds(spb.IntentOrder, column=text(256), descending=st.booleans()), max_size=2
    ),
    limit=INT32,
    aggregate_function=ENUM,
    aggregate_column=text(256),
)
DOCUMENT = st.builds(
    rpb.DocumentInput,
    document_id=text(256),
    title=text(1000),
    uri=text(2000),
    category=text(256),
    metadata=STRUCT,
    text=st.one_of(st.text(max_size=300), st.just("")),
    content_type=ENUM,
    acl=st.builds(rpb.DocumentAcl, principals=NAMES, groups=NAMES),
)

REQUESTS: dict[str, st.SearchStrategy[Any]] = {
    "Ask": st.builds(gpb.GatewayServiceAskRequest, question=text(4000), mode=ENUM, options=OPTIONS),
    "StreamAsk": st.builds(
        gpb.GatewayServiceStreamAskRequest, question=text(4000), mode=ENUM, options=OPTIONS
    ),
    "Search": st.builds(
        gpb.GatewayServiceSearchRequest,
        query=text(2000),
        mode=ENUM,
        top_k=INT32,
        filter=FILTER,
        candidate_depth=INT32,
        ef_search=INT32,
        min_score=st.floats(),
        rerank=st.booleans(),
    ),
    "AskSql": st.builds(
        gpb.GatewayServiceAskSqlRequest, database=text(256), question=text(2000), max_rows=INT32
    ),
    "RunSqlIntent": st.builds(
        gpb.GatewayServiceRunSqlIntentRequest,
        database=st.one_of(st.just(""), text(256)),
        intent=INTENT,
        max_rows=INT32,
    ),
    "ValidateSql": st.builds(
        gpb.GatewayServiceValidateSqlRequest,
        database=text(256),
        sql=st.one_of(text(20_000), st.sampled_from(["SELECT 1", "SELECT * FROM companies"])),
    ),
    "IngestDocuments": st.builds(
        gpb.GatewayServiceIngestDocumentsRequest,
        documents=st.lists(DOCUMENT, max_size=3),
        dry_run=st.booleans(),
        redaction_policy=st.builds(rpb.RedactionPolicy, keep_kinds=st.lists(ENUM, max_size=3)),
    ),
    "DeleteDocument": st.builds(
        gpb.GatewayServiceDeleteDocumentRequest, document_id=text(256), allow_missing=st.booleans()
    ),
    "UpdateDocumentAcl": st.builds(
        gpb.GatewayServiceUpdateDocumentAclRequest,
        document_id=text(256),
        acl=st.builds(rpb.DocumentAcl, principals=NAMES, groups=NAMES),
        allow_missing=st.booleans(),
    ),
    "DescribeSchema": st.builds(
        gpb.GatewayServiceDescribeSchemaRequest,
        database=text(256),
        question=text(2000),
        max_chars=INT32,
        tables=NAMES,
    ),
}
STREAMING = {"StreamAsk", "IngestDocuments"}

# Call metadata: the tenant's key, none, or a mangled one, with random extra headers.
HEADER_KEY = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_.", min_size=1, max_size=20)
HEADER_VALUE = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=60)
EXTRA = st.lists(
    st.one_of(
        st.tuples(
            HEADER_KEY.filter(lambda k: not k.startswith("grpc") and k != "authorization"),
            HEADER_VALUE,
        ),
        st.tuples(HEADER_KEY.map(lambda k: f"x-{k}-bin"), st.binary(max_size=60)),
    ),
    max_size=3,
)
AUTH = st.sampled_from(["valid", "valid", "valid", "none", "empty", "basic", "mangled", "twice"])


def _auth(kind: str, key: str, junk: str) -> list[tuple[str, Any]]:
    bearer = ("authorization", f"Bearer {key}")
    return {
        "valid": [bearer],
        "none": [],
        "empty": [("authorization", "")],
        "basic": [("authorization", f"Basic {junk}")],
        "mangled": [("authorization", f"Bearer {key[:-3]}{junk[:3]}")],
        "twice": [("authorization", f"Bearer {junk}"), bearer],
    }[kind]


def _check(stack: Stack, call: Callable[[], Any]) -> None:
    """Make the call (blocking; streams are drained) and check how it ended."""
    try:
        result = call()
        if hasattr(result, "__next__"):
            for _ in result:
                pass
    except grpc.RpcError as exc:
        assert_contract(decode(exc), internal=tuple(stack.addresses.values()))


async def _in_thread(run: Callable[[], None]) -> None:
    """Hypothesis drives blocking calls from a worker thread while this event loop keeps
    serving the in-process stack."""
    await asyncio.to_thread(run)


@pytest.mark.parametrize("rpc", list(REQUESTS))
async def test_random_requests_never_fail_as_unknown_or_internal(stack: Stack, rpc: str):
    with grpc.insecure_channel(stack.addresses["gateway"]) as channel:
        method = getattr(gpb_grpc.GatewayServiceStub(channel), rpc)

        @FUZZ
        @given(request=REQUESTS[rpc], auth=AUTH, junk=HEADER_VALUE, extra=EXTRA)
        def one(request: Any, auth: str, junk: str, extra: list[tuple[str, Any]]) -> None:
            metadata = [*_auth(auth, stack.key, junk), *extra]
            _check(stack, lambda: method(request, metadata=metadata, timeout=30))

        await _in_thread(one)
    assert await health(stack.addresses["gateway"]) == "SERVING"
    reply = await stack.stub.ValidateSql(
        gpb.GatewayServiceValidateSqlRequest(sql="SELECT 1"), metadata=stack.metadata, timeout=10
    )
    assert reply.valid


async def test_random_bytes_never_fail_as_unknown_or_internal(stack: Stack):
    with grpc.insecure_channel(stack.addresses["gateway"]) as channel:

        @FUZZ
        @given(rpc=st.sampled_from(list(REQUESTS)), payload=st.binary(max_size=300))
        def one(rpc: str, payload: bytes) -> None:
            path = f"/tandem.v1.GatewayService/{rpc}"
            raw: Any = channel.unary_stream(path) if rpc in STREAMING else channel.unary_unary(path)
            _check(stack, lambda: raw(payload, metadata=stack.metadata, timeout=30))

        await _in_thread(one)
    assert await health(stack.addresses["gateway"]) == "SERVING"
