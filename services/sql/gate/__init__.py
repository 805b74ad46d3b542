"""The read-only gate in depth: the parse (``_gate``: one statement, a query, allowed
functions, known tables, values built within the result cap: ``_sizes``) and the
database-side layers (``_execute``: a READ ONLY transaction as a SELECT-only role, a
statement timeout, bounded sort and hash memory, row and size caps); statements
parsed once (``_parsing``), identifiers quoted as Postgres needs (``_names``), and
statements sent on the libpq connection in one pipeline, the repeated ones prepared under
names of our own (``_prepared``: also the answer memory's record).
"""

from __future__ import annotations

from services.sql.gate._dialects import DANGEROUS_FUNCTIONS, Dialect, DialectGate, to_dialect
from services.sql.gate._execute import (
    RESOURCE_LIMIT_REASON,
    FailureKind,
    GatedHost,
    Limits,
    ResultSet,
    Safeguards,
    StatementError,
    StatementRunner,
    memory_options,
    statement_budget,
)
from services.sql.gate._gate import GateRule, SqlGate, Verdict, Violation
from services.sql.gate._names import identifier
from services.sql.gate._parsing import parse_statements
from services.sql.gate._prepared import PreparedStatements, exchange
from services.sql.gate._scope import memo_scope, scope_memos

__all__ = [
    "DANGEROUS_FUNCTIONS",
    "RESOURCE_LIMIT_REASON",
    "Dialect",
    "DialectGate",
    "FailureKind",
    "GateRule",
    "GatedHost",
    "Limits",
    "PreparedStatements",
    "ResultSet",
    "Safeguards",
    "SqlGate",
    "StatementError",
    "StatementRunner",
    "Verdict",
    "Violation",
    "exchange",
    "identifier",
    "memo_scope",
    "memory_options",
    "parse_statements",
    "scope_memos",
    "statement_budget",
    "to_dialect",
]
