"""A database's access policy file (``SQL_ACCESS_POLICIES=name=path;...``), read at start
and checked against the catalog each time the catalog loads.

The file is JSON::

    {"row_filters": {
        "opportunities": {"filter": "region = {principal.region}",
                          "exempt_groups": ["sales_ops"]},
        "orders": "owner = {principal.id}"},
     "hidden": {"employees.salary": ["hr"], "payroll": ["hr"]},
     "roles": {"groups": {"hr": "warehouse_hr"}, "principals": {"alice": "warehouse_alice"}}}

``row_filters``: per table (``table`` or ``schema.table``), a boolean expression over that
table's own columns that every row a principal reads must pass; ``{principal.id}``,
``{principal.<attribute>}`` and ``{principal.groups}`` (a text array) are substituted as
quoted literals, never pasted as text. ``hidden``: a table or ``table.column`` readable
only by principals in one of the listed groups. ``roles``: the Postgres role a principal
(by id, else by group) runs its statements as (``SET LOCAL ROLE``), so the warehouse's
own row-level security applies; a principal mapped to none is refused.

A malformed file stops the service at start with a message naming the file and the key:
a policy silently half-loaded would show people rows they may not read.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from services.common import SettingsError

VARIABLE = "SQL_ACCESS_POLICIES"
MAX_FILTER_CHARS = 2000
MAX_ENTRIES = 1000
_KEYS = frozenset({"row_filters", "hidden", "roles"})
_FILTER_KEYS = frozenset({"filter", "exempt_groups"})
_PLACEHOLDER = re.compile(r"\{principal\.([A-Za-z_][A-Za-z0-9_.-]{0,62})\}")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]{0,62}(\.[A-Za-z_][A-Za-z0-9_$]{0,62}){0,2}$")
_ROLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_$-]{0,62}$")
# What a filter may be built of: comparisons over its table's columns and literals, no
# query, no function outside a few that cannot read anything else.
_FORBIDDEN_IN_FILTER: tuple[type[exp.Expr], ...] = (
    exp.Select,
    exp.Subquery,
    exp.SetOperation,
    exp.Table,
    exp.Star,
)
_FILTER_FUNCTIONS = frozenset(
    {"and", "or", "lower", "upper", "trim", "coalesce", "cast", "any", "all", "array"}
)


class PolicyError(SettingsError):
    """A policy file that is malformed, or names a table or column its database lacks."""


@dataclass(frozen=True)
class Placeholder:
    """One ``{principal.x}`` of a filter: ``id``, ``groups`` or an attribute's name."""

    name: str

    @property
    def attribute(self) -> str | None:
        return None if self.name in ("id", "groups") else self.name


@dataclass(frozen=True)
class RowFilter:
    """One table's filter as written (``:tandem_p<n>`` placeholders), and who is exempt."""

    table: str
    text: str
    tree: exp.Expr
    placeholders: tuple[Placeholder, ...]
    exempt_groups: frozenset[str] = frozenset()


@dataclass(frozen=True)
class AccessPolicy:
    """One database's declared access rules, as read from its file (names unresolved)."""

    path: Path
    row_filters: tuple[RowFilter, ...] = ()
    # ``table`` or ``table.column`` -> the groups that may read it
    hidden: tuple[tuple[str, frozenset[str]], ...] = ()
    group_roles: tuple[tuple[str, str], ...] = ()
    principal_roles: tuple[tuple[str, str], ...] = ()

    @property
    def role_mode(self) -> bool:
        return bool(self.group_roles or self.principal_roles)

    def error(self, key: str, problem: str) -> PolicyError:
        return PolicyError(f"{VARIABLE}: {self.path}: {key}: {problem}")


def parse_access_policies(raw: str) -> tuple[tuple[str, Path], ...]:
    """``name=path;name=path`` (SQL_ACCESS_POLICIES): one policy file per database."""
    found: dict[str, Path] = {}
    for entry in (part.strip() for part in raw.split(";")):
        if not entry:
            continue
        name, sep, path = entry.partition("=")
        name, path = name.strip(), path.strip()
        if not sep or not path:
            raise SettingsError(f"{VARIABLE} entries look like name=path; got {entry!r}")
        if name in found:
            raise SettingsError(f"{VARIABLE} names {name!r} twice")
        found[name] = Path(path)
    return tuple(found.items())


