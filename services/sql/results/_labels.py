"""Whose values a listing shows: the names of its rows, shown before what it asks.

"What are the dates of birth of the patients on medicaid?" asks for a column of rows the
question never names one by one; dates alone do not say whose each is. The listed
table's name columns (a first and a last name, a ticker's name) are shown first, as a
follow-up about earlier rows ("when were those patients born?" after "Which patients
are on medicaid?") shows the names its earlier answer said them by
(``conversation.labels``): one rule, so a follow-up and its question spelled out show
the same columns.

Only columns are added, of rows already returned, and only where that cannot change the
rows: a statement that groups, aggregates or drops duplicates is left alone (another
column would split its groups or its distinct values), with two exceptions that read an
entity's rows one way on both paths. A grouped statement shows the key and names of the
entity it groups by (columns it groups by split no group: ``group_labels``); a DISTINCT
that only drops the repeats its joins make shows its rows' key, so two teachers of one
age, or two museums of one name, stay two rows, as a follow-up about them shows them
(``distinct_through_joins``). Rows picked by their name or key ("the email of patient
3", "the age of John Smith") are left alone too: the question said whose.

A listing that labels its rows by name (beside another value of theirs) shows their key
before the names, as a grouped answer shows an entity (its key, then what names it:
``linker.clauses._planning``), so one entity is shown one way: two patients of one name
are told apart, and a follow-up about those rows has a stable value to point at. Only a
one-column key, and only where no key could change the rows (the same listing rule:
never under DISTINCT).
"""

from __future__ import annotations

import re

from sqlglot import exp

from services.sql.catalog import TEXT_TYPES, Catalog, TableInfo
from services.sql.results._names import shown_column_name
from services.sql.results._select import edited, is_listing, own_tables, owner
from services.sql.tree import conjuncts
from services.sql.words import common_prefix, name_words, stem

_PLAIN = re.compile(r"^[a-z_][a-z0-9_]*$")


def _identifier(name: str) -> exp.Identifier:
    """``name`` as Postgres reads it back (quoted unless plain lower case)."""
    return exp.Identifier(this=name, quoted=_PLAIN.match(name) is None)


# Words that say which part of a person's name a column holds ("first name").
_NAME_PARTS = frozenset({"name", "first", "last", "full", "middle", "given", "family", "nick"})


def name_columns(table: TableInfo) -> list[str]:
    """The text columns whose own name (without the prefix the table gives every
    column: ``sbTickerName`` → "Name") says they name its rows: a name, a part of one,
    or the table's name ("customer_name"); never its key, nor another thing's name
    ("song_name" names a singer's song, not the singer)."""
    names = [c.name for c in table.columns]
    prefix = common_prefix(names, minimum=3) if len(names) >= 4 else ""
    own_words = {stem(w) for w in name_words(table.name)}
    found = []
    for column in table.columns:
        cut = len(prefix) if prefix and len(column.name) > len(prefix) else 0
        words = _glued_name(name_words(column.name[cut:]), own_words)
        if (
            column.name not in table.primary_key
            and column.data_type.startswith(TEXT_TYPES)
            and "name" in words
            and all(w in _NAME_PARTS or stem(w) in own_words for w in words)
        ):
            found.append(column.name)
    return found


def code_description(table: TableInfo) -> list[str]:
    """What a row kept by a code is said by: a reference table keyed by a text code
    (``ref_template_types.template_type_code``) keeps what each code means in the column
    its key's words call a description (``template_type_description``, or a bare
    ``description``). The code is how the data refers to the row; an answer per code is
    told what the code means beside it, wherever the code is read from (the reference
    table's key, or the column of another table that refers to it: one rule, so
    "per property type" shows a type one way on every path). Only the key's own
    description: another table's (a document's ``document_description``) is free text
    about something else.

    A text key that stores only numbers (northwind's ``territory_id``: '01581', '01730')
    is the same shape whatever its name ends in: digits are how the data refers to the
    row, not what a person reads it by, and its description is (:func:`numbered_key`)."""
    if len(table.primary_key) != 1:
        return []
    key = table.column(table.primary_key[0])
    if key is None or not key.data_type.startswith(TEXT_TYPES):
        return []
    words = name_words(key.name)
    if len(words) < 2 or (words[-1] != "code" and not numbered_key(table)):
        return []
    said = ([*words[:-1], "description"], ["description"])
    return [
        c.name for c in table.columns
        if c.data_type.startswith(TEXT_TYPES) and name_words(c.name) in said
    ][:1]  # fmt: skip


