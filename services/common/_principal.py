"""Principals: the end user a call is made for, inside a tenant.

A tenant's backend serves many people with different rights. An API key holding the
``act_as`` scope names, on every data call, the person it calls for — an id, groups and
attributes (``region=EMEA``) — in three request headers:

- ``x-tandem-principal``: the id (1 to 256 characters);
- ``x-tandem-principal-groups``: comma-separated group names;
- ``x-tandem-principal-attributes``: ``name=value`` pairs joined by ``&``
  (``application/x-www-form-urlencoded``, so a value may hold any character).

Metadata is ASCII: ids, groups and values are percent-decoded UTF-8 (RFC 3986), so
``J%C3%BCrgen`` is ``Jürgen``. Nothing here decides what a principal may read; the
retrieval service's row-level security, the SQL engine's row filters and the gateway's
conversation store do, each from ``current_principal``. The gateway signs the principal
into every tenant token it mints (``services.common._tenant_token``) and forwards the same
headers in canonical form; an internal service refuses headers that differ from the
signed principal (``services.common._mtls``), so no hop in between can widen or borrow a
view.
"""

from __future__ import annotations

import contextvars
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote_to_bytes

from services.common._errors import InvalidArgument
from services.common._text import control_character_problem

PRINCIPAL_HEADER = "x-tandem-principal"
GROUPS_HEADER = "x-tandem-principal-groups"
ATTRIBUTES_HEADER = "x-tandem-principal-attributes"
PRINCIPAL_HEADERS = (PRINCIPAL_HEADER, GROUPS_HEADER, ATTRIBUTES_HEADER)

MAX_ID_CHARS = 256
MAX_GROUPS = 64
MAX_GROUP_CHARS = 128
MAX_ATTRIBUTES = 32
MAX_ATTRIBUTE_VALUE_CHARS = 256
# The three headers together, percent-encoded as forwarded (``canonical``). gRPC refuses a
# call whose metadata passes 8 KiB (RESOURCE_EXHAUSTED, before any handler), and an
# internal call carries the headers and, in its tenant token, the principal again
# (base64): past this a principal within every other limit was admitted by the gateway
# and then refused on the internal hop, at random between gRPC's soft and hard limits.
MAX_ENCODED_CHARS = 2048
# Attribute names are referenced from SQL row filters ({principal.region}): identifiers.
_ATTRIBUTE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


@dataclass(frozen=True)
class Principal:
    """One end user: ``id``, the ``groups`` it belongs to and its ``attributes``.

    Hashable and ordered-independent (groups a frozenset, attributes sorted pairs), so
    equal principals key caches and tokens the same way.
    """

    id: str
    groups: frozenset[str] = frozenset()
    attributes: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(
        cls,
        principal_id: str,
        groups: Iterable[str] = (),
        attributes: Mapping[str, str] | None = None,
    ) -> Principal:
        """A principal from plain values, checked like the headers (INVALID_ARGUMENT)."""
        principal = cls(principal_id, frozenset(groups), tuple(sorted((attributes or {}).items())))
        _check(principal)
        return principal

    def attribute(self, name: str) -> str | None:
        for key, value in self.attributes:
            if key == name:
                return value
        return None

    @property
    def attribute_map(self) -> dict[str, str]:
        return dict(self.attributes)

    def headers(self) -> tuple[tuple[str, str], ...]:
        """The canonical headers: what the gateway forwards and signs."""
        out = [(PRINCIPAL_HEADER, _enc(self.id))]
        if self.groups:
            out.append((GROUPS_HEADER, ",".join(_enc(g) for g in sorted(self.groups))))
        if self.attributes:
            out.append((ATTRIBUTES_HEADER, "&".join(f"{k}={_enc(v)}" for k, v in self.attributes)))
        return tuple(out)

    def canonical(self) -> str:
        """One ASCII line naming exactly this principal (signed into tokens)."""
        return "\n".join(f"{name}:{value}" for name, value in self.headers())


def _enc(text: str) -> str:
    return quote(text, safe="")


def _dec(text: str, header: str) -> str:
    try:
        return unquote_to_bytes(text).decode("utf-8")
    except UnicodeDecodeError:
        raise _invalid(header, "is not percent-encoded UTF-8") from None


def _invalid(header: str, description: str) -> InvalidArgument:
    return InvalidArgument.field(header, description, reason="PRINCIPAL_INVALID")


