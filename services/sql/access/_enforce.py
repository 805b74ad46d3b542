"""Row filters and hidden columns applied to a statement's tree, and checked after.

:func:`rewrite` turns every scan of a table the principal's view polices (a filter, or
hidden columns) into the derived table ``(SELECT <visible columns> FROM schema.table
WHERE <filter> OFFSET 0) AS table`` (``OFFSET 0``: a fence no outer condition is pushed
through), wherever the scan is: a join, a subquery in any clause, a CTE,
a set operation's branch, LATERAL. The rest of the statement reads the derived table under
the name it used, so ``SELECT *`` expands to the visible columns only and a hidden column
cannot be named through it.

:func:`check` is the gate's rule, and deliberately not the rewriter: an independent walk
of the final tree, resolving every table reference as Postgres would (a CTE's name shadows
a table only in its scope; unqualified names resolve through the catalog), that refuses a
statement in which any scan of a policed table is not exactly that derived table with
exactly that filter, any hidden table is read, or a hidden column is named. Fed the
rewriter's output it passes; fed anything that slipped past the rewriter (a CTE aliasing
the table, a scalar subquery, a UNION branch, a quoted or schema-qualified name) it
refuses.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from services.sql.access._view import View
from services.sql.catalog import Catalog, TableInfo
from services.sql.tree import EXPR, ident, scoped_tables

# The arguments of the canonical derived table's SELECT: its columns, table and filter.
_CANONICAL_ARGS = frozenset({"expressions", "from_", "where", "offset"})


@dataclass(frozen=True)
class Denial:
    """Why a statement may not run for the view: the table (or ``principal.<attribute>``
    the principal lacks) it is about, in words; never a literal."""

    subject: str
    message: str


def _quoted(name: str) -> exp.Identifier:
    return exp.Identifier(this=name, quoted=True)


def rewrite(tree: exp.Expr, view: View, catalog: Catalog) -> int:
    """``tree`` (the gate's checked tree: every table scan schema-qualified, CTE
    references not) with each scan of a policed table made the view's derived table, in
    place; the number of scans rewritten.

    A scan whose filter needs an attribute the principal lacks reads no row (``WHERE
    FALSE``), never all of them; the check refuses it anyway, naming the attribute.
    """
    scans = [
        t
        for t in tree.find_all(exp.Table)
        if isinstance(t.this, exp.Identifier) and t.args.get("db") is not None
    ]
    done = 0
    for table in scans:
        info = catalog.resolve(ident(table.args.get("db")), ident(table.this) or "")
        if info is None or not view.policed(info.qualified):
            continue
        alias = table.args.get("alias")
        if not isinstance(alias, exp.TableAlias):
            alias = exp.TableAlias(this=_quoted(info.name))
        derived = exp.Subquery(this=canonical_select(info, view), alias=alias.copy())
        table.replace(derived)
        done += 1
    return done


def canonical_select(info: TableInfo, view: View) -> exp.Select:
    """``SELECT <visible columns> FROM schema.table [WHERE <filter>] OFFSET 0`` for
    ``view``, built node by node (sqlglot's builders parse their arguments)."""
    condition = view.filters.get(info.qualified)
    where: exp.Expr | None = None
    if isinstance(condition, EXPR):
        where = exp.Where(this=condition.copy())
    elif isinstance(condition, str):  # an attribute the principal lacks: no row, ever
        where = exp.Where(this=exp.false())
    # ``OFFSET 0`` is a fence: Postgres neither flattens a subquery with OFFSET nor
    # pushes the outer query's conditions into it, so no condition of the statement
    # (``1 / (id - 7) > 0``) is evaluated on a row the filter excludes, where its error
    # would tell the row exists.
    return exp.Select(
        expressions=[exp.Column(this=_quoted(c)) for c in view.visible[info.qualified]],
        from_=exp.From(this=exp.Table(this=_quoted(info.name), db=_quoted(info.schema))),
        where=where,
        offset=exp.Offset(expression=exp.Literal.number(0)),
    )


def check(tree: exp.Expr, view: View, catalog: Catalog) -> list[Denial]:
    """Every way ``tree`` reads past ``view`` (empty when it reads only what it may)."""
    walk = _Walk(view, catalog)
    walk.scope(tree, frozenset())
    walk.columns(tree)
    return walk.denials


class _Walk:
    def __init__(self, view: View, catalog: Catalog) -> None:
        self.view = view
        self.catalog = catalog
        self.denials: list[Denial] = []
        self.canonical: set[int] = set()
        self.read: set[str] = set()

    def deny(self, subject: str, message: str) -> None:
        denial = Denial(subject, message)
        if denial not in self.denials:
            self.denials.append(denial)

    def scope(self, node: exp.Expr, ctes: frozenset[str]) -> None:
        """Table references scope by scope: a CTE name shadows a table only where
        Postgres resolves the name to the CTE (a later sibling, the main query, and
        itself when the WITH is RECURSIVE)."""
        for table, visible in scoped_tables(node, ctes):
            self.table(table, visible)

    def table(self, node: exp.Table, ctes: frozenset[str]) -> None:
        if not isinstance(node.this, exp.Identifier) or node.args.get("catalog") is not None:
            return  # a function in FROM, or another database: the gate's own rules
        name = ident(node.this) or ""
        schema = ident(node.args.get("db"))
        if schema is None and name in ctes:
            return
        info = self.catalog.resolve(schema, name)
        if info is None:
            return  # not a table of the database: the gate refuses it as unknown
        if info.qualified in self.view.hidden_tables:
            self.deny(info.qualified, "the table is not readable by this principal")
            return
        if not self.view.policed(info.qualified):
            return
        self.read.add(info.qualified)
        condition = self.view.filters.get(info.qualified)
        if isinstance(condition, str):
            self.deny(
                f"principal.{condition}",
                f"reading {info.qualified} needs the principal's attribute {condition!r}",
            )
            return
        select = self._enclosing(node)
        if select is None or not self._is_canonical(select, info):
            self.deny(info.qualified, "a scan of the table is not its filtered form")
            return
        self.canonical.add(id(select))

    @staticmethod
    def _enclosing(node: exp.Table) -> exp.Select | None:
        from_ = node.parent
        if not isinstance(from_, exp.From) or node.arg_key != "this":
            return None
        select = from_.parent
        if not isinstance(select, exp.Select) or from_.arg_key != "from_":
            return None
        if not isinstance(select.parent, exp.Subquery):
            return None
        return select

    def _is_canonical(self, select: exp.Select, info: TableInfo) -> bool:
        table = select.args["from_"].this
        if any(v for k, v in table.args.items() if k not in ("this", "db")):
            return False  # an alias, a sample, joins: not the derived table
        for key, value in select.args.items():
            if key not in _CANONICAL_ARGS and value:
                return False
        visible = self.view.visible[info.qualified]
        shown = select.expressions
        if len(shown) != len(visible) or any(
            not isinstance(e, exp.Column) or e.args.get("table") or ident(e.this) != name
            for e, name in zip(shown, visible, strict=False)
        ):
            return False
        offset = select.args.get("offset")
        if not (
            isinstance(offset, exp.Offset)
            and isinstance(offset.expression, exp.Literal)
            and str(offset.expression.this) == "0"
        ):
            return False
        where = select.args.get("where")
        wanted = self.view.filters.get(info.qualified)
        if wanted is None:
            return where is None
        # compared as trees (sqlglot's structural equality), not as rendered text
        return isinstance(where, exp.Where) and where.this == wanted

    def columns(self, tree: exp.Expr) -> None:
        """A hidden column named anywhere outside a derived table of the view (its name
        compared as Postgres folds it) is refused: the statement asks for it."""
        hidden = {
            column: table
            for table, columns in self.view.hidden_columns.items()
            if table in self.read
            for column in columns
        }
        if not hidden:
            return
        for column in tree.find_all(exp.Column):
            name = ident(column.this)
            if name in hidden and not self._inside_canonical(column):
                self.deny(f"{hidden[name]}.{name}", "the column is not readable by this principal")

    def _inside_canonical(self, node: exp.Expr) -> bool:
        parent = node.parent
        while parent is not None:
            if id(parent) in self.canonical:
                return True
            parent = parent.parent
        return False


def hidden_named(tree: exp.Expr, view: View, catalog: Catalog) -> list[Denial]:
    """The caller's statement, before any rewrite: a hidden column of a table it reads,
    named anywhere in it, is refused by name (rather than failing later as unknown)."""
    if not view.hidden_columns:
        return []
    hidden: dict[str, str] = {}
    for table in tree.find_all(exp.Table):
        if isinstance(table.this, exp.Identifier):
            info = catalog.resolve(ident(table.args.get("db")), ident(table.this) or "")
            if info is not None:
                for name in view.hidden_columns.get(info.qualified, ()):
                    hidden.setdefault(name, f"{info.qualified}.{name}")
    if not hidden:
        return []
    named = {ident(c.this) for c in tree.find_all(exp.Column)}
    return [
        Denial(subject, "the column is not readable by this principal")
        for name, subject in sorted(hidden.items())
        if name in named
    ]