def numbered_key(table: TableInfo) -> bool:
    """Whether ``table``'s one-column key is text whose stored values (as the catalog
    read them) are all numbers: a postal code or a zero-padded number kept as text
    ('01581'), which tells rows apart without saying what any of them is. Read from the
    data, so a key of words or letter codes ('AD', 'JFK', 'T001') is not one."""
    if len(table.primary_key) != 1:
        return False
    key = table.column(table.primary_key[0])
    if key is None or not key.data_type.startswith(TEXT_TYPES):
        return False
    return _numbers(tuple(key.known_values or key.sample_values))


def _glued_name(words: list[str], own_words: set[str]) -> list[str]:
    """``words`` with the table's own noun glued onto "name" split off (a schema written
    in one case loses its word breaks: ``CountryName`` of ``countries`` is stored as
    ``countryname``), so it is read as ``country_name`` is: the rows' name. Only the
    table's own noun: another word glued on is left whole (``songname`` names a song, and
    ``fullname`` beside a ``maker`` column is no more the row's name than the maker)."""
    last = words[-1] if words else ""
    if len(last) <= len("name") or not last.endswith("name"):
        return words
    glued = last[: -len("name")]
    if stem(glued) not in own_words:
        return words
    return [*words[:-1], glued, "name"]


def _picked_by(select: exp.Select, alias: str, identifying: set[str]) -> bool:
    """Whether a condition picks the rows by one of ``identifying`` columns of the table
    under ``alias`` (an equality or IN list with values): the question said whose."""
    where = select.args.get("where")
    for part in conjuncts(where.this) if where is not None else []:
        if isinstance(part, exp.EQ):
            sides = [(part.this, part.expression), (part.expression, part.this)]
        elif isinstance(part, exp.In) and not part.args.get("query"):
            sides = [(part.this, None)]
        else:
            continue
        for column, other in sides:
            if (
                isinstance(column, exp.Column)
                and column.table.lower() in ("", alias)
                and column.name.lower() in identifying
                and (other is None or other.find(exp.Column) is None)
            ):
                return True
    return False


def repeats(join: exp.Join, tables: dict[str, TableInfo]) -> bool:
    """Whether ``join`` can repeat the rows before it: it does not match the joined
    table's one row by its whole primary key (a visit per visitor repeats the visitor; a
    document's template is one template)."""
    table = join.this
    info = tables.get(table.alias_or_name.lower()) if isinstance(table, exp.Table) else None
    if info is None or not info.primary_key:
        return True
    alias = table.alias_or_name.lower()
    matched = set()
    on = join.args.get("on")
    for part in conjuncts(on) if on is not None else []:
        if not isinstance(part, exp.EQ):
            continue
        for side, other in ((part.this, part.expression), (part.expression, part.this)):
            if (
                isinstance(side, exp.Column)
                and side.table.lower() == alias
                and isinstance(other, exp.Column)
                and other.table.lower() != alias
            ):
                matched.add(side.name.lower())
    return not {k.lower() for k in info.primary_key} <= matched


