"""A follow-up about the rows an earlier count or list read, placed by keys and types
where the linker could place none of its words.

"how many payments did we receive by check" → "count them all" → "what do they add up
to": the earlier statement counted rows of one table (``payments_received``) that meet
its ``WHERE``, and "they" are those rows, whatever the statement then did with them
(counted, grouped, listed). The words of such a follow-up ("add up", "who got those",
"how many orders did they place") name no column, so the linker, reading them about the
earlier rows' table, places nothing and refuses. What they ask follows from the schema:

- **a sum of those rows**: the table's one amount (its one number column that is no
  whole number and no key: ``payment_amount``), summed over the same ``FROM``/``WHERE``;
  asked only of an ungrouped earlier answer (a count or a list), since "add them up"
  after a count per type could as well mean the counts;
- **the rows they refer to**: "who got those" after unread notifications per type is the
  users the notifications' ``user_id`` refers to, the one table the rows reference (or the
  one of them the question's noun names: "which users …"), each listed once by what
  names it, ``WHERE users.uid IN (SELECT n.user_id FROM <the earlier rows>)``;
- **a count of the rows that refer to them**: "how many orders did they place" after a
  list of customers counts the orders whose ``customer_id`` is one of those customers',
  the table the noun names referring to the earlier rows' table by one key.

Only a statement over one table (no join that could repeat or mix its rows, no
``HAVING``, a ``LIMIT`` only on a list) has such rows; a reference path is used only
when it is the one key between the two tables (declared, or inferred by the catalog).
Where the question's form is one of these but its table or key is not one, the follow-up
is refused naming what could not be placed, never answered from a guess.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sqlglot import exp

from services.sql.catalog import Catalog, TableInfo, table_for
from services.sql.conversation._nouns import content_words, names_table, references_of, shown_entity
from services.sql.conversation._statement import FollowUpError, parse, readable, sources
from services.sql.gate import identifier

# Number types that hold amounts rather than counts or keys (a whole number is a count,
# a year or a key far more often than money).
_FRACTIONAL = ("numeric", "decimal", "real", "double precision", "money")

_LEAD = r"^\W*(?:(?:and|so|then|ok|okay|now)\W+)?"
# "what do they add up to", "what's their sum", "the total?"
_SUM = re.compile(r"\b(?:add(?:s|ed)?\s+up|sum|total)\b", re.IGNORECASE)
# "who got those": a person the rows refer to
_WHO = re.compile(_LEAD + r"who\b", re.IGNORECASE)
# "which users got them", "what merchants were they from"
_WHICH = re.compile(_LEAD + r"(?:which|what)\s+(?P<noun>[a-z]{3,})\b", re.IGNORECASE)
# "how many orders did they place"
_HOW_MANY = re.compile(
    _LEAD + r"how\s+many\s+(?P<noun>[a-z]{3,}(?:\s+[a-z]{3,})?)\b", re.IGNORECASE
)


def rows_asked(question: str, earlier_sql: str, catalog: Catalog) -> tuple[str, str] | None:
    """(the statement, its explanation) for a follow-up about the earlier statement's
    rows read by keys and types (see the module), or None where the question has none of
    these forms or the earlier statement reads no one table's rows. Raises
    ``FollowUpError`` where the form is one of them but its table or key is not one."""
    select = parse(earlier_sql)
    read = sources(select)
    if (
        len(read) != 1
        or select.args.get("joins")
        or select.args.get("having")
        or (select.args.get("limit") and select.args.get("group"))
        or not isinstance(select.args.get("from_"), exp.From)
        or not isinstance(select.args["from_"].this, exp.Table)
    ):
        return None
    table = table_for(catalog, read[0])
    if table is None:
        return None
    alias = read[0].alias_or_name
    if (counted := _HOW_MANY.search(question)) is not None:
        return _counted(counted.group("noun"), select, table, alias, catalog)
    if _WHO.search(question) is not None:
        return _referred(None, select, table, alias, catalog)
    if (which := _WHICH.search(question)) is not None and _referenced_named(
        which.group("noun"), table, catalog
    ):
        return _referred(which.group("noun"), select, table, alias, catalog)
    if _SUM.search(question) is not None and not select.args.get("group"):
        return _summed(select, table, alias)
    return None


def _rows(select: exp.Select, shown: exp.Expr) -> exp.Select:
    """The earlier statement's own rows (its ``FROM`` and ``WHERE``, a list's order and
    limit) showing ``shown`` only: no grouping, no aggregate."""
    inner = select.copy()
    inner.set("expressions", [shown])
    for drop in ("group", "having", "distinct"):
        inner.set(drop, None)
    if not inner.args.get("limit"):
        inner.set("order", None)
    return inner


def _free_alias(inner: exp.Select) -> str:
    """An alias the earlier rows' statement does not use, for the table asked about."""
    taken = {t.alias_or_name for t in inner.find_all(exp.Table)}
    return next(f"t{i}" for i in range(len(taken) + 1) if f"t{i}" not in taken)


