"""A policy resolved against one catalog load (:class:`BoundPolicy`), and what one
principal may read of it (:class:`View`).

Binding checks every name of the file against the catalog (a table or column the
database lacks stops the catalog from serving, naming the file and the key). A view is
computed once per principal per catalog load, and the catalog a principal's question is
linked against (:meth:`BoundPolicy.catalog_for`) once per distinct set of hidden and
filtered tables: the hidden tables and columns are not in it at all, and the filtered
tables (and, in role mode, those under the warehouse's own row-level security) carry no
stored values (their samples are other people's rows; ``_values`` reads back the
principal's own).
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, replace

from sqlglot import exp

from services.common import Principal
from services.sql.access._policy import AccessPolicy, RowFilter
from services.sql.access._sources import ROW_SECURITY_KEY, SOURCES_KEY
from services.sql.catalog import (
    ACCESS_KEY,
    COUNTS_WITHHELD,
    Catalog,
    TableInfo,
    without_counts,
)

# At most this many principals' views (and restricted catalogs) kept per catalog load.
_VIEWS_MAX = 4096
_CATALOGS_MAX = 256
# where a catalog keeps the policy it is bound to (carried into its narrowings)
DERIVED_KEY = ACCESS_KEY


def view_key(principal: Principal | None) -> str:
    """What a verdict built for ``principal`` is marked with ("" for the full view)."""
    return "" if principal is None else _canonical(principal)


@functools.lru_cache(maxsize=4096)
def _canonical(principal: Principal) -> str:
    # read on every gated and every executed statement of a principal's request
    return principal.canonical()


@dataclass(frozen=True)
class View:
    """What one principal may read of one database.

    ``filters`` maps each filtered table (qualified) to its substituted condition, or to
    the name of the attribute the principal lacks (every statement reading it is then
    refused). ``visible`` lists, for each table under a filter or with hidden columns,
    the columns its derived table exposes, in catalog order.
    """

    key: str
    filters: dict[str, exp.Expr | str]
    hidden_tables: frozenset[str]
    hidden_columns: dict[str, frozenset[str]]
    visible: dict[str, tuple[str, ...]]
    role: str | None = None
    role_problem: str = ""
    # Role mode: the tables the warehouse's own row-level security selects rows of for the
    # role (not rewritten: the database filters them), whose stored values the login role
    # read are not the role's.
    secured: frozenset[str] = frozenset()

    def policed(self, qualified: str) -> bool:
        """Whether a scan of ``qualified`` must be the derived table of the view."""
        return qualified in self.visible

    @property
    def shape(self) -> tuple[object, ...]:
        """What the restricted catalog depends on (never the filter's values)."""
        return (
            self.hidden_tables,
            tuple(sorted((t, tuple(sorted(c))) for t, c in self.hidden_columns.items())),
            tuple(sorted(self.filters)),
            tuple(sorted(self.secured)),
        )

    @functools.cached_property
    def shape_key(self) -> str:
        """:attr:`shape` as the restricted catalog's ``access_view`` (never empty, so it
        is never the full catalog's): what memos of that catalog are keyed by."""
        columns = sorted((t, sorted(c)) for t, c in self.hidden_columns.items())
        return "view:" + repr(
            (sorted(self.hidden_tables), columns, sorted(self.filters), sorted(self.secured))
        )

    @functools.cached_property
    def values_key(self) -> str:
        """What the stored values the view shows depend on (``_values``): its shape, each
        filter as substituted and, where the database's own row security picks the rows,
        the role. A digest (memo keys, never logged), computed once per view."""
        rendered = sorted(
            (table, c.sql(dialect="postgres") if isinstance(c, exp.Expr) else f"lacks {c}")
            for table, c in self.filters.items()
        )
        role = self.role if self.secured else None
        digest = hashlib.sha256(repr((rendered, role)).encode()).hexdigest()[:24]
        return f"{self.shape_key}|{digest}"


class BoundPolicy:
    """One database's policy, its names resolved against one catalog load."""

    def __init__(self, policy: AccessPolicy, catalog: Catalog) -> None:
        self.policy = policy
        self.catalog = catalog
        self.filters: dict[str, RowFilter] = {}
        for row_filter in policy.row_filters:
            table = self._table(f"row_filters.{row_filter.table}", row_filter.table)
            for named in row_filter.tree.find_all(exp.Column):
                if table.column(named.name) is None:
                    raise policy.error(
                        f"row_filters.{row_filter.table}",
                        f"{table.qualified} has no column {named.name!r}",
                    )
            self.filters[table.qualified] = row_filter
        self.hidden_tables: dict[str, frozenset[str]] = {}
        self.hidden_columns: dict[str, dict[str, frozenset[str]]] = {}
        for name, groups in policy.hidden:
            found = self._resolve_hidden(name)
            if isinstance(found, TableInfo):
                self.hidden_tables[found.qualified] = groups
            else:
                owner, column = found
                self.hidden_columns.setdefault(owner.qualified, {})[column] = groups
        self._check_views(catalog.derived.get(SOURCES_KEY))
        secured = catalog.derived.get(ROW_SECURITY_KEY)
        self.row_security: frozenset[str] = (
            secured if isinstance(secured, frozenset) else frozenset()
        )
        self._views: dict[str, View] = {}
        self._catalogs: dict[tuple[object, ...], Catalog] = {}
        # the catalogs questions are linked against, with the values each filter's rows
        # hold (``_values``): per shape and substituted filters
        self._valued: dict[str, Catalog] = {}

    def _check_views(self, sources: object) -> None:
        """A view that reads a protected table, or a table inheriting from one, must be
        protected itself (filtered or hidden): it reads as its owner (or holds the
        parent's rows), past any filter written into statements."""
        if not isinstance(sources, dict):
            return
        protected = {*self.filters, *self.hidden_tables, *self.hidden_columns}
        for view, reads in sorted(sources.items()):
            if view in protected or self.catalog.table(view) is None:
                continue
            found = sorted(set(reads) & protected)
            if found:
                raise self.policy.error(
                    "views",
                    f"{view} reads (or inherits) {found[0]}, which the policy protects: "
                    f"filter or hide {view} too",
                )

    def _table(self, key: str, name: str) -> TableInfo:
        table = self.catalog.table(name)
        if table is None:
            raise self.policy.error(key, f"no table {name!r} in the catalog")
        return table

    def _resolve_hidden(self, name: str) -> TableInfo | tuple[TableInfo, str]:
        key = f"hidden.{name}"
        as_table = self.catalog.table(name)
        head, _, column = name.rpartition(".")
        owner = self.catalog.table(head) if head else None
        as_column = (owner, column) if owner is not None and owner.column(column) else None
        if as_table is not None and as_column is not None:
            raise self.policy.error(key, "names both a table and a column; qualify it")
        if as_table is not None:
            return as_table
        if as_column is not None:
            return as_column[0], column
        raise self.policy.error(key, "no such table or table.column in the catalog")

    def view(self, principal: Principal) -> View:
        """What ``principal`` may read (memoised per principal for this catalog load)."""
        key = view_key(principal)
        found = self._views.get(key)
        if found is None:
            if len(self._views) >= _VIEWS_MAX:
                self._views.clear()
            found = self._views[key] = self._view(principal, key)
        return found

    def _view(self, principal: Principal, key: str) -> View:
        groups = principal.groups
        hidden_tables = frozenset(t for t, allowed in self.hidden_tables.items()
                                  if not allowed & groups)  # fmt: skip
        hidden_columns = {
            table: frozenset(c for c, allowed in columns.items() if not allowed & groups)
            for table, columns in self.hidden_columns.items()
            if table not in hidden_tables
        }
        hidden_columns = {t: c for t, c in hidden_columns.items() if c}
        filters: dict[str, exp.Expr | str] = {}
        for table, row_filter in self.filters.items():
            if table in hidden_tables or row_filter.exempt_groups & groups:
                continue
            filters[table] = substitute(row_filter, principal)
        visible: dict[str, tuple[str, ...]] = {}
        for table in {*filters, *hidden_columns}:
            info = self.catalog.table(table)
            assert info is not None  # bound names are the catalog's
            hidden = hidden_columns.get(table, frozenset())
            visible[table] = tuple(c.name for c in info.columns if c.name not in hidden)
        role, problem = self._role(principal)
        secured = frozenset(
            t for t in self.row_security
            if role and t not in hidden_tables and t not in filters and self.catalog.table(t)
        )  # fmt: skip
        return View(
            key, filters, hidden_tables, hidden_columns, visible, role, problem, secured=secured
        )

    def _role(self, principal: Principal) -> tuple[str | None, str]:
        if not self.policy.role_mode:
            return None, ""
        by_id = dict(self.policy.principal_roles).get(principal.id)
        if by_id is not None:
            return by_id, ""
        roles = {role for group, role in self.policy.group_roles if group in principal.groups}
        if len(roles) == 1:
            return roles.pop(), ""
        if not roles:
            return None, "no database role is mapped to this principal or its groups"
        return None, "the principal's groups map to more than one database role"

    def catalog_for(self, view: View) -> Catalog:
        """The catalog ``view`` is linked and described against (memoised per shape)."""
        found = self._catalogs.get(view.shape)
        if found is None:
            if len(self._catalogs) >= _CATALOGS_MAX:
                self._catalogs.clear()
            found = self._catalogs[view.shape] = restricted(self.catalog, view, self)
        return found

    def valued(self, key: str) -> Catalog | None:
        """The catalog with visible values kept under ``key`` for this load, if any."""
        return self._valued.get(key)

    def keep_valued(self, key: str, catalog: Catalog) -> None:
        if len(self._valued) >= _CATALOGS_MAX:
            self._valued.clear()
        self._valued[key] = catalog


def substitute(row_filter: RowFilter, principal: Principal) -> exp.Expr | str:
    """The filter with each placeholder a quoted literal of ``principal``'s, or the name
    of the first attribute it lacks."""
    values: dict[str, exp.Expr] = {}
    for index, placeholder in enumerate(row_filter.placeholders):
        if placeholder.name == "id":
            values[f"tandem_p{index}"] = exp.Literal.string(principal.id)
        elif placeholder.name == "groups":
            items = [exp.Literal.string(g) for g in sorted(principal.groups)]
            values[f"tandem_p{index}"] = exp.cast(exp.Array(expressions=items), "TEXT[]")
        else:
            value = principal.attribute(placeholder.name)
            if value is None:
                return placeholder.name
            values[f"tandem_p{index}"] = exp.Literal.string(value)

    def replace_placeholder(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Placeholder) and str(node.this) in values:
            return values[str(node.this)].copy()
        return node

    return row_filter.tree.copy().transform(replace_placeholder)


def restricted(catalog: Catalog, view: View, bound: BoundPolicy) -> Catalog:
    """``catalog`` less what ``view`` hides, with no stored values of filtered tables nor
    any count read over all their rows: the row count, and the counts an inferred key or
    join was believed by (withheld, not recounted under the filter: they are the reason
    the key was inferred from every row, which a count of the principal's rows is not)."""
    hidden_tables = view.hidden_tables
    filtered_tables = set(view.filters) | set(view.secured)

    def gone(table: str, columns: tuple[str, ...] = ()) -> bool:
        resolved = catalog.table(table)
        qualified = resolved.qualified if resolved is not None else table
        if qualified in hidden_tables:
            return True
        hidden = view.hidden_columns.get(qualified, frozenset())
        return any(c in hidden for c in columns)

    tables: list[TableInfo] = []
    for table in catalog.tables:
        if table.qualified in hidden_tables:
            continue
        hidden = view.hidden_columns.get(table.qualified, frozenset())
        # rows chosen per principal, by the policy's filter or the database's own security
        filtered = table.qualified in view.filters or table.qualified in view.secured
        if not hidden and not filtered and not _refers_to_hidden(table, gone):
            tables.append(table)
            continue
        columns = tuple(
            replace(c, sample_values=(), known_values=(), span=None, extent=None) if filtered else c
            for c in table.columns
            if c.name not in hidden
        )
        tables.append(
            replace(
                table,
                columns=columns,
                primary_key=() if set(table.primary_key) & hidden else table.primary_key,
                unique_keys=tuple(k for k in table.unique_keys if not set(k) & hidden),
                foreign_keys=tuple(
                    fk
                    for fk in table.foreign_keys
                    if not set(fk.columns) & hidden
                    and not gone(fk.referenced_table, fk.referenced_columns)
                ),
                lookalike_of="" if gone(table.lookalike_of) else table.lookalike_of,
                lookalike_evidence="" if gone(table.lookalike_of) else table.lookalike_evidence,
                # every row's count, other people's with theirs: "rows unknown" instead
                row_estimate=-1 if filtered else table.row_estimate,
                key_evidence=(
                    f"never null and never repeating; {COUNTS_WITHHELD}"
                    if filtered and table.key_evidence
                    else table.key_evidence
                ),
                row_filtered=filtered,
            )
        )
    joins = catalog.joins
    if joins is not None:
        joins = tuple(
            replace(j, evidence=without_counts(j.evidence))
            if {_qualified(catalog, j.child), _qualified(catalog, j.parent)} & filtered_tables
            else j
            for j in joins
            if not gone(j.child, j.child_columns) and not gone(j.parent, j.parent_columns)
        )  # fmt: skip
    result = Catalog(
        catalog.database, tuple(tables), catalog.refreshed_at, joins, access_view=view.shape_key
    )
    result.derived[DERIVED_KEY] = bound
    return result


def _qualified(catalog: Catalog, name: str) -> str:
    resolved = catalog.table(name)
    return resolved.qualified if resolved is not None else name


def _refers_to_hidden(table: TableInfo, gone: object) -> bool:
    assert callable(gone)
    return any(gone(fk.referenced_table, fk.referenced_columns) for fk in table.foreign_keys) or (
        bool(table.lookalike_of) and bool(gone(table.lookalike_of))
    )