def load_access_policy(path: Path) -> AccessPolicy:
    """One policy file, checked for shape (its names are checked when the catalog loads)."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PolicyError(f"{VARIABLE}: cannot read {path}: {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise PolicyError(f"{VARIABLE}: {path} is not valid JSON: {exc}") from None
    shell = AccessPolicy(path)
    if not isinstance(raw, dict):
        raise shell.error("(top level)", "must be an object")
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        raise shell.error(unknown[0], f"unknown key; expected {sorted(_KEYS)}")
    filters = tuple(
        _row_filter(shell, table, spec)
        for table, spec in _object(shell, "row_filters", raw.get("row_filters", {})).items()
    )
    hidden = tuple(
        (_checked_name(shell, f"hidden.{name}", name), _groups(shell, f"hidden.{name}", groups))
        for name, groups in _object(shell, "hidden", raw.get("hidden", {})).items()
    )
    roles = _object(shell, "roles", raw.get("roles", {}))
    extra = sorted(set(roles) - {"groups", "principals"})
    if extra:
        raise shell.error(f"roles.{extra[0]}", "unknown key; expected groups, principals")
    mapped = {
        kind: tuple(
            (who, _role(shell, f"roles.{kind}.{who}", role))
            for who, role in _object(shell, f"roles.{kind}", roles.get(kind, {})).items()
        )
        for kind in ("groups", "principals")
    }
    return AccessPolicy(
        path,
        row_filters=filters,
        hidden=hidden,
        group_roles=mapped["groups"],
        principal_roles=mapped["principals"],
    )


def _object(policy: AccessPolicy, key: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise policy.error(key, "must be an object")
    if len(value) > MAX_ENTRIES:
        raise policy.error(key, f"more than {MAX_ENTRIES} entries")
    return value


def _checked_name(policy: AccessPolicy, key: str, name: str) -> str:
    if not _NAME.match(name):
        raise policy.error(key, "not a table or table.column name")
    return name


def _groups(policy: AccessPolicy, key: str, value: Any) -> frozenset[str]:
    if not isinstance(value, list) or not all(isinstance(g, str) and g for g in value):
        raise policy.error(key, "must be a list of group names")
    if not value:
        raise policy.error(key, "names no group (hide it from everyone: exclude the table)")
    return frozenset(value)


def _role(policy: AccessPolicy, key: str, value: Any) -> str:
    if not isinstance(value, str) or not _ROLE.match(value):
        raise policy.error(key, "must be a Postgres role name")
    return value


def _row_filter(policy: AccessPolicy, table: str, spec: Any) -> RowFilter:
    key = f"row_filters.{table}"
    _checked_name(policy, key, table)
    exempt: frozenset[str] = frozenset()
    if isinstance(spec, dict):
        unknown = sorted(set(spec) - _FILTER_KEYS)
        if unknown:
            expected = sorted(_FILTER_KEYS)
            raise policy.error(f"{key}.{unknown[0]}", f"unknown key; expected {expected}")
        if "exempt_groups" in spec:
            exempt = _groups(policy, f"{key}.exempt_groups", spec["exempt_groups"])
        spec = spec.get("filter")
    if not isinstance(spec, str) or not spec.strip():
        raise policy.error(key, "the filter must be a non-empty SQL expression")
    if len(spec) > MAX_FILTER_CHARS:
        raise policy.error(key, f"the filter is longer than {MAX_FILTER_CHARS} characters")
    placeholders: list[Placeholder] = []

    def mark(match: re.Match[str]) -> str:
        placeholders.append(Placeholder(match.group(1)))
        return f" :tandem_p{len(placeholders) - 1} "

    if "{" in _PLACEHOLDER.sub("", spec) or "}" in _PLACEHOLDER.sub("", spec):
        raise policy.error(key, "placeholders look like {principal.id} or {principal.region}")
    text = _PLACEHOLDER.sub(mark, spec)
    try:
        tree = sqlglot.parse_one(text, read="postgres")
    except (ParseError, TokenError, ValueError):
        raise policy.error(key, "the filter does not parse as a SQL expression") from None
    if tree is None or isinstance(tree, exp.Query) or not isinstance(tree, exp.Condition):
        raise policy.error(key, "the filter must be a boolean expression")
    for node in tree.walk():
        if isinstance(node, _FORBIDDEN_IN_FILTER):
            raise policy.error(key, "a filter may not hold a query, a table or '*'")
        if isinstance(node, exp.Column) and node.table:
            raise policy.error(key, "a filter names its table's columns unqualified")
        if isinstance(node, exp.Func):
            name = node.name if isinstance(node, exp.Anonymous) else type(node).__name__
            if name.lower() not in _FILTER_FUNCTIONS:
                raise policy.error(key, f"function not allowed in a filter: {name.lower()}")
    return RowFilter(table, spec, tree, tuple(placeholders), exempt)
