"""SQL access for principals (issue 47): per database, the admin's access policy
(``SQL_ACCESS_POLICIES``, ``_policy``) resolved against each catalog load and per
principal (``_view``), with the stored values each principal's own rows hold
(``_values``); row filters and hidden columns written into every statement and
checked by an independent walk of the tree that runs (``_enforce``); the request-facing
face of it (``_apply``): the catalog a principal sees and the statement that may run.
"""

from __future__ import annotations

from services.sql.access._apply import (
    Enforced,
    asking_view,
    bind,
    bound_policy,
    catalog_view,
    enforce,
)
from services.sql.access._enforce import Denial, canonical_select, check, hidden_named, rewrite
from services.sql.access._policy import (
    VARIABLE,
    AccessPolicy,
    PolicyError,
    RowFilter,
    load_access_policy,
    parse_access_policies,
)
from services.sql.access._sources import (
    ROW_SECURITY_KEY,
    SOURCES_KEY,
    read_row_security,
    read_view_sources,
)
from services.sql.access._values import ValueReader
from services.sql.access._view import BoundPolicy, View, restricted, substitute, view_key

__all__ = [
    "ROW_SECURITY_KEY",
    "SOURCES_KEY",
    "VARIABLE",
    "AccessPolicy",
    "BoundPolicy",
    "Denial",
    "Enforced",
    "PolicyError",
    "RowFilter",
    "ValueReader",
    "View",
    "asking_view",
    "bind",
    "bound_policy",
    "canonical_select",
    "catalog_view",
    "check",
    "enforce",
    "hidden_named",
    "load_access_policy",
    "parse_access_policies",
    "read_row_security",
    "read_view_sources",
    "restricted",
    "rewrite",
    "substitute",
    "view_key",
]