def _check(principal: Principal) -> None:
    if not principal.id or not principal.id.strip():
        raise _invalid(PRINCIPAL_HEADER, "must name the principal (a non-blank id)")
    if len(principal.id) > MAX_ID_CHARS:
        raise _invalid(PRINCIPAL_HEADER, f"must be at most {MAX_ID_CHARS} characters")
    problem = control_character_problem(principal.id)
    if problem:
        raise _invalid(PRINCIPAL_HEADER, problem)
    if len(principal.groups) > MAX_GROUPS:
        raise _invalid(GROUPS_HEADER, f"must name at most {MAX_GROUPS} groups")
    for group in principal.groups:
        if not group.strip() or len(group) > MAX_GROUP_CHARS:
            raise _invalid(
                GROUPS_HEADER, f"group names are 1 to {MAX_GROUP_CHARS} non-blank characters"
            )
        problem = control_character_problem(group)
        if problem:
            raise _invalid(GROUPS_HEADER, problem)
    if len(principal.attributes) > MAX_ATTRIBUTES:
        raise _invalid(ATTRIBUTES_HEADER, f"must hold at most {MAX_ATTRIBUTES} attributes")
    for name, value in principal.attributes:
        if not _ATTRIBUTE_NAME.fullmatch(name):
            raise _invalid(
                ATTRIBUTES_HEADER,
                f"attribute name {name[:64]!r} must be an identifier (letters, digits, _)",
            )
        if len(value) > MAX_ATTRIBUTE_VALUE_CHARS:
            raise _invalid(
                ATTRIBUTES_HEADER,
                f"attribute {name!r} must be at most {MAX_ATTRIBUTE_VALUE_CHARS} characters",
            )
        problem = control_character_problem(value)
        if problem:
            raise _invalid(ATTRIBUTES_HEADER, f"attribute {name!r} {problem}")
    headers = principal.headers()
    if sum(len(name) + len(value) + 2 for name, value in headers) > MAX_ENCODED_CHARS:
        largest = max(headers, key=lambda header: len(header[1]))[0]
        raise _invalid(
            largest,
            f"the principal headers must total at most {MAX_ENCODED_CHARS} characters "
            "once percent-encoded (name fewer or shorter groups or attributes)",
        )


def _one(found: dict[str, list[str]], header: str) -> str | None:
    values = found.get(header)
    if not values:
        return None
    if len(values) > 1:
        raise _invalid(header, "must be sent once")
    return values[0]


def parse_principal(metadata: Iterable[tuple[str, Any]] | None) -> Principal | None:
    """The principal the headers in ``metadata`` name, or None when they name none;
    INVALID_ARGUMENT (reason PRINCIPAL_INVALID) naming the header for a malformed one,
    and for groups or attributes sent without an id (they would name nobody)."""
    found: dict[str, list[str]] = {}
    for name, value in metadata or ():
        if name in PRINCIPAL_HEADERS:
            text = value if isinstance(value, str) else bytes(value).decode("ascii", "replace")
            found.setdefault(name, []).append(text)
    if not found:
        return None
    raw_id = _one(found, PRINCIPAL_HEADER)
    raw_groups = _one(found, GROUPS_HEADER)
    raw_attributes = _one(found, ATTRIBUTES_HEADER)
    if raw_id is None:
        raise _invalid(
            PRINCIPAL_HEADER, f"is required when {GROUPS_HEADER} or {ATTRIBUTES_HEADER} is sent"
        )
    groups: set[str] = set()
    if raw_groups is not None and raw_groups.strip():
        for piece in raw_groups.split(","):
            groups.add(_dec(piece.strip(), GROUPS_HEADER))
    attributes: dict[str, str] = {}
    if raw_attributes is not None and raw_attributes.strip():
        for pair in raw_attributes.split("&"):
            name, sep, value = pair.partition("=")
            name = name.strip()
            if not sep:
                raise _invalid(ATTRIBUTES_HEADER, f"{pair[:64]!r} is not name=value")
            if name in attributes:
                raise _invalid(ATTRIBUTES_HEADER, f"attribute {name[:64]!r} is sent twice")
            attributes[name] = _dec(value.replace("+", " "), ATTRIBUTES_HEADER)
    principal = Principal(
        _dec(raw_id, PRINCIPAL_HEADER), frozenset(groups), tuple(sorted(attributes.items()))
    )
    _check(principal)
    return principal


# The principal the current request is made for (None: the tenant's full view, a service
# key's). Set by the internal servers from the request's headers (after the caller guard
# checked them against the signed token) and by the gateway once the key may act as one;
# read by the repositories and engines, and by the channels, which forward it.
current_principal: contextvars.ContextVar[Principal | None] = contextvars.ContextVar(
    "tandem_principal", default=None
)
