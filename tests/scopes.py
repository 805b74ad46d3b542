"""The key scope each public RPC needs, written out by hand from docs/api.md ("Keys do
what their scopes allow"), never read from the production mapping.

``gateway._server.RPC_SCOPES`` is compared with this table both ways
(``tests/unit/gateway/test_rpc_scopes.py``), and the contract tests call every RPC with a
key holding every scope but the one named here (``tests/contract``), so a mapping that
is downgraded, upgraded or missing an RPC fails instead of agreeing with itself.
"""

from __future__ import annotations

PINNED_RPC_SCOPES: dict[str, str] = {
    # Reading and asking (the default scope of a new key).
    "Ask": "ask",
    "StreamAsk": "ask",
    "Search": "ask",
    "AskSql": "ask",
    "RunSqlIntent": "ask",
    "ValidateSql": "ask",
    "DescribeSchema": "ask",
    "ListConfirmedPairs": "ask",
    "ListConversations": "ask",
    "DeleteConversation": "ask",
    "GetCaller": "ask",
    # Changing the tenant's documents.
    "IngestDocuments": "ingest",
    "UploadDocument": "ingest",
    "DeleteDocument": "ingest",
    "UpdateDocumentAcl": "ingest",
    # Changing what other users' answers reuse.
    "SubmitSqlFeedback": "teach",
    "TeachSql": "teach",
    "DeleteConfirmedPair": "teach",
    # Operator work through the API.
    "ListAuditEvents": "admin",
}

# The public RPCs an ``act_as`` key may call without naming a principal: operator work
# that is about no person's data (listing the audit trail), and asking who the key is.
# Every other RPC reads or changes what some person may see.
# ``gateway._server.PRINCIPAL_FREE_RPCS`` is compared with it, and the contract tests call
# every other RPC without a principal.
PINNED_PRINCIPAL_FREE: frozenset[str] = frozenset({"ListAuditEvents", "GetCaller"})