def _summed(select: exp.Select, table: TableInfo, alias: str) -> tuple[str, str]:
    if select.args.get("limit") is not None:
        raise FollowUpError("the previous answer's rows were cut by a limit, not summed whole")
    keys = set(table.primary_key) | {c for fk in table.foreign_keys for c in fk.columns}
    amounts = [
        c.name
        for c in table.columns
        if c.data_type.lower().startswith(_FRACTIONAL) and c.name not in keys
    ]
    if len(amounts) != 1:
        said = ", ".join(amounts) if amounts else "none"
        raise FollowUpError(
            f"the previous answer's rows are {table.name}, whose amounts to add up are "
            f"not one column ({said})"
        )
    column = exp.column(identifier(amounts[0]), table=identifier(alias))
    total = exp.alias_(exp.Sum(this=column), identifier(f"sum_{amounts[0]}"))
    built = _rows(select, total)
    built.set("order", None)
    return (
        built.sql(dialect="postgres"),
        f"the sum of {amounts[0]} over the previous answer's {table.name} rows",
    )


def _keyed_to(
    shown: Sequence[exp.Expr], table: TableInfo, alias: str, column: str, inner: exp.Select
) -> str:
    """``SELECT <shown> FROM <table> AS <alias> WHERE <alias>.<column> IN (<inner>)``: the
    rows matched to the earlier rows by a key through a sub-query, never a pasted list of
    keys, however the earlier rows were read (the table they refer to, or the rows that
    refer to them)."""
    built = (
        exp.select(*shown)
        .from_(exp.to_table(table.qualified).as_(alias))
        .where(
            exp.In(
                this=exp.column(identifier(column), table=identifier(alias)),
                query=exp.Subquery(this=inner),
            )
        )
    )
    return built.sql(dialect="postgres")


def _referenced_named(noun: str, table: TableInfo, catalog: Catalog) -> bool:
    words = content_words(noun)
    return any(
        (parent := catalog.table(name)) is not None and names_table(words, parent, catalog)
        for _, name, _ in references_of(table, catalog)
    )


def _referred(
    noun: str | None, select: exp.Select, table: TableInfo, alias: str, catalog: Catalog
) -> tuple[str, str]:
    """The rows of the one table the earlier rows refer to (the one ``noun`` names)."""
    paths: dict[str, set[tuple[tuple[str, ...], tuple[str, ...]]]] = {}
    for here, name, there in references_of(table, catalog):
        parent = catalog.table(name)
        if parent is None or parent.qualified == table.qualified:
            continue
        if noun is not None and not names_table(content_words(noun), parent, catalog):
            continue
        paths.setdefault(parent.qualified, set()).add((tuple(here), tuple(there)))
    if len(paths) != 1:
        said = ", ".join(sorted(paths)) if paths else "no table"
        raise FollowUpError(
            f"the previous answer's {table.name} rows refer to {said}: which one is asked "
            "for is not one table"
        )
    ((qualified, keys),) = paths.items()
    parent = catalog.table(qualified)
    assert parent is not None
    if len(keys) != 1 or len(next(iter(keys))[0]) != 1:
        raise FollowUpError(
            f"the previous answer's {table.name} rows refer to {parent.name} by more than "
            "one key: which one is meant is not said"
        )
    (((local,), (remote,)),) = keys
    shown = shown_entity(parent, "t0")
    if shown is None:
        raise FollowUpError(f"nothing but a number key names the rows of {parent.name}")
    inner = _rows(select, exp.column(identifier(local), table=identifier(alias)))
    outer = _free_alias(inner)
    shown = shown_entity(parent, outer)
    assert shown is not None
    names, _ = shown
    return (
        _keyed_to(names, parent, outer, remote, inner),
        f"the {readable(parent, catalog)} the previous answer's {table.name} rows refer to",
    )


def _counted(
    noun: str, select: exp.Select, table: TableInfo, alias: str, catalog: Catalog
) -> tuple[str, str] | None:
    """The count of the rows of the table ``noun`` names that refer to the earlier rows
    by one key; None where the noun names the earlier rows' own table or none."""
    said = noun.split()
    named = [t for t in catalog.tables if names_table(content_words(noun), t, catalog)]
    if not named and len(said) > 1:
        named = [t for t in catalog.tables if names_table(content_words(said[0]), t, catalog)]
    if len(named) != 1 or named[0].qualified == table.qualified:
        return None
    child = named[0]
    keys = {
        (tuple(local), tuple(remote))
        for local, name, remote in references_of(child, catalog)
        if name == table.qualified
    }
    if len(keys) != 1 or len(next(iter(keys))[0]) != 1:
        raise FollowUpError(
            f"{child.name} refers to the previous answer's {table.name} rows by "
            f"{'no' if not keys else 'more than one'} key"
        )
    (((local,), (remote,)),) = keys
    inner = _rows(select, exp.column(identifier(remote), table=identifier(alias)))
    outer = _free_alias(inner)
    count = exp.alias_(exp.Count(this=exp.Star()), "count")
    return (
        _keyed_to([count], child, outer, local, inner),
        f"the count of {readable(child, catalog)} whose {local} is one of the previous "
        f"answer's {table.name} rows",
    )
