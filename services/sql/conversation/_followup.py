"""Follow-ups on an earlier statement: one step of AskQuestion, before linking.

A conversation's follow-up sometimes cannot be spelled out as a new question without
losing what the earlier answer was: "only the top 2" is the same ranking with another
row count, and "what are their emails?" asks about the rows the earlier statement
returned, not about whatever "emails" a fresh question would find. The router sends the
statement of the turn it resolved against (``PriorStatement``); this step works on that
statement's structure (parsed with sqlglot), never on the question's text:

- **row limit**: the statement with its ``LIMIT`` replaced; a statement with no order
  (a breakdown) is ranked by its first aggregate, so "just the top 3" after "customers
  per country" is the three largest countries.
- **regroup**: the statement's grouping column replaced by (or, for a total, grouped
  by) the column of its own tables whose name the user's words spell ("by region" →
  ``c.region``), in the projection, ``GROUP BY`` and order alike;
- **value swap**: the one compared literal whose column stores the new value (the
  catalog's stored values, the linker's lookup) replaced by its stored spelling, so
  "what about refunded?" changes the status, whatever else the question compares;
- **result set**: the statement's *subject* is the table its first name-like output
  column comes from (else its one table, by key); the question, with its reference
  ("their", "them", "those …") pointing at that table, is linked as usual, and the
  linked statement is restricted to the subject's rows the earlier statement returned —
  ``subject.column IN (SELECT … FROM (<earlier statement>) AS earlier)``, a sub-query,
  never a pasted list of names.

Regroup and value swap fall back to reading the follow-up spelled out (the router sends
it as the question) when no column fits. Every result goes through the gate and runs
read-only like every other statement; the earlier statement is untrusted input (a caller
may send any text) and is gated too.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from dataclasses import dataclass

from sqlglot import exp

from services.sql.catalog import (
    TEXT_TYPES,
    Catalog,
    Comparison,
    JoinGraph,
    TableInfo,
    comparisons,
    stored_spelling,
    table_for,
)
from services.sql.conversation._added import adds_a_value
from services.sql.conversation._conditions import Link, Linked, link_condition, with_conditions
from services.sql.conversation._leading import led_value
from services.sql.conversation._measure import bare_bound
from services.sql.conversation._nouns import (
    content_words,
    covers,
    names_table,
    references_of,
    shown_entity,
    spelled_share,
)
from services.sql.conversation._own_noun import agent_or_manner, amount_compared
from services.sql.conversation._periods import dated, time_shifted
from services.sql.conversation._removed import without_condition
from services.sql.conversation._renumbered import renumbered
from services.sql.conversation._statement import (
    FollowUpError,
    column_name,
    parse,
    readable,
    sources,
)
from services.sql.conversation._valued import valued
from services.sql.gate import identifier
from services.sql.linker import entity_columns
from services.sql.results import deciding_columns, show_deciding
from services.sql.words import KIND_NOUNS, name_words, stem

MAX_PRIOR_CHARS = 20_000
MAX_PRIOR_WORDS = 200


class Relation(enum.Enum):
    RESULT_SET = "result_set"
    ROW_LIMIT = "row_limit"
    REGROUP = "regroup"
    VALUE_SWAP = "value_swap"
    FILTER = "filter"
    TIME_SHIFT = "time_shift"


@dataclass(frozen=True)
class Prior:
    """The earlier statement a follow-up builds on, and how."""

    sql: str
    relation: Relation
    limit: int = 0
    ascending: bool = False
    dimension: str = ""
    value: str = ""
    add: bool = False
    condition: str = ""  # FILTER: the condition in the user's words ("older than 40")
    exclude: bool = False  # FILTER: keep the rows the condition does not hold for
    remove: bool = False  # FILTER: remove the statement's own condition the words name
    period: str = ""  # TIME_SHIFT: the period in the user's words ("2015", "the year after")


@dataclass(frozen=True)
class Subject:
    """What the earlier statement's rows are about: ``table.column`` holds the value its
    ``output`` column (or, with no output column, its key) returned."""

    table: TableInfo
    column: str
    output: str  # the earlier statement's output name; "" when scoped by its own rows
    # The alias whose key the earlier statement is given as an extra output column (it
    # returned names, grouped or listed by the key): rows are matched by key, not name.
    key_from: str = ""
    # Rows read through a reference column (``flights.carrier`` for airlines): that
    # column, the restriction to use when the follow-up was read on the referencing
    # table alone ("how many flights did they fly?") — the same values either way.
    via: Subject | None = None


KEY = "tandem_key"


def _ties(select: exp.Select, catalog: Catalog | None) -> list[exp.Ordered]:
    """The shown columns that break ties at a cut, as the linker breaks them (its
    composition: a grouped ranking's listed columns, names before keys): "keep the
    leading two" of a count per car maker cuts where "the 2 car makers with the most
    models" does, rows that tie on the count included or left alike."""
    tables = _tables(select, catalog) if catalog is not None else {}
    names: list[tuple[bool, str]] = []
    for projection in select.expressions:
        column = projection.unalias()
        if not isinstance(column, exp.Column) or not projection.alias_or_name:
            continue
        owner = tables.get(column.table.lower()) if column.table else None
        low = column.name.lower()
        key = low == "id" or low.endswith("id")
        key = key or (owner is not None and owner.primary_key == (column.name,))
        names.append((key, projection.alias_or_name))
    names.sort(key=lambda n: n[0])
    return [exp.Ordered(this=exp.column(identifier(name))) for _, name in names]


def with_limit(
    sql: str, limit: int, *, ascending: bool = False, catalog: Catalog | None = None
) -> str:
    """``sql`` returning ``limit`` rows of its own order (or ranked by its first
    aggregate when it has none, ties broken by what it shows: ``_ties``); the lowest
    rows (``ascending``) of a ranking from the highest are its other end."""
    tree = parse(sql)
    order = tree.args.get("order")
    if order is not None and ascending and order.expressions[0].args.get("desc"):
        first = order.expressions[0]
        first.set("desc", False)
        first.set("nulls_first", False)
    if not order:
        ranked = next(
            (i for i, e in enumerate(tree.expressions) if e.find(exp.AggFunc) is not None), None
        )
        if ranked is None:
            raise FollowUpError("the earlier answer is not a ranking, so it has no top rows")
        measure = tree.expressions[ranked]
        by: exp.Expr = (
            exp.column(identifier(measure.alias))
            if measure.alias
            else exp.Literal.number(ranked + 1)
        )
        key = exp.Ordered(this=by, desc=not ascending, nulls_first=False)
        tree.set("order", exp.Order(expressions=[key, *_ties(tree, catalog)]))
    tree.set("limit", exp.Limit(expression=exp.Literal.number(limit)))
    return tree.sql(dialect="postgres")


def _tables(select: exp.Select, catalog: Catalog) -> dict[str, TableInfo]:
    """The earlier statement's own tables (not its sub-queries') by alias and name."""
    found: dict[str, TableInfo] = {}
    for table in sources(select):
        info = table_for(catalog, table)
        if info is not None:
            found[table.alias_or_name.lower()] = info
            found[table.name.lower()] = info
    return found


def subject(sql: str, catalog: Catalog) -> Subject:
    """The table and column the earlier statement's rows are about: its key when it
    returned one, else its first name-like column; for a total, the key of the rows it
    counted (its first table's)."""
    select = parse(sql)
    tables = _tables(select, catalog)
    distinct = {t.qualified: t for t in tables.values()}
    plain: list[Subject] = []
    for projection in select.expressions:
        column = projection.unalias()
        if not isinstance(column, exp.Column) or isinstance(column.this, exp.Star):
            continue
        if column.table:
            info = tables.get(column.table.lower())
        else:
            owners = [t for t in distinct.values() if t.column(column.name) is not None]
            info = owners[0] if len(owners) == 1 else None
        if info is None or info.column(column.name) is None:
            continue
        plain.append(Subject(info, column.name, projection.alias_or_name))
    keyed = [s for s in plain if s.table.primary_key == (s.column,)]
    named = [
        s for s in plain if (c := s.table.column(s.column)) and c.data_type.startswith(TEXT_TYPES)
    ]
    if not keyed and (named or plain):
        found = (named or plain)[0]
        alias = _alias_of(select, found.table)
        if alias is not None and _keyable(select, found.table, alias):
            return Subject(found.table, found.table.primary_key[0], KEY, key_from=alias)
    if keyed or named or plain:
        return (keyed or named or plain)[0] if keyed else _referenced((named or plain)[0], catalog)
    read = sources(select)
    first = table_for(catalog, read[0]) if read else None
    if first is not None and not select.args.get("group") and len(first.primary_key) == 1:
        return Subject(first, first.primary_key[0], "")
    raise FollowUpError("the earlier answer names no rows of one table to refer to")


def _referenced(found: Subject, catalog: Catalog) -> Subject:
    """The rows a reference column's values stand for: grouped (or distinct) by
    ``flights.carrier``, the earlier rows are carriers, and "their full names" asks about
    ``airlines``, the table whose key ``carrier`` references (declared, or inferred by key:
    never a mere overlap of values). A column that references nothing stays the subject."""
    for edge in JoinGraph(catalog).edges_of(found.table.qualified):
        if edge.child != found.table.qualified or edge.child_columns != (found.column,):
            continue
        parent = catalog.table(edge.parent)
        if parent is not None and (
            parent.primary_key == edge.parent_columns or edge.parent_columns in parent.unique_keys
        ):
            return Subject(parent, edge.parent_column, found.output, via=found)
    return found


def _keyable(select: exp.Select, table: TableInfo, alias: str) -> bool:
    """Whether the earlier statement can return ``table``'s key beside its rows without
    changing them: a one-column key, no DISTINCT, and grouped by that key if grouped."""
    if len(table.primary_key) != 1 or select.args.get("distinct"):
        return False
    group = select.args.get("group")
    if group is None:
        return True
    key = table.primary_key[0]
    return any(
        isinstance(e, exp.Column) and e.name == key and (not e.table or e.table == alias)
        for e in group.expressions
    )


def labels(sql: str, about: Subject, catalog: Catalog) -> list[str]:
    """The subject table's columns that name its rows in the earlier answer (its name
    columns there; none when it showed none): shown beside what a follow-up asks, so
    "what are their emails?" says whose, as the earlier answer said who."""
    select = parse(sql)
    tables = _tables(select, catalog)
    found: list[str] = []
    for projection in select.expressions:
        column = projection.unalias()
        if not isinstance(column, exp.Column) or column.name in found:
            continue
        owner = tables.get(column.table.lower()) if column.table else about.table
        info = about.table.column(column.name)
        if (
            owner is about.table
            and info is not None
            and info.data_type.startswith(TEXT_TYPES)
            and "name" in name_words(column_name(about.table, column.name))
        ):
            found.append(column.name)
    # Only the names the earlier answer showed: an answer that showed its rows by key or
    # by a number gets no column it never showed ("the emails of users 3 and 6" is the
    # emails, as the question spelled out is answered), and a table's first text column
    # is no name ("mpg" beside the heaviest car's year).
    return found


def deciding(sql: str, about: Subject, catalog: Catalog) -> list[str]:
    """The subject table's columns that chose the earlier rows (a ranking's column, a
    number compared by a range: ``results.deciding_columns``). A follow-up about those
    rows is a listing of rows the earlier statement chose, so it shows them after what
    it asks, as its question spelled out does: "what year is it from?" after the
    heaviest car shows the weight, as "What year is the heaviest car from?" does."""
    select = parse(sql)
    tables = _tables(select, catalog)
    found: list[str] = []
    for column in deciding_columns(select, catalog):
        owner = tables.get(column.table.lower()) if column.table else about.table
        if (
            owner is not None
            and owner.qualified == about.table.qualified
            and about.table.column(column.name) is not None
            and column.name not in found
        ):
            found.append(column.name)
    return found


# Questions that ask for a property of the rows, never for the rows themselves: a place,
# a time, a manner or amount, a person doing something ("who makes them?").
_ASKS_PROPERTY = re.compile(
    r"^\W*(?:(?:and|so|then|ok|okay)\W+)?(?:where|when|how|who\s+(?!(?:are|is|were|was)\b)\w+)\b",
    re.IGNORECASE,
)


# "in which concerts did they appear?", "what year is it from?": a thing asked for by a
# noun that is not the earlier rows' own ("which of them", "which singers" after singers).
_ASKS_NOUN = re.compile(
    r"\b(?:which|what)\s+(?!(?:is|are|was|were|do|does|did|has|have|had|can|could|will|"
    r"would|ones?|kind|sort)\b)(?P<noun>[a-z]{3,})\b",
    re.IGNORECASE,
)


# "what did those cars sell for?", "what do they cost?": "what" the object of the verb
# its subject (the earlier rows) does, never those rows themselves.
_ASKS_OBJECT = re.compile(
    r"^\W*(?:(?:and|so|then|ok|okay)\W+)?what\s+(?:did|do|does)\b", re.IGNORECASE
)


def _asks_another_thing(question: str, about: Subject) -> bool:
    if _ASKS_PROPERTY.match(question) is not None or _ASKS_OBJECT.match(question) is not None:
        return True
    asked = _ASKS_NOUN.search(question)
    own = {stem(w) for w in name_words(about.table.name)}
    return asked is not None and stem(asked.group("noun").lower()) not in own


def shows_only_rows(question: str, linked_sql: str, about: Subject, catalog: Catalog) -> bool:
    """Whether a question that asks for a property of the earlier rows ("where do they
    live?", "who makes them?") or for other things by name ("in which concerts did they
    appear?") was linked to a statement that shows nothing but those rows' keys and
    names (or another table's reference to their key): the words it asks with named no
    column, and the rows alone would be answered as if they were the answer."""
    if not _asks_another_thing(question, about):
        return False
    select = parse(linked_sql)
    if select.args.get("group"):
        return False
    if select.args.get("where") and _ASKS_PROPERTY.match(question) is not None:
        return False
    tables = {s.alias_or_name: table_for(catalog, s) for s in sources(select)}
    for projection in select.expressions:
        column = projection.unalias()
        if not isinstance(column, exp.Column):
            return False
        owner = tables.get(column.table) if column.table else about.table
        if owner is not None and owner.qualified != about.table.qualified:
            # another table's column referring to the earlier rows' key is their key too
            if any(
                parent == about.table.qualified and column.name in local
                for local, parent, _ in references_of(owner, catalog)
            ):
                continue
            return False
        if owner is None:
            return False
        names = name_words(column_name(owner, column.name))
        if (
            column.name not in owner.primary_key
            and column.name != _label(owner)
            and not {"name", "title"} & set(names)
        ):
            return False
    return True


_REFERENCE = re.compile(
    r"\b(?:(?P<which>which|how many|any|each|all|none|some) of (?:them|those|these)"
    # "which of those drugs": the user's noun for the rows, said once after the pointer
    r"(?: (?!(?:was|is|has|does|its|us)\b)(?P<part_noun>[a-z]{2,}s|people))?\b"
    r"|(?P<their>their|its)\b"
    # a plural noun after the pointer: one in -s, or "people", English's plural of "person"
    r"|(?P<det>those|these)(?: (?!(?:was|is|has|does|its|us)\b)(?P<noun>[a-z]{2,}s|people))?\b"
    r"|(?P<them>them|they|it)\b"
    # "that group", "this list": the earlier rows together (not "that group by …")
    r"|(?P<group>(?:that|this) (?:group|set|list|bunch|lot|batch))\b(?! (?:of|by)\b)"
    # "spend there": the place the earlier rows are; not "are there", "there were"
    r"|(?<!\bare )(?<!\bis )(?<!\bwas )(?<!\bwere )(?<!\bbe )(?<!\bbeen )(?<!'s )(?P<there>there)\b"
    r"(?!\s+(?:is|are|was|were|be|been|will|has|have|had|exists?|remains?)\b)(?!'))",
    re.IGNORECASE,
)
# Nouns that name no table's rows but point at the earlier ones whatever they are ("those
# people" after a list of customers: the customers).
_POINTERS = frozenset(
    {"ones", "results", "rows", "records", "entries", "items", "people", "persons"}
)
# One earlier row pointed at (the router sends these only after an answer of one row):
# "which museums did he visit?", "what grade does she teach?", "how old is that
# teacher?", said after an auxiliary or a preposition (or the "'s" of "what's that
# user's email?"), never a relative "that".
_ONE = re.compile(
    r"(?:\b(?:is|was|are|were|do|does|did|has|have|had|can|could|will|would|of|for|in|at|by|"
    r"with|to|from|about|on)|(?<=\w)'s)\s+(?:(?P<person>he|she|him)|(?P<owner>his|her)"
    r"|(?:that|this)\s+(?P<noun>(?!(?:is|was|are|were|has|have|had|does|did|do|means?|year"
    r"|quarter|month|week|weekend|day|hour|time|period|date|season|semester|morning|evening"
    r"|night|case|point|moment|way|much|many|far|long|list|table|result|set|group|answer"
    r"|query|data|chart|report|one's)\b)[a-z]{3,}))\b",
    re.IGNORECASE,
)


def refers(question: str) -> bool:
    return _REFERENCE.search(question) is not None or _ONE.search(question) is not None


def pointed(question: str, table: TableInfo, catalog: Catalog) -> str:
    """``question`` with its references to the earlier rows naming ``table`` instead, so
    the linker reads it about that table ("what are their emails" → "what are the emails
    of the customers")."""
    name = readable(table, catalog)

    def replace(match: re.Match[str]) -> str:
        if match.group("which"):
            # "which of those drugs" keeps the user's noun, said once ("which of the
            # drugs drugs" was read with a second noun, the key shown beside the name)
            noun = match.group("part_noun")
            said = noun if noun and noun.lower() not in _POINTERS else name
            return f"{match.group('which')} of the {said}"
        if match.group("det"):
            noun = match.group("noun")
            # "those documents" keeps the user's noun; "those", "those ones" name the table.
            return f"the {noun}" if noun and noun.lower() not in _POINTERS else f"the {name}"
        if match.group("them") or match.group("group"):
            return f"the {name}"
        if match.group("there"):
            before = question[: match.start()]
            after_preposition = re.search(r"\b(?:at|in|from|to|near|into|inside)\s*$", before, re.I)
            return f"the {name}" if after_preposition else f"at the {name}"
        return f"the {name}'s"

    text = _REFERENCE.sub(replace, question, count=1)
    if text == question and (one := _ONE.search(question)) is not None:
        # "that teacher", "this person": the earlier rows' table, whatever noun is said
        said = f"the {name}'s" if one.group("owner") else f"the {name}"
        text = question[: _one_start(question, one)] + said + question[one.end() :]
    # "the customers's emails" reads worse to the linker than "the emails of the customers".
    owned = re.search(rf"the {re.escape(name)}'s ((?:\w+ ){{0,2}}\w+)", text)
    if owned:
        text = f"{text[: owned.start()]}the {owned.group(1)} of the {name}{text[owned.end() :]}"
    return text


def _one_start(question: str, one: re.Match[str]) -> int:
    """Where the reference itself starts: the pronoun, or the "that"/"this" before a noun."""
    for group in ("person", "owner"):
        if one.group(group):
            return one.start(group)
    return question.rindex(" ", 0, one.start("noun") - 1) + 1


def restrict(
    linked_sql: str,
    prior_sql: str,
    about: Subject,
    shown: Sequence[str] = (),
    chosen_by: Sequence[str] = (),
    *,
    catalog: Catalog | None = None,
) -> str:
    """``linked_sql`` keeping only the subject's rows the earlier statement returned;
    a listing shows the ``shown`` columns (the rows' names) first and the ``chosen_by``
    columns (what chose the earlier rows: ``deciding``) after what it asks, and the
    measure an earlier ranking of the subject's rows chose them by (``_ranked_by``)
    where it lists one row per subject row (``_one_per_subject``: ``catalog`` reads
    the keys)."""
    tree = parse(linked_sql)
    alias = _alias_of(tree, about.table)
    if alias is None and about.via is not None and _alias_of(tree, about.via.table):
        return restrict(linked_sql, prior_sql, about.via, catalog=catalog)
    if alias is None:
        raise FollowUpError(f"the question was not read about {about.table.name}")
    # Names go first only where the subject is what the question lists (its first table).
    listing = (
        not tree.args.get("group")
        and all(e.find(exp.AggFunc) is None for e in tree.expressions)
        and sources(tree)[0].alias_or_name == alias
    )
    present = {e.unalias().name for e in tree.expressions if isinstance(e.unalias(), exp.Column)}
    if listing:
        names = [exp.column(identifier(c), table=identifier(alias)) for c in shown
                 if c not in present]  # fmt: skip
        tree.set("expressions", [*names, *tree.expressions])
        show_deciding(tree, [exp.column(identifier(c), table=identifier(alias)) for c in chosen_by])
    merged = _merged(tree, alias, prior_sql, about)
    if merged is not None:
        return merged.sql(dialect="postgres")
    column = exp.column(identifier(about.column), table=identifier(alias))
    earlier = parse(prior_sql)
    renamed = _own_aliases(earlier, {t.alias_or_name for t in tree.find_all(exp.Table)})
    if about.key_from:
        key_from = renamed.get(about.key_from, about.key_from)
        key = exp.column(identifier(about.column), table=identifier(key_from))
        earlier.set("expressions", [*earlier.expressions, exp.alias_(key, KEY)])
    measure = _ranked_by(earlier, about) if _one_per_subject(tree, alias, catalog) else None
    if measure is not None and _merges_ranked_rows(tree, earlier):
        measure = None  # distinct rows, not one per ranked row: matched by key, no measure
    if measure is not None:
        # one earlier row per subject row: joined, each row shows the measure it was
        # ranked by, as the question spelled out shows it
        on = exp.EQ(this=exp.column(identifier(about.output), table="earlier"), expression=column)
        tree = tree.join(earlier.subquery("earlier"), on=on, copy=False)
        ranked = exp.column(identifier(measure), table="earlier")
        tree.set("expressions", [*tree.expressions, exp.alias_(ranked, identifier(measure))])
        return tree.sql(dialect="postgres")
    if about.output:
        inner = exp.select(exp.column(identifier(about.output), table="earlier")).from_(
            earlier.subquery("earlier")
        )
        kept = _grouped_rows_kept(alias, prior_sql, about)
        if kept is not None:
            tree = tree.where(kept, copy=False)
    else:
        # No output column: the rows the earlier statement counted, by the table's key.
        source = _alias_of(earlier, about.table) or about.table.name
        inner = earlier.copy()
        inner.set("expressions", [exp.column(identifier(about.column), table=identifier(source))])
        for drop in ("order", "limit", "offset", "distinct"):
            inner.set(drop, None)
    tree = tree.where(exp.In(this=column, query=exp.Subquery(this=inner)), copy=False)
    return tree.sql(dialect="postgres")


def _one_per_subject(tree: exp.Select, alias: str, catalog: Catalog | None) -> bool:
    """Whether ``tree`` lists rows, each of one subject row (aliased ``alias``): the
    subject's own rows, or the rows of the table it lists that each subject row refers
    to by that table's key ("which template does it use?" after the document with the
    most paragraphs: one template per document). Not where it groups or aggregates."""
    if tree.args.get("group") or any(e.find(exp.AggFunc) is not None for e in tree.expressions):
        return False
    first = sources(tree)[0]
    if first.alias_or_name == alias:
        return True
    info = table_for(catalog, first) if catalog is not None else None
    if info is None or len(info.primary_key) != 1:
        return False
    key = info.primary_key[0].lower()
    for join in tree.args.get("joins") or ():
        on = join.args.get("on")
        if not isinstance(on, exp.EQ) or join.this.alias_or_name != alias:
            continue
        sides = {(c.table, c.name.lower()) for c in (on.this, on.expression)
                 if isinstance(c, exp.Column)}  # fmt: skip
        if (first.alias_or_name, key) in sides and len(sides) == 2:
            return True
    return False


def _merges_ranked_rows(tree: exp.Select, earlier: exp.Select) -> bool:
    """Whether ``tree``'s DISTINCT can merge ranked rows: it lists distinct rows of the
    table the ranked rows refer to ("who supplies them?" after the top 5 products), and
    the earlier cut kept more than one row. Two ranked rows of one supplier are one
    distinct row; the measure each was ranked by would split them again (one row per
    product, two for that supplier), rows the question spelled out ("Which suppliers
    supply the 5 products …?") does not return. One ranked row (LIMIT 1) merges
    nothing: its measure is shown as before."""
    if not tree.args.get("distinct"):
        return False
    limit = earlier.args.get("limit")
    cut = limit.expression if isinstance(limit, exp.Limit) else None
    return not (isinstance(cut, exp.Literal) and cut.is_int and int(cut.this) <= 1)


def _ranked_by(earlier: exp.Select, about: Subject) -> str | None:
    """The output the earlier statement ranked its groups by, where it is a ranking cut
    by a LIMIT of one group per subject row ("which user had the most sessions?":
    grouped by the user, ordered by the count): the column that chose its rows, as a
    listing's first sort key is (``results.deciding_columns``). A follow-up listing of
    those rows ("what's that user's email?") shows it after what it asks, as its
    question spelled out ("What is the email of the user who had the most sessions?")
    shows the count beside the email. None for anything else: a listing (its sort key
    is ``deciding``'s), no cut, a sort key that is no aggregate of the groups, or groups
    that are not the subject's rows (a join would repeat them)."""
    group = earlier.args.get("group")
    order = earlier.args.get("order")
    if group is None or order is None or earlier.args.get("limit") is None:
        return None
    if not about.output or earlier.args.get("distinct"):
        return None
    outputs = {e.alias_or_name.lower(): e for e in earlier.expressions}
    keyed = outputs.get(about.output.lower())
    key = keyed.unalias() if keyed is not None else None
    if not isinstance(key, exp.Column) or key.name != about.column or not key.table:
        return None
    # every group a column of the subject's own row: one group per subject row
    if not all(
        isinstance(g, exp.Column) and g.table == key.table for g in group.expressions
    ) or not any(g.name == key.name for g in group.expressions):
        return None
    first = order.expressions[0].this
    if not isinstance(first, exp.Column) or first.table:
        return None
    ranked = outputs.get(first.name.lower())
    if ranked is None or not ranked.alias or ranked.find(exp.AggFunc) is None:
        return None
    return str(ranked.alias)


def _merged(tree: exp.Select, alias: str, prior_sql: str, about: Subject) -> exp.Select | None:
    """``tree`` with the earlier statement's conditions in place of the sub-query of its
    rows, where the two are the same rows: the earlier statement reads the subject's
    table alone, by its one-column key, with plain conditions and nothing that groups,
    cuts or folds its rows ("what was the average arrival delay of those flights?" after
    "how many flights went from EWR to SFO in March?" is the same flights, averaged). A
    row's key is among the keys of the rows meeting the conditions exactly when the row
    meets them, so the statement is the earlier one with another projection, as the
    question spelled out reads, and a later follow-up (a time shift, a filter) finds the
    earlier conditions where it finds any statement's."""
    table = about.table
    if table.primary_key != (about.column,):
        return None
    earlier = parse(prior_sql)
    read = sources(earlier)
    if (
        len(read) != 1
        or read[0].name.lower() != table.name.lower()
        or earlier.args.get("joins")
        or any(earlier.args.get(k) for k in ("group", "having", "limit", "offset", "distinct"))
        or earlier.args.get("with")
        or len([s for s in sources(tree) if s.name.lower() == table.name.lower()]) != 1
    ):
        return None
    where = earlier.args.get("where")
    if where is None:
        return tree
    condition = _rebound(where.this, read[0].alias_or_name, alias)
    return None if condition is None else tree.where(condition, copy=False)


def _grouped_rows_kept(alias: str, prior_sql: str, about: Subject) -> exp.Expression | None:
    """ "list their usernames" after "active users per country": the earlier rows are
    groups of the subject's own rows, and the rows in them are the ones its conditions
    kept (the active users), not every row that shares a group's value (every user of
    those countries, inactive too). Where the earlier statement groups the subject's
    table read alone, with plain conditions on its own columns, those conditions (on the
    follow-up's alias) are kept beside the groups' values; None otherwise (a join, a
    sub-query, no condition, no grouping: the groups' values alone say the rows)."""
    earlier = parse(prior_sql)
    read = sources(earlier)
    where = earlier.args.get("where")
    if (
        not earlier.args.get("group")
        or where is None
        or len(read) != 1
        or read[0].name.lower() != about.table.name.lower()
        or earlier.args.get("joins")
        or earlier.args.get("with")
    ):
        return None
    return _rebound(where.this, read[0].alias_or_name, alias)


def _rebound(condition: exp.Expression, own: str, alias: str) -> exp.Expression | None:
    """The earlier statement's plain ``condition`` on its one table (``own``), said of the
    follow-up's ``alias`` instead; None where it holds a sub-query or reads another table
    (then it is not the same rows' condition to move)."""
    moved = condition.copy()
    if moved.find(exp.Select, exp.Subquery) is not None:
        return None
    for column in moved.find_all(exp.Column):
        if column.table and column.table != own:
            return None
        column.set("table", identifier(alias))
    return moved


def _own_aliases(earlier: exp.Select, taken: set[str]) -> dict[str, str]:
    """Renames the earlier statement's table aliases that the follow-up's statement also
    uses ("t0", "t1" from both readings), in place; returns old → new. Nested, the two
    statements are still two scopes to Postgres, but not to a reader of the whole
    statement: the checks name each alias's table once for the statement, and a join
    ``t1.patient_id = t0.patient_id`` of the follow-up read with the earlier statement's
    ``t1`` (drugs) is a join of no key, refused."""
    renamed: dict[str, str] = {}
    used = taken | {t.alias_or_name for t in earlier.find_all(exp.Table)}
    for table in earlier.find_all(exp.Table):
        alias = table.alias
        if not alias or alias not in taken:
            continue
        if alias not in renamed:
            fresh = f"earlier_{alias}"
            while fresh in used:
                fresh += "_"
            used.add(fresh)
            renamed[alias] = fresh
        table.set("alias", exp.TableAlias(this=identifier(renamed[alias])))
    for column in earlier.find_all(exp.Column):
        if column.table in renamed:
            column.set("table", identifier(renamed[column.table]))
    return renamed


def _alias_of(select: exp.Select, table: TableInfo) -> str | None:
    for source in sources(select):
        if source.name.lower() == table.name.lower():
            return source.alias_or_name
    return None


def _key_columns(table: TableInfo, catalog: Catalog) -> set[str]:
    """A table's columns that hold keys, its own or another table's: declared, or one
    number column the catalog found joined to another table's key (a warehouse that
    declares none). Grouping by one groups by numbers the user never sees; "per
    country" over car makers whose ``country`` holds a countries key means the
    countries, named by their name, not the key numbers."""
    keys = {c for fk in table.foreign_keys for c in fk.columns} | set(table.primary_key)
    types = {c.name: c.data_type for c in table.columns}
    for join in catalog.joins or ():
        parent = catalog.table(join.parent)
        if (
            join.child == table.qualified
            and len(join.child_columns) == 1
            and not types.get(join.child_columns[0], "").startswith(TEXT_TYPES)
            and parent is not None
            and tuple(join.parent_columns) == tuple(parent.primary_key)
        ):
            keys.add(join.child_columns[0])
    return keys


def _label(table: TableInfo) -> str | None:
    """The column that names a table's rows: a text column, "name" first, not a key."""
    texts = [
        c.name
        for c in table.columns
        if c.data_type.startswith(TEXT_TYPES) and c.name not in table.primary_key
    ]
    named = [n for n in texts if "name" in name_words(column_name(table, n))]
    return next(iter(named or texts), None)


def _via_reference(
    select: exp.Select, words: list[str], catalog: Catalog, phrase: Sequence[str] = ()
) -> tuple[list[exp.Column], list[exp.Column]] | None:
    """(the columns shown, the columns grouped by besides) of a table reached from one
    of the statement's tables by a key: the one the words name with the table ("by
    merchant category" → merchants.category), or the label of the table they name,
    grouped by its key as well ("by drug" → the drugs table's name, per drug). Where
    that table is reached by more than one key (flights' origin and dest both name an
    airport), the whole ``phrase`` must name the key: "by origin airport" goes
    through ``origin``; "by airport" names none and is refused, since grouping by
    either would be a guess whose rows look as right as the other's."""
    for source in sources(select):
        info = table_for(catalog, source)
        if info is None:
            continue
        references = references_of(info, catalog)
        for local, referenced, remote in references:
            parent = catalog.table(referenced)
            if parent is None:
                continue
            parent_name = readable(parent, catalog)
            parent_keys = _key_columns(parent, catalog)
            named = [
                c.name for c in parent.columns
                if c.name not in parent_keys
                and covers(words, column_name(parent, c.name))
                and spelled_share(words, f"{column_name(parent, c.name)} {parent_name}") >= 0.99
            ]  # fmt: skip
            # "per support rep": the words spell the key itself (``support_rep_id``, its
            # "id" unsaid), so they name the row it refers to, whatever that table is called;
            # a number key only: a code (flights' ``origin``) is shown as it is stored
            numbers = not any(
                (col := parent.column(r)) is None or col.data_type.startswith(TEXT_TYPES)
                for r in remote
            )
            key_said = (
                " ".join(n for c in local for n in name_words(column_name(info, c)) if n != "id")
                if numbers
                else ""
            )
            by_key = (
                bool(key_said)
                and spelled_share(words, key_said) >= 0.99
                and covers(words, key_said)
            )
            said = spelled_share(words, parent_name) >= 0.99 or by_key
            whole = said and (len(named) != 1 or named[0] in entity_columns(parent))
            if len(named) == 1 and not whole:
                shown = named
            elif not whole or shown_entity(parent, "_") is None:
                continue
            rivals = list(dict.fromkeys(r[0] for r in references if r[1] == referenced))
            if len(rivals) > 1:
                chosen = _key_named(phrase or words, parent_name, info, rivals)
                if chosen is None:
                    raise FollowUpError(
                        f"the table grouped by is reached by more than one key of {info.name}, "
                        "and the words name none of them"
                    )
                if chosen != local:
                    continue
            alias = _alias_of(select, parent)
            if alias is None:
                # a name no table of the statement has (a regroup of a regroup joins again)
                taken = {t.alias_or_name for t in select.find_all(exp.Table)}
                alias = next(
                    a for n in range(1, len(taken) + 2)
                    if (a := "grouped" if n == 1 else f"grouped{n}") not in taken
                )  # fmt: skip
                on = exp.and_(*(
                    exp.column(identifier(r), table=alias).eq(
                        exp.column(identifier(c), table=identifier(source.alias_or_name)))
                    for c, r in zip(local, remote, strict=True)
                ))  # fmt: skip
                target = exp.Table(this=identifier(parent.name), db=identifier(parent.schema))
                select.join(target.as_(alias), on=on, copy=False)
            if whole:
                # rows of a table: grouped by its key too, so two of the same name stay two
                return shown_entity(parent, alias)
            return [exp.column(identifier(c), table=identifier(alias)) for c in shown], []
    return None


def _key_named(
    said: Sequence[str],
    parent_name: str,
    info: TableInfo,
    rivals: list[tuple[str, ...]],
) -> tuple[str, ...] | None:
    """The one key among ``rivals`` (each a tuple of ``info``'s columns referencing the
    same table) that a word of ``said`` names, the words naming that table left out
    ("origin airport": origin, not dest); None when no key or more than one is named."""
    table_words = name_words(parent_name)
    rest = [w for w in said if spelled_share([w], " ".join(table_words)) < 0.9]

    def names(key: tuple[str, ...]) -> bool:
        parts = [n for c in key for n in name_words(column_name(info, c))]
        return any(spelled_share([w], n) >= 0.8 for w in rest for n in parts)  # "dest": 0.85

    named = [key for key in rivals if names(key)]
    return named[0] if len(named) == 1 else None


def _grouping_column(
    select: exp.Select,
    words: list[str],
    catalog: Catalog,
    dimension: str,
    phrase: Sequence[str] = (),
) -> tuple[list[exp.Column], list[exp.Column]] | None:
    """The column ``words`` name among the statement's tables (see :func:`regrouped`)."""
    exact: list[tuple[bool, bool, int, str, str]] = []
    partial: list[tuple[bool, bool, int, str, str]] = []
    seen: set[tuple[str, str]] = set()
    owners: dict[str, TableInfo] = {}
    for source in sources(select):
        info = table_for(catalog, source)
        if info is None or (info.qualified, source.alias_or_name) in seen:
            continue
        seen.add((info.qualified, source.alias_or_name))
        owners[source.alias_or_name] = info
        keys = _key_columns(info, catalog)
        table_name = readable(info, catalog)
        for column in info.columns:
            said = column_name(info, column.name)
            names = name_words(said)
            if column.name in keys or "id" in names:
                continue  # a key groups by codes, not by what the user named
            spelled = spelled_share(words, f"{said} {table_name}")
            if spelled < 0.99 or spelled_share(words, said) == 0:
                continue
            # text first, then a column whose unsaid word is "name" (the label), shorter
            entry = (column.data_type.startswith(TEXT_TYPES), "name" in names, -len(names),
                     source.alias_or_name, column.name)  # fmt: skip
            (exact if covers(words, said) else partial).append(entry)
    if exact:
        best = max(exact)
        if [e for e in exact if e[:3] == best[:3] and e[4] != best[4]]:
            raise FollowUpError(f"more than one column of the earlier tables is '{dimension}'")
        owner = owners[best[3]]
        if names_table(words, owner, catalog) and best[4] in entity_columns(owner):
            # "per car maker": the makers, by key and what names them (``maker`` and
            # ``fullname``), as the question spelled out groups them
            entity = shown_entity(owner, best[3])
            if entity is not None:
                return entity
        return [exp.column(identifier(best[4]), table=identifier(best[3]))], []
    found = _via_reference(select, words, catalog, phrase)
    if found is None and partial:
        best = max(partial)
        found = [exp.column(identifier(best[4]), table=identifier(best[3]))], []
    return found


def _head_alone(
    select: exp.Select,
    dropped: list[str],
    news: list[exp.Column],
    catalog: Catalog,
    dimension: str,
) -> None:
    """A phrase read by its head ("model year" → ``year``) leaves its first words unread;
    where one of them is itself the whole name of another column of the head's table
    ("engine type" on ``planes``, with ``engine`` and ``type``), the words say two
    columns and which one groups is not in them: refused naming both, not grouped by the
    head. Only a head that is a noun of kinds (``KIND_NOUNS``: "X type" is the kind of X,
    which a column named X may hold); "model year" is the year. A left word that names
    no column of that table ("model" beside ``year`` on a
    table without ``model``) leaves the head's reading as it is."""
    if not dropped or len(news) != 1 or stem(news[0].name.lower()) not in KIND_NOUNS:
        return
    chosen = news[0]
    aliases = {s.alias_or_name: s for s in sources(select)}
    source = aliases.get(chosen.table)
    info = table_for(catalog, source) if source is not None else None
    if info is None:
        return
    left = set(dropped)
    for column in info.columns:
        if column.name == chosen.name:
            continue
        named = content_words(column.name)
        if len(named) == 1 and named[0] in left:
            raise FollowUpError(
                f"'{dimension}' may name {info.name}.{column.name} or {info.name}.{chosen.name}"
            )


def regrouped(sql: str, dimension: str, catalog: Catalog, *, add: bool = False) -> str:
    """``sql`` grouped by the column ``dimension`` names instead of its own grouping (or
    as well, with ``add``): a column the words spell exactly, else a table they name
    (reached by a key, grouped by what names its rows), else a column they spell in part
    ("drug" → "drug_unit" only when no drugs table is reachable). A phrase no column
    fits is read by its head, the last word ("model year" → the year). The grouping
    replaced is one column, or the columns that name one table's rows (its key and
    name)."""
    select = parse(sql)
    words = content_words(dimension)
    found: tuple[list[exp.Column], list[exp.Column]] | None = None
    for start in range(len(words)):
        found = _grouping_column(select, words[start:], catalog, dimension, words)
        if found:
            break
    if not found:
        raise FollowUpError(f"no column of the earlier tables is named '{dimension}'")
    news, keys = found
    _head_alone(select, words[:start], news, catalog, dimension)
    # a key that is itself what names the rows (a type's code) is shown once
    named = {n.sql(dialect="postgres") for n in news}
    keys = [k for k in keys if k.sql(dialect="postgres") not in named]
    group = select.args.get("group")
    if group is None:
        if any(e.find(exp.AggFunc) is None for e in select.expressions):
            raise FollowUpError("the earlier statement is neither a total nor a grouping")
        # rows of a table (grouped by its key) are shown by their key and name, as the
        # same question asked alone shows them
        select.set("expressions", [*(n.copy() for n in [*keys, *news]), *select.expressions])
        select.set("group", exp.Group(expressions=[n.copy() for n in [*news, *keys]]))
        return select.sql(dialect="postgres")
    if add:
        # Beside the existing grouping: after its columns in the projection.
        grouped = len([e for e in select.expressions if e.find(exp.AggFunc) is None])
        select.set("expressions", [*select.expressions[:grouped],
                                   *(n.copy() for n in [*keys, *news]),
                                   *select.expressions[grouped:]])  # fmt: skip
        group.set("expressions", [*group.expressions, *(n.copy() for n in [*news, *keys])])
        return select.sql(dialect="postgres")
    old = {e.sql(dialect="postgres") for e in group.expressions}
    owners = {e.table for e in group.expressions if isinstance(e, exp.Column)}
    freed = set(owners)
    labelled = _named_by_grouped_key(select, catalog)
    owners -= labelled
    if len(old) != 1 and not (
        len(owners) == 1 and all(isinstance(e, exp.Column) for e in group.expressions)
    ):
        raise FollowUpError("the earlier statement groups by more than one thing")
    kept: list[exp.Expr] = []
    at: int | None = None
    removed: list[exp.Column] = []
    for projection in select.expressions:
        if projection.unalias().sql(dialect="postgres") in old:
            at = len(kept) if at is None else at
            old.add(exp.column(identifier(projection.alias_or_name)).sql(dialect="postgres"))
            if isinstance(projection.unalias(), exp.Column):
                removed.append(projection.unalias())
            continue
        kept.append(projection)
    at = 0 if at is None else at
    by_name = any(c.table in labelled for c in removed)
    if (
        keys
        and not by_name
        and _codes(removed, select, catalog)
        and not _keys(removed, select, catalog)
    ):
        # They were shown by a code that refers to another table's key (flights per
        # carrier): the new ones are shown by their code too (airports by faa), as the
        # same question asked alone shows them; shown by the code and the name of the
        # row it refers to (a carrier's code and its airline's name), by both.
        news = keys
    elif keys:
        # Rows of a table, grouped by its key: shown by their key and name, as the same
        # question asked alone shows them (a name that repeats stays two rows, told apart).
        news = [*keys, *news]
    select.set("expressions", [*kept[:at], *(n.copy() for n in news), *kept[at:]])
    keyed = {k.sql(dialect="postgres") for k in keys}
    names = [n for n in news if n.sql(dialect="postgres") not in keyed]
    by_text = {n.sql(dialect="postgres"): n for n in [*names, *keys]}
    select.set("group", exp.Group(expressions=[n.copy() for n in by_text.values()]))
    order = select.args.get("order")
    if order is not None:
        shown = next((n for n in news if n.name not in _keys(news, select, catalog)), news[0])
        for ordered in order.expressions:
            if ordered.this.sql(dialect="postgres") in old:
                ordered.set("this", shown.copy())
    _drop_unused_joins(select, catalog, freed - {n.table for n in news}, labelled)
    return select.sql(dialect="postgres")


def _named_by_grouped_key(select: exp.Select, catalog: Catalog) -> set[str]:
    """The aliases of tables joined by their whole one-column key to a column the
    statement groups by ("per salesperson": ``sales.salesperson_id`` grouped, the
    salespersons' names beside it): each such table's columns name the one row the key
    picks, so grouping by them too is still one grouping, the key's, and a regroup
    replaces them all with it."""
    group = select.args.get("group")
    if group is None:
        return set()
    grouped = {
        (e.table, e.name) for e in group.expressions if isinstance(e, exp.Column) and e.table
    }
    found: set[str] = set()
    for join in select.args.get("joins") or ():
        table, on = join.this, join.args.get("on")
        info = table_for(catalog, table) if isinstance(table, exp.Table) else None
        if info is None or len(info.primary_key) != 1 or not isinstance(on, exp.EQ):
            continue
        alias = table.alias_or_name
        sides = [on.this, on.expression]
        if not all(isinstance(c, exp.Column) for c in sides):
            continue
        own = [c for c in sides if c.table == alias]
        other = [c for c in sides if c.table != alias]
        if (
            len(own) == 1
            and len(other) == 1
            and own[0].name == info.primary_key[0]
            and (other[0].table, other[0].name) in grouped
        ):
            found.add(alias)
    return found


def _drop_unused_joins(
    select: exp.Select,
    catalog: Catalog,
    freed: set[str],
    labelled: set[str] | frozenset[str] = frozenset(),
) -> None:
    """Joins the regrouped statement no longer reads, where dropping them keeps its rows:
    a table joined by its whole key through a declared, non-null foreign key meets every
    row exactly once. A table only the replaced grouping read (``freed``: "per car maker
    instead" after cars per country) was joined to say the groups, not to choose rows:
    joined by its whole key it repeats none, and the question spelled out ("How many
    cars does each car maker have?") never joins it, so it goes, as the joins after it
    that only reached it do. A table ``labelled`` (see :func:`_named_by_grouped_key`)
    left joined by its whole key meets each row at most once and drops none."""
    joins = list(select.args.get("joins") or ())
    dropped = True
    while dropped:
        dropped = False
        for join in joins:
            table = join.this
            if not isinstance(table, exp.Table) or join.args.get("kind"):
                continue
            alias = table.alias_or_name
            left = str(join.args.get("side") or "").upper() == "LEFT"
            if join.args.get("side") and not (left and alias in labelled):
                continue
            inside = {id(c) for c in join.find_all(exp.Column)}
            others = [
                c for c in select.find_all(exp.Column) if c.table == alias and id(c) not in inside
            ]
            if others or not (
                left or _meets_once(select, join, catalog, read_for_groups=alias in freed)
            ):
                continue
            joins.remove(join)
            select.set("joins", joins)
            dropped = True
            break
    select.set("joins", joins)


def _meets_once(
    select: exp.Select, join: exp.Join, catalog: Catalog, *, read_for_groups: bool = False
) -> bool:
    """Whether ``join`` matches each row at most once (by the joined table's whole key)
    and, unless the table was ``read_for_groups`` only, exactly once (a declared,
    non-null reference)."""
    joined = table_for(catalog, join.this)
    on = join.args.get("on")
    if joined is None or on is None or not joined.primary_key:
        return False
    tables = {s.alias_or_name: table_for(catalog, s) for s in sources(select)}
    alias = join.this.alias_or_name
    pairs: dict[str, tuple[TableInfo, str]] = {}
    for part in on.flatten() if isinstance(on, exp.And) else [on]:
        equality = part.unnest()
        if not isinstance(equality, exp.EQ):
            return False
        sides = [equality.this, equality.expression]
        if not all(isinstance(c, exp.Column) for c in sides):
            return False
        own = [c for c in sides if c.table == alias]
        other = [c for c in sides if c.table != alias]
        if len(own) != 1 or len(other) != 1 or (info := tables.get(other[0].table)) is None:
            return False
        pairs[own[0].name] = (info, other[0].name)
    if set(pairs) != set(joined.primary_key):
        return False
    if read_for_groups:
        return True
    for key, (info, local) in pairs.items():
        column = info.column(local)
        declared = any(
            fk.referenced_table == joined.qualified
            and local in fk.columns
            and fk.referenced_columns[fk.columns.index(local)] == key
            for fk in info.foreign_keys
        )
        if column is None or column.nullable or not declared:
            return False
    return True


def _keys(columns: Sequence[exp.Column], select: exp.Select, catalog: Catalog) -> set[str]:
    tables = {s.alias_or_name: table_for(catalog, s) for s in sources(select)}
    return {
        c.name
        for c in columns
        if (t := tables.get(c.table)) is not None and c.name in t.primary_key
    }


def _codes(columns: Sequence[exp.Column], select: exp.Select, catalog: Catalog) -> set[str]:
    """The columns that refer to another table's key (``flights.carrier`` →
    ``airlines.carrier``): a row shown by one is shown by a code, not a name."""
    tables = {s.alias_or_name: table_for(catalog, s) for s in sources(select)}
    return {
        c.name
        for c in columns
        if (t := tables.get(c.table)) is not None
        and any(c.name in local for local, _, _ in references_of(t, catalog))
    }


def _forms(value: str) -> list[str]:
    """The value as said, then without the trailing words that only name what it
    qualifies ("topical drugs" → "topical", "failed ones" → "failed")."""
    words = value.split()
    return [" ".join(words[:n]) for n in range(len(words), 0, -1)]


def swapped(sql: str, value: str, catalog: Catalog, *, whole: bool = False) -> str:
    """``sql`` with ``value`` in place of the literal compared with the column storing it;
    with ``whole``, only the value as said (no trailing words dropped). A value no one
    compared column stores, whose words split into two compared columns' values ("John
    Doe" after first name 'Jane' and last name 'Smith'), replaces both."""
    select = parse(sql)
    compared = [c for c in comparisons(select, catalog) if c.literal.is_string]
    said_words = value.split()
    for index, form in enumerate(_forms(value)[:1] if whole else _forms(value)):
        hits = [(c, stored) for c in compared if (stored := _stored_by(c, form)) is not None]
        # a name said by its leading words ("Delta" for 'Delta Air Lines Inc.'), as the
        # linker reads it, where no compared column stores the words as said
        hits = hits or [(c, led) for c in compared if (led := _led_by(c, form)) is not None]
        hits = _one_value(hits)
        if len(hits) > 1:
            raise FollowUpError(f"'{value}' could replace more than one earlier value")
        if not hits and index == 0 and (pair := _two_values(compared, said_words)):
            for item, stored in pair:
                _put(item, stored)
            return select.sql(dialect="postgres")
        dropped = " ".join(said_words[len(form.split()) :])
        if (
            hits
            and dropped
            and any(_stored_by(c, dropped) for c in compared if c is not hits[0][0])
        ):
            # "John Doe" after Jane Smith: the words left off are another compared
            # column's value (a last name), not words that only say what the value qualifies
            raise FollowUpError(f"'{value}' names more than one earlier value")
        if hits:
            _put(*hits[0])
            return select.sql(dialect="postgres")
    raise FollowUpError(f"no compared column of the earlier statement stores '{value}'")


def _put(item: Comparison, stored: str) -> None:
    """The stored value in place of the compared literal, which keeps its own shape: LIKE
    wildcards, a lower-cased compare."""
    text = stored.lower() if item.folded else stored
    said = item.literal.this
    head = "%" if said.startswith("%") else ""
    tail = "%" if said.endswith("%") and len(said) > 1 else ""
    item.literal.replace(exp.Literal.string(f"{head}{text}{tail}"))


def _two_values(
    compared: Sequence[Comparison], words: Sequence[str]
) -> list[tuple[Comparison, str]] | None:
    """The one split of ``words`` into leading and trailing words that two different
    compared columns each store (a first and a last name), as (comparison, stored)
    pairs; None where no split, or more than one, fits."""
    found: list[list[tuple[Comparison, str]]] = []
    for cut in range(1, len(words)):
        head, tail = " ".join(words[:cut]), " ".join(words[cut:])
        heads = [(c, v) for c in compared if (v := _stored_by(c, head)) is not None]
        tails = [(c, v) for c in compared if (v := _stored_by(c, tail)) is not None]
        if len(heads) == 1 and len(tails) == 1 and heads[0][0] is not tails[0][0]:
            found.append([heads[0], tails[0]])
    return found[0] if len(found) == 1 else None


def _one_value(hits: list[tuple[Comparison, str]]) -> list[tuple[Comparison, str]]:
    """One of ``hits`` where every one compares the same literal with the same column of
    the same table: one value said once and carried by the conversation into a
    sub-query ("how many flights did each of them have there?" after the carriers that
    flew to DEN keeps 'DEN' in the earlier rows' sub-query and on the new rows), so a
    swap replaces it everywhere, as the question spelled out says the new value of both.
    Left as they are otherwise (two values, or one value of two columns, is ambiguous)."""
    if len(hits) < 2:
        return hits
    first = hits[0][0]
    shape = ({t.qualified for t in first.owners}, first.column.lower(), first.literal.this)
    if any(
        ({t.qualified for t in c.owners}, c.column.lower(), c.literal.this) != shape
        for c, _ in hits[1:]
    ):
        return hits
    for item, stored in hits[1:]:
        # each literal keeps its own shape, as :func:`swapped` keeps the first one's
        text = stored.lower() if item.folded else stored
        said = item.literal.this
        head = "%" if said.startswith("%") else ""
        tail = "%" if said.endswith("%") and len(said) > 1 else ""
        item.literal.replace(exp.Literal.string(f"{head}{text}{tail}"))
    return hits[:1]


def _stored_by(item: Comparison, value: str) -> str | None:
    return next(
        (s for t in item.owners if (s := stored_spelling(t, item.column, value)) is not None),
        None,
    )


def _led_by(item: Comparison, value: str) -> str | None:
    return next(
        (s for t in item.owners if (s := led_value(t, item.column, value)) is not None), None
    )


# "the Asian ones", "those in Europe": the words around a value a swap says it with
_ONES = re.compile(r"^(?:(?:the|those|these)\s+)?(?P<v>.+?)(?:\s+ones?)?$", re.IGNORECASE)


def _as_condition(value: str) -> str:
    """A swapped value said as a kind of row ("and the Asian ones?") as the condition it
    names ("Asian"): the rows' stand-in "ones" is no word a column's values hold, and
    asked with it ("Which car makers are the Asian ones?") the linker places nothing."""
    match = _ONES.match(value.strip())
    return match.group("v") if match is not None and match.group("v") else value


async def built(
    sql: str, prior: Prior, catalog: Catalog, link: Link, question: str = ""
) -> tuple[str, str]:
    """(the statement, how it was built) for the relations that edit the statement; a
    filter's condition and a period said as today's are read by ``link`` (the schema
    linker, through the ask pipeline). ``question``: the follow-up as the router sent it;
    a value swap that is the whole of it ("delta?") is one only where the value is
    stored in a compared column (see :func:`said_alone`)."""
    if prior.relation is Relation.FILTER and prior.remove:
        # "drop the delay filter": one of the statement's own conditions, named
        return without_condition(sql, prior.condition, catalog), (
            "the previous statement, without the condition the words name"
        )
    if prior.relation is Relation.FILTER:
        try:
            linked = await link_condition(sql, prior.condition, catalog, link)
        except FollowUpError as unread:
            # "payments made by credit card", "transactions above 100": the measured
            # rows named by their own noun (``_own_noun``)
            own = await _by_own_noun(sql, prior.condition, catalog, link)
            # "worth more than 20": a comparison on the value the earlier rows show
            worth = own or valued(sql, prior.condition, catalog)
            # "only those with more than 40": a bare bound on the one measure shown
            worth = worth or bare_bound(sql, prior.condition, catalog)
            if worth is None:
                if prior.exclude:
                    raise
                return dated(sql, prior.condition, catalog, unread), (
                    "the previous statement, over the period said"
                )
            linked = worth
        return with_conditions(sql, linked, exclude=prior.exclude), (
            "the previous statement, without the rows the condition names"
            if prior.exclude
            else "the previous statement, with a condition added"
        )
    if prior.relation is Relation.TIME_SHIFT:
        return await time_shifted(sql, prior.period, catalog, link), (
            "the previous statement over another period"
        )
    if prior.relation is Relation.VALUE_SWAP:
        try:
            return edited(sql, prior, catalog)
        except FollowUpError as stored:
            if said_alone(question, prior.value):
                raise
            # Not a stored value ("what about older than 40?"): the condition the words
            # link to, in place of the statement's own on that column.
            try:
                linked = await link_condition(sql, _as_condition(prior.value), catalog, link)
                changed = _in_place_or_added(sql, linked, catalog)
            except FollowUpError:
                raise stored from None
            return changed, "the previous statement, another condition"
    return edited(sql, prior, catalog)


def said_alone(question: str, value: str) -> bool:
    """Whether the follow-up is the swapped value and nothing else ("delta?"): a phrase
    the router offers as a swap only because it is bare. It swaps a value the statement
    compares when the stored values say it is one of that column's (the same column, a
    value of it or its leading words); otherwise it is read as asked, never as a
    condition the words might link to, which a phrase said alone does not say."""
    words = re.findall(r"[\w&'-]+", question.lower())
    return bool(words) and words == re.findall(r"[\w&'-]+", value.lower())


async def _by_own_noun(sql: str, condition: str, catalog: Catalog, link: Link) -> Linked | None:
    """The condition read on the rows its noun names, the earlier statement's measured
    table (``_own_noun``): the agent or manner of their verb asked of that table alone,
    or a number compared with their amount; None where the words are neither."""
    if (said := agent_or_manner(sql, condition, catalog)) is not None:
        table, phrase = said
        try:
            return await link_condition(sql, phrase, catalog, link, about=table)
        except FollowUpError:
            return None
    return amount_compared(sql, condition, catalog)


def _in_place_or_added(sql: str, linked: Linked, catalog: Catalog) -> str:
    """The statement with ``linked``'s condition in place of its own on the same column,
    or, where it compares none and the words name a stored value no compared one could
    stand for, with the condition added (see ``_added``)."""
    try:
        return with_conditions(sql, linked, instead=True)
    except FollowUpError:
        if not adds_a_value(sql, linked, catalog):
            raise
        return with_conditions(sql, linked)


def edited(sql: str, prior: Prior, catalog: Catalog) -> tuple[str, str]:
    """(the statement, how it was built) for the relations that edit the statement
    without reading words with the linker."""
    if prior.relation is Relation.ROW_LIMIT:
        return with_limit(sql, prior.limit, ascending=prior.ascending, catalog=catalog), (
            f"the previous statement, {prior.limit} rows"
        )
    if prior.relation is Relation.REGROUP:
        try:
            return regrouped(sql, prior.dimension, catalog, add=prior.add), (
                "the previous statement, regrouped"
            )
        except FollowUpError as unnamed:
            # "and by honda?" after cars made by toyota: "by" said who made them, and the
            # words name no column but a value stored where the statement compares one
            # (the maker's name): another value, not another grouping.
            if prior.add:
                raise
            try:
                return swapped(sql, prior.dimension, catalog, whole=True), (
                    "the previous statement, another value"
                )
            except FollowUpError:
                raise unnamed from None
    if prior.relation is Relation.VALUE_SWAP:
        try:
            return swapped(sql, prior.value, catalog), "the previous statement, another value"
        except FollowUpError:
            # "4 cylinder": a number said with the noun of the column it is compared with
            if (again := renumbered(sql, prior.value)) is None:
                raise
            return again, "the previous statement, another number"
    raise FollowUpError(f"{prior.relation.value} does not edit the statement")