def distinct_through_joins(select: exp.Select, alias: str, tables: dict[str, TableInfo]) -> bool:
    """A DISTINCT that only undoes the joins' repeats: it shows columns of its first
    table alone, read through joins to other tables (which visitors' visits, which
    courses' arrangements), without groups or aggregates. Its rows are that table's rows
    that have a match ("the museums the visitors with level 6 visited"), so each is one
    such row, told apart by its key, not one distinct value (a follow-up about earlier
    rows reads them so: one row per museum, ``conversation.restrict``). Only where it
    shows the rows' names or their measures (an age, a date) and a join can repeat a
    row: a DISTINCT of a text kind (a state), over one table, or through joins to what
    each row references (a document's one template) is distinct values the question
    asked for, and is left alone."""
    if (
        not select.args.get("distinct")
        or select.args["distinct"].args.get("on") is not None
        or not select.args.get("joins")
        or select.args.get("group")
        or any(e.find(exp.AggFunc) is not None for e in select.expressions)
    ):
        return False
    listed = tables[alias]
    if not any(repeats(join, tables) for join in select.args["joins"]):
        return False  # joins to what each row references repeat no row: DISTINCT was asked
    names = {n.lower() for n in name_columns(listed)}
    for projection in select.expressions:
        column = projection.unalias()
        if not isinstance(column, exp.Column) or owner(column, tables) is not listed:
            return False
        if column.table and column.table.lower() != alias:
            return False
        info = listed.column(column.name)
        if (
            info is not None
            and info.data_type.startswith(TEXT_TYPES)
            and column.name.lower() not in names
            and column.name not in listed.primary_key
        ):
            # a text value that is not the rows' name nor key (a state, a type) is a
            # kind the rows fall in: "which states do those doctors live in" asks for the states
            return False
    return True


def keyed_distinct(select: exp.Select, catalog: Catalog) -> str | None:
    """The alias of the table a DISTINCT over joins lists one row of each, told apart by
    its key (shown already, or a one-column key :func:`label_columns` shows): None for
    any other statement. Such a DISTINCT only undoes the joins' repeats, so another
    column of that table (one value per row of it) splits no row of its answer."""
    tables = own_tables(select, catalog)
    if not tables:
        return None
    alias, listed = next(iter(tables.items()))
    if not distinct_through_joins(select, alias, tables) or not listed.primary_key:
        return None
    shown = {
        e.unalias().name.lower() for e in select.expressions
        if isinstance(e.unalias(), exp.Column)
    }  # fmt: skip
    if len(listed.primary_key) == 1 or {k.lower() for k in listed.primary_key} <= shown:
        return alias
    return None


def label_columns(select: exp.Select, catalog: Catalog) -> list[exp.Column]:
    """The columns of the table ``select`` lists (its first) that say whose each row is,
    to show before what it asks: its one-column key (where not shown already and the
    names label another value shown), then its
    name columns (where it shows none of them). None when it is no listing, shows none
    of that table's columns, or picks its rows by name or key."""
    if any(isinstance(e, exp.Star) for e in select.expressions):
        return []
    tables = own_tables(select, catalog)
    if not tables:
        return []
    alias, listed = next(iter(tables.items()))
    through = distinct_through_joins(select, alias, tables)
    if not is_listing(select) and not through:
        return []
    names = name_columns(listed)
    if not names:
        return []
    own = []
    for projection in select.expressions:
        column = projection.unalias()
        if isinstance(column, exp.Column) and owner(column, tables) is listed:
            own.append(column.name.lower())
    if not own:
        return []
    identifying = {n.lower() for n in (*names, *listed.primary_key)}
    if _picked_by(select, alias, identifying):
        return []
    lowered = {n.lower() for n in names}
    added = [] if lowered & set(own) else names
    # The key goes with names that label the rows, shown beside another value of theirs
    # (a height, a date): a listing of the names alone ("the names of the documents
    # that ...") answers with the names, as the question spelled out does.
    labelling = len(own) < len(select.expressions) or not set(own) <= lowered
    # DISTINCT over joins keeps one row per listed row only with its key: without it two
    # museums of one name, or two teachers of one age, are one row
    if through and not labelling:
        added = []
    if (
        len(listed.primary_key) == 1
        and listed.primary_key[0].lower() not in own
        and (labelling or through)
    ):
        added = [listed.primary_key[0], *added]
    return [exp.column(_identifier(name), table=_identifier(alias)) for name in added]


