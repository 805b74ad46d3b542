"""Walking a parsed statement as Postgres reads it: identifiers folded as it folds them,
and table references scope by scope (a CTE name shadows a table only where Postgres
resolves the name to the CTE). Shared by the read-only gate's checks and the access
policy's independent check, which must agree on what a statement reads; and the
conditions a clause ANDs together, read apart by the verifier and by the results'
evidence columns alike."""

from __future__ import annotations

from services.sql.tree._conditions import conjuncts
from services.sql.tree._scopes import EXPR, children, ident, scoped_tables

__all__ = ["EXPR", "children", "conjuncts", "ident", "scoped_tables"]
