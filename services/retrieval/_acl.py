"""Document ACLs and the reader they are checked against: the request's principal.

Postgres enforces the ACLs (migration 0009's row-level security reads the reader from
the transaction); this module says who the reader is (``reader_settings``, set by the
repository at the start of every transaction) and answers the one question Python asks
before writing: would the caller still be able to read what it is about to write?
"""

from __future__ import annotations

from services.common import current_principal
from services.retrieval._types import DocumentAcl

LOCKS_OUT_CALLER = (
    "must name the calling principal or one of its groups: a principal cannot write a "
    "document it could not read (a service key, with no principal, can)"
)


def reader_settings() -> tuple[str, list[str], str]:
    """(principal id, groups, full-view marker) for the transaction settings
    ``tandem.principal``, ``tandem.groups`` and ``tandem.full_view``.

    No principal is a service key's call, the tenant's full view ('on'); a principal
    is a restricted view ('off'): its id and groups are all that can open a restricted
    row. Row-level security fails closed, so a transaction that sets nothing sees no
    restricted row at all."""
    principal = current_principal.get()
    if principal is None:
        return "", [], "on"
    return principal.id, sorted(principal.groups), "off"


def readable_by_caller(acl: DocumentAcl | None) -> bool:
    """True when the request's reader may read a document with ``acl``."""
    principal = current_principal.get()
    if acl is None or principal is None:
        return True
    return acl.allows(principal.id, principal.groups)