def _first_name_at(select: exp.Select, catalog: Catalog) -> int:
    """Where the listed table's first shown name column stands (0 when none is shown):
    its key goes just before it, as every reading shows an entity; names added beside a
    key shown already go just after it (key, then names)."""
    tables = own_tables(select, catalog)
    if not tables:
        return 0
    listed = next(iter(tables.values()))
    names = {n.lower() for n in name_columns(listed)}
    key = {k.lower() for k in listed.primary_key} if len(listed.primary_key) == 1 else set()
    for at, projection in enumerate(select.expressions):
        column = projection.unalias()
        if (
            at == 0
            and isinstance(column, exp.Column)
            and column.name.lower() in key
            and owner(column, tables) is listed
        ):
            return 1
    for at, projection in enumerate(select.expressions):
        column = projection.unalias()
        if (
            isinstance(column, exp.Column)
            and column.name.lower() in names
            and owner(column, tables) is listed
        ):
            return at
    return 0


def show_labels(select: exp.Select, columns: list[exp.Column], at: int = 0) -> bool:
    """``select`` showing ``columns`` before its ``at``-th column (named by their table
    too where a shown column has the name already); whether any was added. In place."""
    if not columns:
        return False
    taken = {e.alias_or_name.lower() for e in select.expressions}
    tables = {t.alias_or_name.lower(): t.name for t in select.find_all(exp.Table)}
    shown = []
    for column in columns:
        table = tables.get(column.table.lower(), column.table)
        name = shown_column_name(table, column.name, shared=column.name.lower() in taken)
        shown.append(exp.alias_(column.copy(), name))
        taken.add(name.lower())
    expressions = list(select.expressions)
    select.set("expressions", [*expressions[:at], *shown, *expressions[at:]])
    return True


def group_labels(select: exp.Select, catalog: Catalog) -> tuple[list[exp.Column], int]:
    """The key and name columns of an entity a grouped statement groups by but does not
    show, beside a value of that entity it does show, and where they go (before that
    entity's first shown column).

    "How old is the visitor who bought the most tickets?" groups by the visitor (key and
    name, so two visitors of one age stay two) and shows the age and the total; the same
    question about earlier rows ("how old is this person?" after "only the biggest
    buyer") shows the visitor's key, name and age beside the total. A column the
    statement groups by is one value per group: showing it splits no group and adds no
    row, so both readers show the entity the same way. Only a one-column key, and only
    where the entity's shown columns are not its key and names alone (then nothing is
    labelled)."""
    group = select.args.get("group")
    if not isinstance(select, exp.Select) or group is None:
        return [], 0
    tables = own_tables(select, catalog)
    for alias, table in tables.items():
        if len(table.primary_key) != 1:
            continue

        def mine(column: exp.Expr, alias: str = alias, table: TableInfo = table) -> bool:
            return isinstance(column, exp.Column) and (
                column.table.lower() == alias if column.table else owner(column, tables) is table
            )

        grouped = [e.name for e in group.expressions if mine(e)]
        key = table.primary_key[0]
        if key.lower() not in {g.lower() for g in grouped} or not name_columns(table):
            continue  # no name: nothing says whose, as a listing (label_columns)
        at = [i for i, e in enumerate(select.expressions) if mine(e.unalias())]
        shown = {select.expressions[i].unalias().name.lower() for i in at}
        names = [n for n in name_columns(table) if n.lower() in {g.lower() for g in grouped}]
        labelled = shown - {key.lower()} - {n.lower() for n in name_columns(table)}
        if not at or not labelled:
            continue
        added = [n for n in (key, *names) if n.lower() not in shown]
        if added:
            columns = [exp.column(_identifier(n), table=_identifier(alias)) for n in added]
            return columns, at[0]
    return [], 0


