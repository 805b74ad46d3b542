"""Whose request the SQL service's memos serve: one tenant's work never warms another's.

The gate remembers its verdicts, the runner the texts Postgres accepted, the offline
generator its readings of a question: each saves milliseconds on a statement or a
question asked again (a dashboard's, a conversation's follow-up). Shared by every tenant
on a database, that saving is a clock another tenant can read: a statement or question
answered faster than a fresh one was asked by someone else lately (issue 46 found the
same channel in the embedding service's query cache). Each memo's key therefore starts
with the tenant of the request, set once per request when its tenant is checked
(``SqlEngine.check_tenant``) and read where the memos are; a request task (grpc.aio runs
each call in its own) sees only its own.
"""

from __future__ import annotations

import contextvars

_SCOPE: contextvars.ContextVar[str] = contextvars.ContextVar("tandem_sql_memo_scope", default="")


def scope_memos(tenant: str, view: str = "") -> None:
    """Key the memos the rest of this request reads and fills by ``tenant`` and, for a
    principal, by ``view`` (its canonical form): a principal's reading of a question or
    verdict (with its own hidden columns and filters) is never another's."""
    _SCOPE.set(f"{tenant}\x1f{view}" if view else tenant)


def memo_scope() -> str:
    """The current request's tenant for memo keys ("" outside a request)."""
    return _SCOPE.get()
