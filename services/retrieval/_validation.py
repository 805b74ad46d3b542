"""Input rules shared by the RPCs: tenant ids, document ids and metadata objects."""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Sequence
from typing import Any

from services.common import FieldViolation, InvalidArgument, control_character_problem

_TENANT_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
MAX_DOCUMENT_ID_CHARS = 256
MAX_METADATA_BYTES = 16 * 1024
MAX_METADATA_DEPTH = 8
# A document ACL: at most this many principals and this many groups, each a name of at
# most this many characters (the principal headers allow ids of 256, groups of 128).
MAX_ACL_ENTRIES = 256
MAX_ACL_NAME_CHARS = 256


def check_tenant_id(tenant_id: str) -> None:
    """INVALID_ARGUMENT naming ``tenant_id`` unless it is a well-formed tenant id."""
    if not tenant_id:
        raise InvalidArgument.field("tenant_id", "is required")
    if not _TENANT_ID.match(tenant_id):
        raise InvalidArgument.field(
            "tenant_id",
            "must be 1-63 characters of a-z, 0-9, '-' and '_', starting with a letter or digit",
        )


def document_id_problem(document_id: str) -> str | None:
    """Why ``document_id`` is unacceptable, or None."""
    if not document_id:
        return "is required"
    if len(document_id) > MAX_DOCUMENT_ID_CHARS:
        return f"must be at most {MAX_DOCUMENT_ID_CHARS} characters, got {len(document_id)}"
    if any(unicodedata.category(c) in ("Cc", "Cf") for c in document_id):
        return "must not contain control characters"
    return None


def check_document_id(document_id: str, field: str = "document_id") -> None:
    problem = document_id_problem(document_id)
    if problem:
        raise InvalidArgument.field(field, problem)


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


def _problem_in(value: Any) -> str | None:
    if isinstance(value, float) and not math.isfinite(value):
        return "numbers must be finite"
    if isinstance(value, dict):
        for key, item in value.items():
            if not key:
                return "keys must not be empty"
            problem = _problem_in(item)
            if problem:
                return problem
    if isinstance(value, list):
        for item in value:
            problem = _problem_in(item)
            if problem:
                return problem
    return None


def metadata_problem(metadata: dict[str, Any]) -> str | None:
    """Why a metadata object is unacceptable (size, depth, empty key, non-finite), or None."""
    problem = _problem_in(metadata)
    if problem:
        return problem
    depth = _depth(metadata)
    if depth > MAX_METADATA_DEPTH:
        return f"must be at most {MAX_METADATA_DEPTH} levels deep, got {depth}"
    size = len(json.dumps(metadata, separators=(",", ":"), ensure_ascii=False).encode())
    if size > MAX_METADATA_BYTES:
        return f"must be at most {MAX_METADATA_BYTES} bytes serialised, got {size}"
    return None


def acl_violations(
    prefix: str, principals: Sequence[str], groups: Sequence[str]
) -> list[FieldViolation]:
    """What is wrong with an ACL's lists, each naming its entry (``acl.groups[0]``):
    at most 256 entries per list, each non-blank, at most 256 characters, no control
    characters. A blank or odd name would match nobody; refusing it says so at once."""
    found: list[FieldViolation] = []
    for name, values in (("principals", principals), ("groups", groups)):
        path = f"{prefix}.{name}"
        if len(values) > MAX_ACL_ENTRIES:
            found.append(
                FieldViolation(
                    path, f"must hold at most {MAX_ACL_ENTRIES} entries, got {len(values)}"
                )
            )
            continue
        for position, value in enumerate(values):
            problem: str | None = None
            if not value.strip():
                problem = "must not be empty or blank"
            elif len(value) > MAX_ACL_NAME_CHARS:
                problem = f"must be at most {MAX_ACL_NAME_CHARS} characters, got {len(value)}"
            else:
                problem = control_character_problem(value)
            if problem:
                found.append(FieldViolation(f"{path}[{position}]", problem))
    return found