def _key_before_names(select: exp.Select, catalog: Catalog) -> bool:
    """A grouped entity shown by its key and names shows the key first, then the names
    (in place; whether any column moved).

    Every reader shows an entity so (:func:`group_labels`, a grouped answer's
    ``linker.clauses._planning``, a follow-up about earlier rows), but a question that
    asks another value of the ranked row ("what type of ticker is the ticker with the
    most shares traded?") was composed name first, key after: the same rows read as
    other rows beside the follow-up that asked it of the earlier answer. Moving a column
    changes no row; only a one-column key shown after a name column of its own table."""
    group = select.args.get("group")
    order = select.args.get("order")
    positions = [
        *(group.expressions if group is not None else []),
        *(o.this for o in (order.expressions if order is not None else [])),
    ]
    if any(isinstance(e, exp.Literal) for e in positions):
        return False  # a position names a column: moving one would move what it names
    tables = own_tables(select, catalog)
    expressions = list(select.expressions)
    for alias, table in tables.items():
        if len(table.primary_key) != 1:
            continue
        key, names = table.primary_key[0].lower(), {n.lower() for n in name_columns(table)}

        def mine(at: int, alias: str = alias) -> str | None:
            column = expressions[at].unalias()
            if isinstance(column, exp.Column) and column.table.lower() == alias:
                return column.name.lower()
            return None

        keyed = [i for i in range(len(expressions)) if mine(i) == key]
        named = [i for i in range(len(expressions)) if mine(i) in names]
        if len(keyed) == 1 and named and named[0] < keyed[0]:
            moved = expressions.pop(keyed[0])
            expressions.insert(named[0], moved)
            select.set("expressions", expressions)
            return True
    return False


def _referenced_names(select: exp.Select, catalog: Catalog) -> bool:
    """A statement grouped by one column that references another table's one-column key
    ("How many flights to DEN did each carrier have?": ``flights.carrier`` →
    ``airlines``) shows that table's names beside it, read by a LEFT JOIN on the key; in
    place, whether it did.

    Its groups are the referenced rows (each carrier), and a follow-up about them
    ("how many flights did each of them have there?") shows them as rows of that table,
    key and names (``conversation``'s referenced subject). A join matching at most one
    row by its whole key repeats none, and LEFT keeps a value nothing matches: the rows
    are the same rows, one column more. Only a declared reference, only where the
    statement groups by nothing else and reads none of that table, or joins it by the
    key alone and reads nothing of it (:func:`_joined_for_nothing`: "per origin
    airport" read "airport" as the table; its names come from that join)."""
    group = select.args.get("group")
    if group is None or len(group.expressions) != 1:
        return False
    grouped = group.expressions[0]
    tables = own_tables(select, catalog)
    if not isinstance(grouped, exp.Column) or not grouped.table:
        return False
    table = tables.get(grouped.table.lower())
    shown = [
        i for i, e in enumerate(select.expressions)
        if isinstance(e.unalias(), exp.Column) and e.unalias() == grouped
    ]  # fmt: skip
    if table is None or not shown:
        return False
    for key in table.foreign_keys:
        if key.columns != (grouped.name,) and [c.lower() for c in key.columns] != [
            grouped.name.lower()
        ]:
            continue
        parent = catalog.table(key.referenced_table)
        if parent is None or tuple(parent.primary_key) != tuple(key.referenced_columns):
            return False
        # a code-keyed reference table is said by its description, as a grouped answer
        # read from that table shows it (``linker.entity_columns``)
        names = name_columns(parent) or code_description(parent)
        if not names:
            return False
        bare = _joined_for_nothing(select, tables, parent, grouped)
        if bare is not None:
            # the grouping's word read as a table too ("per origin *airport*"): that join
            # matched each group's one row and chose nothing to show; its names are shown
            # as the same grouping read without the join shows them (one rule, not the
            # other words of the question, decides)
            columns = [exp.column(_identifier(n), table=_identifier(bare)) for n in names]
            group.set("expressions", [*group.expressions, *(c.copy() for c in columns)])
            return show_labels(select, columns, shown[0] + 1)
        if any(t is parent for t in tables.values()):
            return False
        taken = {t.alias_or_name.lower() for t in select.find_all(exp.Table)}
        alias = next(f"r{n}" for n in range(len(taken) + 1) if f"r{n}" not in taken)
        on = exp.EQ(
            this=exp.column(_identifier(key.referenced_columns[0]), table=_identifier(alias)),
            expression=grouped.copy(),
        )
        joined = exp.Table(
            this=_identifier(parent.name),
            db=_identifier(parent.schema),
            alias=exp.TableAlias(this=_identifier(alias)),
        )
        select.append("joins", exp.Join(this=joined, on=on, side="LEFT"))
        columns = [exp.column(_identifier(n), table=_identifier(alias)) for n in names]
        group.set("expressions", [*group.expressions, *(c.copy() for c in columns)])
        return show_labels(select, columns, shown[0] + 1)
    return False


