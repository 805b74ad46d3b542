"""A count or total per earlier row says which row in the words the earlier answer used.

"Which car makers are based in germany?" lists the makers by ``maker``; "how many models
does each of them have?" is read about their keys and grouped per maker, where the linker
labels each group with the table's name column (``fullname``), not the column the earlier
answer named them by. Each count is then right but said of rows the user never saw
named so, and the rows read unlike the earlier answer's and unlike the question spelled
out ("How many models does each car maker based in germany have?" shows ``maker``).
Grouped by the subject table's key, any of its columns can be shown without changing a
group, so the column the earlier answer named its rows by is shown (and grouped by)
beside the count. Listings get their names from ``labels`` (see ``restrict``); groups by
anything but the subject's key are left as they are: another column could split them.
"""

from __future__ import annotations

from sqlglot import exp

from services.sql.catalog import TEXT_TYPES, Catalog, table_for
from services.sql.conversation._followup import Subject
from services.sql.conversation._statement import parse, sources
from services.sql.gate import identifier


def _named_by(prior_sql: str, about: Subject, catalog: Catalog) -> str | None:
    """The one text column of the subject's table the earlier answer showed its rows by
    (none when it showed none, or more than one: which one named them is unsaid)."""
    earlier = parse(prior_sql)
    owners = {t.alias_or_name: table_for(catalog, t) for t in sources(earlier)}
    found: list[str] = []
    for projection in earlier.expressions:
        column = projection.unalias()
        if not isinstance(column, exp.Column) or column.name == about.column:
            continue
        owner = owners.get(column.table) if column.table else about.table
        info = about.table.column(column.name)
        if (
            owner is not None
            and owner.qualified == about.table.qualified
            and info is not None
            and info.data_type.startswith(TEXT_TYPES)
            and column.name not in found
        ):
            found.append(column.name)
    return found[0] if len(found) == 1 else None


def named_as_before(sql: str, prior_sql: str, about: Subject, catalog: Catalog) -> str:
    """``sql`` (a follow-up about the earlier rows, restricted to them) showing the column
    the earlier answer named those rows by, where it groups per subject row by the
    subject's key and does not show that column (see the module's docstring)."""
    if len(about.table.primary_key) != 1:
        return sql
    name = _named_by(prior_sql, about, catalog)
    if name is None:
        return sql
    tree = parse(sql)
    group = tree.args.get("group")
    alias = next(
        (
            t.alias_or_name
            for t in sources(tree)
            if (info := table_for(catalog, t)) is not None
            and info.qualified == about.table.qualified
        ),
        None,
    )
    if group is None or alias is None:
        return sql
    key = about.table.primary_key[0]

    def of_alias(e: exp.Expr, column: str) -> bool:
        return isinstance(e, exp.Column) and e.name == column and e.table == alias

    if not any(of_alias(e, key) for e in group.expressions):
        return sql
    if any(of_alias(e.unalias(), name) for e in tree.expressions):
        return sql
    shown = exp.column(identifier(name), table=identifier(alias))
    # after the subject's own columns shown (its key, another name), before the measure
    own = [
        i
        for i, e in enumerate(tree.expressions)
        if isinstance(e.unalias(), exp.Column) and e.unalias().table == alias
    ]
    at = own[-1] + 1 if own else 0
    tree.set(
        "expressions",
        [*tree.expressions[:at], exp.alias_(shown, identifier(name)), *tree.expressions[at:]],
    )
    group.set("expressions", [*group.expressions, shown.copy()])
    return tree.sql(dialect="postgres")
