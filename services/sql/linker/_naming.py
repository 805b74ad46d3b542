"""Names: readable, distinct result-column names, and the plain-words interpretation of
what a statement computes (names and values, never the question)."""

from __future__ import annotations

import re

from services.sql.catalog import TableInfo
from services.sql.linker._context import LinkContext
from services.sql.linker._plan import Measure, Plan
from services.sql.results import NameClaims, aggregate_name, period_words, shown_column_name


def explain_plan(ctx: LinkContext, plan: Plan, base: TableInfo) -> str:
    """What the statement computes, in words (names and values, never the question)."""
    measures = [describe_measure(m) for m in plan.measures]
    dims = [
        period_words(d.grain, d.col.column.name) if d.grain else d.col.column.name
        for d in plan.dims
    ]
    if measures and not dims and len(measures) == 1 and plan.measures[0].table is base:
        text = f"Counts {base.name}"
    elif measures:
        text = capitalised(", ".join(measures)) + (f" per {', '.join(dims)}" if dims else "")
        text += f" over {base.name}"
    else:
        text = ("Lists distinct " if plan.distinct else "Lists ") + ", ".join(dims)
        text += f" of {base.name}"
    conditions = [
        condition_words(cond, c.column.name)
        for c, cond in plan.filters
        if not cond.startswith("NOT EXISTS")
    ]
    conditions += [
        "(" + " or ".join(condition_words(cond, c.column.name) for c, cond in group) + ")"
        for group in plan.ors
    ]
    # Conditions the glossary defines in SQL ("open"), named by their term: the
    # interpretation once left them out ("Counts opportunities where code = 'EMEA'").
    conditions += [
        f"{term} ({tree.sql(dialect='postgres')})" if term else tree.sql(dialect="postgres")
        for (tree, _), term in zip(plan.raw, [*plan.raw_terms, *[""] * len(plan.raw)], strict=False)
    ]
    conditions += [f"no matching {t.name}" for t in plan.anti]
    conditions += [f"no matching {words}" for words in plan.absent]
    conditions += [f"a matching {t.name}" for t in plan.semi]
    if conditions:
        text += " where " + " and ".join(conditions)
    if plan.having:
        text += " having " + " and ".join(
            f"{op} {n} {m.table.name if m.table is not None else 'rows'}"
            for m, op, n in plan.having
        )
    if plan.order:
        target, desc = plan.order[0]
        shown = _ordered_by(plan, target)
        text += f", {'highest' if desc else 'lowest'} {shown + ' ' if shown else ''}first"
    if plan.limit:
        text += f", first {plan.limit}"
    return text + "."


def _ordered_by(plan: Plan, target: str) -> str:
    """What an order target ("d1", "m0") shows, in words."""
    index = int(target[1:]) if target[1:].isdigit() else -1
    if target.startswith("d") and 0 <= index < len(plan.dims):
        return plan.dims[index].col.column.name
    if target.startswith("m") and 0 <= index < len(plan.measures):
        return describe_measure(plan.measures[index])
    return ""


def slot(name: str) -> str:
    """Where an output column's name goes until all names are chosen: NUL never occurs in
    a statement (the service refuses it in questions and SQL), so no literal can hold it."""
    return f"\x00{name}\x00"


def output_names(plan: Plan) -> dict[str, str]:
    """Readable, distinct names for the result's columns: a column keeps its own name
    ("company_id", "name"; the table's name in front when two tables share it), a time
    grain is named by it ("month"), a measure by what it computes ("sum_amount",
    "count", "win_rate"). Products read the result by these names."""
    names: dict[str, str] = {}
    claims = NameClaims()
    for i, d in enumerate(plan.dims):
        own = d.grain or d.col.column.name
        names[f"d{i}"] = claims.claim(
            f"d{i}", own, shown_column_name(d.col.table.name, own, shared=True)
        )
    for i, m in enumerate(plan.measures):
        names[f"m{i}"] = claims.claim(f"m{i}", *measure_names(m))
    return names


def measure_names(m: Measure) -> list[str]:
    if m.func in ("EXPR", "SQLEXPR", "RANK") and m.label:
        return [m.label]
    if m.func == "SHARE":
        return ["percentage"]
    if m.filter is not None and "EXTRACT(DOW" in m.filter[1]:
        return [m.label or "day_count"]
    if m.func == "COUNT" and m.col is None:
        table = m.table.name if m.table is not None else ""
        return ["count", f"{table}_count"] if table else ["count"]
    column = m.col.column.name if m.col is not None else ""
    return [aggregate_name(m.func, column), aggregate_name(m.func, m.label)]


def describe_measure(m: Measure) -> str:
    names = {"SUM": "total", "AVG": "average", "MIN": "lowest", "MAX": "highest"}
    if m.func in ("COUNT", "COUNT_DISTINCT") and m.table is not None:
        distinct = "distinct " if m.func == "COUNT_DISTINCT" else ""
        return f"number of {distinct}{m.table.name}"
    if m.col is not None and m.func in names:
        return f"{names[m.func]} {m.col.column.name}"
    if m.col is not None:
        return f"count of {m.col.column.name}"
    if m.func == "RANK":
        return f"rank ({m.label})"
    if m.func == "EXPR":
        return " ".join(m.label.split())
    return "row count"


def capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]


def condition_words(cond: str, column: str) -> str:
    """ "{c} >= '2023-01-01' AND {c} < '2024-01-01'" -> "day >= '2023-01-01' and <
    '2024-01-01'"; a flag reads as itself ("active", "not active")."""
    if cond == "{c}":
        return column
    if cond == "NOT {c}":
        return f"not {column}"
    average = re.fullmatch(r"\{c\} (\S+) \(SELECT AVG\(a\.(.+?)\) FROM (.+?) AS a\)", cond)
    if average:
        return f"{column} {average.group(1)} the average {average.group(2).strip(chr(34))}"
    text = cond.replace("{c} ", "").replace(" AND {c} ", " and ")
    text = text.replace("ILIKE", "like").replace("IS NOT NULL", "is present")
    return f"{column} {text}"