def _joined_for_nothing(
    select: exp.Select, tables: dict[str, TableInfo], parent: TableInfo, grouped: exp.Column
) -> str | None:
    """The alias under which ``select`` joins ``parent`` by its whole one-column key to
    ``grouped`` alone and reads nothing else of it (no column shown, compared, grouped or
    ordered by): a join that only says the grouped value is one of ``parent``'s rows, as
    a word naming the table reads it. None for any other join of it: one that shows or
    compares its columns chose what the answer says of it, and is left as asked."""
    (key,) = parent.primary_key
    for join in select.args.get("joins") or []:
        table = join.this
        if not isinstance(table, exp.Table):
            continue
        alias = table.alias_or_name.lower()
        on = join.args.get("on")
        if tables.get(alias) is not parent or not isinstance(on, exp.EQ):
            continue
        sides = [(on.this, on.expression), (on.expression, on.this)]
        if not any(
            isinstance(mine, exp.Column)
            and mine.table.lower() == alias
            and mine.name.lower() == key.lower()
            and other == grouped
            for mine, other in sides
        ):
            continue
        elsewhere = [
            c for c in select.find_all(exp.Column)
            if c.table.lower() == alias and c.find_ancestor(exp.Join) is not join
        ]  # fmt: skip
        return None if elsewhere else alias
    return None


# How a column of numbers stored as text says "no value" (Spider's ``horsepower``).
_MISSING = frozenset({"", "null", "none", "na", "n/a", "nan", "-"})


def _numbers(values: tuple[str, ...]) -> bool:
    """Whether text values are numbers, but for the word some say "no value" by."""
    read = [v for v in values if v.strip().lower() not in _MISSING]
    try:
        [float(v) for v in read]
    except ValueError:
        return False
    return bool(read)


def _references(catalog: Catalog, table: TableInfo) -> list[tuple[str, str, str]]:
    """Every reference (declared or inferred) between one column of ``table`` and one of
    another table, as (column of ``table``, other table's qualified name, its column)."""
    found = [
        (fk.columns[0], fk.referenced_table, fk.referenced_columns[0])
        for fk in table.foreign_keys
        if len(fk.columns) == 1
    ]
    for join in catalog.joins or ():
        if len(join.child_columns) != 1:
            continue
        if join.child == table.qualified:
            found.append((join.child_columns[0], join.parent, join.parent_columns[0]))
        elif join.parent == table.qualified:
            found.append((join.parent_columns[0], join.child, join.child_columns[0]))
    return found


