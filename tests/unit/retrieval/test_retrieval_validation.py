"""Request validation, page tokens and settings: every rule names its field or variable."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from services.common import InvalidArgument, Principal, SettingsError, current_principal
from services.retrieval import (
    DocumentAcl,
    DocumentInput,
    IngestRequest,
    RedactionKind,
    RetrievalSettings,
    SearchMode,
    SearchQuery,
)
from services.retrieval._acl import readable_by_caller, reader_settings
from services.retrieval._documents import decode_page_token, encode_page_token
from services.retrieval._ingest import (
    check_ingest_request,
    derive_document_id,
    document_violations,
)
from services.retrieval._search import resolve_query
from services.retrieval._settings import cpu_flags
from services.retrieval._validation import acl_violations

SETTINGS = RetrievalSettings(max_batch_documents=3, max_document_chars=100)


def _field(exc: pytest.ExceptionInfo[InvalidArgument]) -> str:
    return exc.value.violations[0].field


def test_search_defaults():
    resolved = resolve_query(SearchQuery("acme", "renewal"), SETTINGS)
    assert (resolved.mode, resolved.top_k, resolved.depth, resolved.ef_search) == (
        SearchMode.HYBRID, 10, 50, 200,
    )  # fmt: skip
    deep = resolve_query(SearchQuery("acme", "q", top_k=80, mode=3), SETTINGS)
    assert (deep.mode, deep.depth) == (SearchMode.SPARSE, 80)


@pytest.mark.parametrize(
    ("query", "field"),
    [
        (SearchQuery("", "q"), "tenant_id"),
        (SearchQuery("Acme", "q"), "tenant_id"),
        (SearchQuery("a" * 64, "q"), "tenant_id"),
        (SearchQuery("acme", " "), "query"),
        (SearchQuery("acme", "q" * 2001), "query"),
        (SearchQuery("acme", "q", mode=9), "mode"),
        (SearchQuery("acme", "q", top_k=101), "top_k"),
        (SearchQuery("acme", "q", candidate_depth=1001), "candidate_depth"),
        (SearchQuery("acme", "q", top_k=20, candidate_depth=19), "candidate_depth"),
        (SearchQuery("acme", "q", ef_search=-1), "ef_search"),
        (SearchQuery("acme", "q", document_ids=("d",) * 1001), "filter.document_ids"),
        (SearchQuery("acme", "q", metadata={"": 1}), "filter.metadata"),
        (SearchQuery("acme", "q", min_score=float("nan")), "min_score"),
        (SearchQuery("acme", "renewal\x00risk"), "query"),
        (SearchQuery("acme", "q", categories=("ok", "a\x00b")), "filter.categories[1]"),
        (SearchQuery("acme", "q", categories=("a\nb",)), "filter.categories[0]"),
        (SearchQuery("acme", "q", document_ids=("d\x1b",)), "filter.document_ids[0]"),
        (SearchQuery("acme", "q", metadata={"team": "a\x00"}), "filter.metadata.team"),
        (SearchQuery("acme", "q", metadata={"te\x00am": "a"}), "filter.metadata"),
    ],
)
def test_search_limits_name_the_field(query, field):
    with pytest.raises(InvalidArgument) as exc:
        resolve_query(query, SETTINGS)
    assert _field(exc) == field


@pytest.mark.parametrize(
    ("request_", "field", "reason"),
    [
        (IngestRequest("", (DocumentInput(text="x"),)), "tenant_id", "INVALID_ARGUMENT"),
        (IngestRequest("acme", ()), "documents", "INVALID_ARGUMENT"),
        (IngestRequest("acme", (DocumentInput(text="x"),) * 4), "documents", "BATCH_TOO_LARGE"),
        (
            IngestRequest("acme", (DocumentInput(text="x"),), keep_kinds=(20, 4)),
            "redaction_policy.keep_kinds[1]",
            "INVALID_ARGUMENT",
        ),
        (
            IngestRequest("acme", (DocumentInput(text="x"),), keep_kinds=(0,)),
            "redaction_policy.keep_kinds[0]",
            "INVALID_ARGUMENT",
        ),
    ],
)
def test_ingest_call_checks(request_, field, reason):
    with pytest.raises(InvalidArgument) as exc:
        check_ingest_request(request_, SETTINGS)
    assert (_field(exc), exc.value.reason) == (field, reason)


def test_ingest_policy_defaults_to_the_configured_one():
    request = IngestRequest("acme", (DocumentInput(text="x"),))
    assert check_ingest_request(request, SETTINGS) == frozenset()
    configured = RetrievalSettings(default_keep_kinds=frozenset({RedactionKind.IP_ADDRESS}))
    assert check_ingest_request(request, configured) == {RedactionKind.IP_ADDRESS}
    explicit = IngestRequest("acme", (DocumentInput(text="x"),), keep_kinds=(20,))
    assert check_ingest_request(explicit, configured) == {RedactionKind.EMAIL_ADDRESS}


@pytest.mark.parametrize(
    ("doc", "reason", "fields"),
    [
        (DocumentInput(document_id="ok", text="fine"), "", []),
        (DocumentInput(uri="file:///a", text="fine"), "", []),
        (DocumentInput(text="no id"), "INVALID_ARGUMENT", ["documents[2].document_id"]),
        (DocumentInput(document_id="a\tb", text="x"), "INVALID_ARGUMENT",
         ["documents[2].document_id"]),
        (DocumentInput(document_id="d", text=" \n"), "EMPTY_TEXT", ["documents[2].text"]),
        (DocumentInput(document_id="d", text="x" * 101), "DOCUMENT_TOO_LARGE",
         ["documents[2].text"]),
        (DocumentInput(document_id="d", text="x", metadata={"a": {"b": {"c": {"d": {"e": {
            "f": {"g": {"h": {"i": 1}}}}}}}}}), "INVALID_METADATA", ["documents[2].metadata"]),
        (DocumentInput(document_id="d", text="x", metadata={"k": "v" * 17000}),
         "INVALID_METADATA", ["documents[2].metadata"]),
        (DocumentInput(document_id="d", text="x", content_type=5), "INVALID_ARGUMENT",
         ["documents[2].content_type"]),
        (DocumentInput(document_id="", text=""), "INVALID_ARGUMENT",
         ["documents[2].document_id", "documents[2].text"]),
        # control characters: none in names, layout only in free text (issue 46)
        (DocumentInput(document_id="d", text="x", uri="file:///a\x00"), "INVALID_CHARACTER",
         ["documents[2].uri"]),
        (DocumentInput(document_id="d", text="x", category="a\nb", title="t\x1b[31m"),
         "INVALID_CHARACTER", ["documents[2].title", "documents[2].category"]),
        (DocumentInput(document_id="d", text="x", metadata={"k\x00": "v"}), "INVALID_CHARACTER",
         ["documents[2].metadata"]),
        (DocumentInput(document_id="d", text="x", metadata={"k": ["a", "b\x00"]}),
         "INVALID_CHARACTER", ["documents[2].metadata.k[1]"]),
        # a body is cleaned at ingest instead (issue 48), never refused for a stray NUL
        (DocumentInput(document_id="d", text="a\x00b"), "", []),
        (DocumentInput(document_id="d", text="page\fbreak\r\n\ttab", metadata={"k": "a\nb"}),
         "", []),
    ],
)  # fmt: skip
def test_document_rules(doc, reason, fields):
    found_reason, violations = document_violations(2, doc, SETTINGS)
    assert (found_reason, [v.field for v in violations]) == (reason, fields)


def test_derived_ids_are_stable_and_distinct():
    assert derive_document_id("file:///a") == derive_document_id("file:///a")
    assert derive_document_id("file:///a") != derive_document_id("file:///b")


def test_page_tokens_round_trip_and_are_bound_to_tenant_and_filter():
    moment = datetime(2026, 5, 1, 12, 30, 15, 123456, tzinfo=UTC)
    token = encode_page_token("acme", ["policy", "guide"], moment, "doc-7")
    assert decode_page_token(token, "acme", ["guide", "policy"]) == (moment, "doc-7")
    for tenant, categories, bad in (
        ("other", ["policy", "guide"], token),
        ("acme", ["policy"], token),
        ("acme", ["policy", "guide"], token[:-3]),
        ("acme", [], "!!!"),
    ):
        with pytest.raises(InvalidArgument) as exc:
            decode_page_token(bad, tenant, categories)
        assert (_field(exc), exc.value.reason) == ("page_token", "INVALID_PAGE_TOKEN")


def test_settings_from_env():
    settings = RetrievalSettings.from_env({})
    assert settings == RetrievalSettings()
    custom = RetrievalSettings.from_env(
        {
            "EMBEDDING_ADDR": "embed:1",
            "RETRIEVAL_HNSW": "OFF",
            "RETRIEVAL_HNSW_M": "24",
            "RETRIEVAL_REDACTION_KEEP": "email_address, REDACTION_KIND_IP_ADDRESS",
            "RETRIEVAL_BM25_K1": "0.9",
            "RETRIEVAL_BM25_B": "0.4",
            "RETRIEVAL_BM25_K3": "0",
            "RETRIEVAL_SPARSE_MIN_SHARE": "0",
            "RETRIEVAL_SPARSE_TOP_GAP": "2",
            "RETRIEVAL_SPARSE_TOP_BOOST": "1",
        }
    )
    assert (custom.embedding_addr, custom.hnsw, custom.hnsw_m) == ("embed:1", "off", 24)
    assert (custom.bm25_k1, custom.bm25_b, custom.bm25_k3) == (0.9, 0.4, 0.0)
    assert (custom.sparse_min_share, custom.sparse_top_gap, custom.sparse_top_boost) == (0, 2, 1)
    assert custom.default_keep_kinds == {RedactionKind.EMAIL_ADDRESS, RedactionKind.IP_ADDRESS}


@pytest.mark.parametrize(
    ("env", "variable"),
    [
        ({"RETRIEVAL_HNSW": "maybe"}, "RETRIEVAL_HNSW"),
        ({"RETRIEVAL_HNSW_M": "1"}, "RETRIEVAL_HNSW_M"),
        ({"RETRIEVAL_EF_SEARCH": "5000"}, "RETRIEVAL_EF_SEARCH"),
        ({"RETRIEVAL_RERANK_WEIGHT": "2"}, "RETRIEVAL_RERANK_WEIGHT"),
        ({"RETRIEVAL_DENSE_WEIGHT": "nan"}, "RETRIEVAL_DENSE_WEIGHT"),
        ({"RETRIEVAL_BM25_B": "1.5"}, "RETRIEVAL_BM25_B"),
        ({"RETRIEVAL_BM25_K1": "-1"}, "RETRIEVAL_BM25_K1"),
        ({"RETRIEVAL_SPARSE_MIN_SHARE": "2"}, "RETRIEVAL_SPARSE_MIN_SHARE"),
        ({"RETRIEVAL_SPARSE_TOP_GAP": "0.5"}, "RETRIEVAL_SPARSE_TOP_GAP"),
        ({"RETRIEVAL_REDACTION_KEEP": "API_KEY"}, "RETRIEVAL_REDACTION_KEEP"),
        ({"RETRIEVAL_CHUNK_CHARS": "400", "RETRIEVAL_CHUNK_OVERLAP_CHARS": "300"},
         "RETRIEVAL_CHUNK_OVERLAP_CHARS"),
    ],
)  # fmt: skip
def test_bad_settings_name_the_variable(env, variable):
    with pytest.raises(SettingsError, match=variable):
        RetrievalSettings.from_env(env)


def test_hnsw_auto_is_off_only_for_the_embedded_server_without_avx512():
    auto = RetrievalSettings()
    assert auto.hnsw_enabled(embedded_database=False, cpu_flags=frozenset({"avx2"}))
    assert not auto.hnsw_enabled(embedded_database=True, cpu_flags=frozenset({"avx2"}))
    assert auto.hnsw_enabled(embedded_database=True, cpu_flags=frozenset({"avx512f"}))
    assert auto.hnsw_enabled(embedded_database=True, cpu_flags=None)
    assert auto.hnsw_enabled(
        embedded_database=True, cpu_flags=frozenset({"avx2"}), portable_pgvector=True
    )
    assert RetrievalSettings(hnsw="on").hnsw_enabled(embedded_database=True, cpu_flags=None)
    assert not RetrievalSettings(hnsw="off").hnsw_enabled(
        embedded_database=False, cpu_flags=frozenset({"avx512f"})
    )


def test_cpu_flags_reads_cpuinfo(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor : 0\nflags\t\t: fpu avx2 avx512f\n")
    assert cpu_flags(str(info)) == frozenset({"fpu", "avx2", "avx512f"})
    assert cpu_flags(str(tmp_path / "missing")) is None


# -- document ACLs ----------------------------------------------------------------------


def test_acl_violations_name_each_bad_entry():
    found = acl_violations("documents[2].acl", ["alice", " ", "x" * 257], ["ok", "a\x1b"])
    assert [v.field for v in found] == [
        "documents[2].acl.principals[1]",
        "documents[2].acl.principals[2]",
        "documents[2].acl.groups[1]",
    ]
    assert acl_violations("acl", ["alice"], ["sales", "Jürgen's team"]) == []
    [too_many] = acl_violations("acl", [f"p{i}" for i in range(257)], [])
    assert too_many.field == "acl.principals" and "256" in too_many.description


def test_an_acl_naming_nobody_is_the_whole_tenant_and_equal_rights_compare_equal():
    assert DocumentAcl.of([], []) is None
    assert DocumentAcl.of(["b", "a", "b"], ["hr"]) == DocumentAcl(("a", "b"), ("hr",))
    acl = DocumentAcl.of(groups=["hr"])
    assert acl is not None
    assert acl.allows("bob", {"hr"}) and not acl.allows("hr", set())


def test_the_reader_is_the_requests_principal_and_no_principal_is_the_full_view():
    assert reader_settings() == ("", [], "on")
    token = current_principal.set(Principal.of("carol", ["ops", "field"]))
    try:
        assert reader_settings() == ("carol", ["field", "ops"], "off")
        assert not readable_by_caller(DocumentAcl.of(groups=["hr"]))
        assert readable_by_caller(DocumentAcl.of(groups=["ops"]))
        assert readable_by_caller(None)
    finally:
        current_principal.reset(token)
    assert readable_by_caller(DocumentAcl.of(groups=["hr"]))