def _own_text(catalog: Catalog, table: TableInfo) -> list[str]:
    """The text columns that name ``table``'s rows where none says "name": those holding
    words (not numbers stored as text, like Spider's ``mpg``), neither its key nor a
    reference to another table's rows (a car's ``model`` is a model's), two at most."""
    refs = {column.lower() for column, _, _ in _references(catalog, table)}
    found = [
        c.name
        for c in table.columns
        if c.data_type.startswith(TEXT_TYPES)
        and c.name not in table.primary_key
        and c.name.lower() not in refs
        and (c.sample_values or c.known_values)
        and not _numbers(c.sample_values or c.known_values)
    ]
    return found[:2]


def _extension_names(select: exp.Select, catalog: Catalog) -> bool:
    """A listing of a table with no label of its own (no name, no text but numbers)
    whose one-column key is one-to-one with another table's key shows that table's
    names, read by a LEFT JOIN on the keys; in place, whether it did.

    Spider's ``cars_data`` holds a car's measures, and its ``id`` is a ``car_names``
    ``makeid``: "which car is the heaviest?" is answered by an id no reader can say,
    where the row is one car that ``car_names`` names. Key to key, the join matches at
    most one row and LEFT keeps a row nothing matches: the same rows, their names
    beside them (after the key). Declared or inferred reference, either direction;
    only where the listing shows the key or another column of the table, and picks its
    rows by neither (the question said whose)."""
    if not is_listing(select) or any(isinstance(e, exp.Star) for e in select.expressions):
        return False
    tables = own_tables(select, catalog)
    if not tables:
        return False
    alias, listed = next(iter(tables.items()))
    if len(listed.primary_key) != 1 or name_columns(listed) or _own_text(catalog, listed):
        return False
    key = listed.primary_key[0]
    shown = [
        i for i, e in enumerate(select.expressions)
        if isinstance(e.unalias(), exp.Column) and owner(e.unalias(), tables) is listed
    ]  # fmt: skip
    if not shown or _picked_by(select, alias, {key.lower()}):
        return False
    for column, other, other_column in _references(catalog, listed):
        parent = catalog.table(other)
        if (
            column.lower() != key.lower()
            or parent is None
            or parent is listed
            or [k.lower() for k in parent.primary_key] != [other_column.lower()]
            or any(t is parent for t in tables.values())
        ):
            continue
        names = name_columns(parent) or _own_text(catalog, parent)
        if not names:
            continue
        taken = {t.alias_or_name.lower() for t in select.find_all(exp.Table)}
        joined_alias = next(f"r{n}" for n in range(len(taken) + 1) if f"r{n}" not in taken)
        on = exp.EQ(
            this=exp.column(_identifier(parent.primary_key[0]), table=_identifier(joined_alias)),
            expression=exp.column(_identifier(key), table=_identifier(alias)),
        )
        joined = exp.Table(
            this=_identifier(parent.name),
            db=_identifier(parent.schema),
            alias=exp.TableAlias(this=_identifier(joined_alias)),
        )
        select.append("joins", exp.Join(this=joined, on=on, side="LEFT"))
        columns = [exp.column(_identifier(n), table=_identifier(joined_alias)) for n in names]
        keyed = [i for i in shown if select.expressions[i].unalias().name.lower() == key.lower()]
        return show_labels(select, columns, keyed[0] + 1 if keyed else shown[0])
    return False


def with_labels(sql: str, catalog: Catalog) -> str:
    """``sql`` showing the key and names of the rows it lists before what it asks
    (unchanged text when :func:`label_columns` finds none to add), and a grouped
    statement the key and names of the entity it groups by (:func:`group_labels`)."""

    def edit(select: exp.Select) -> bool:
        if select.args.get("group"):
            labelled = show_labels(select, *group_labels(select, catalog))
            labelled = _referenced_names(select, catalog) or labelled
            return _key_before_names(select, catalog) or labelled
        labels = label_columns(select, catalog)
        if not labels:
            return _extension_names(select, catalog)
        return show_labels(select, labels, _first_name_at(select, catalog))

    return edited(sql, edit)
