"""Right or refused: the statement must account for every phrase of the question that
changes an answer, or the question is refused naming the phrase.

Word coverage (``_coverage``) asks whether each content word names something the
statement reads. That is not enough: "the singer with the largest net worth" reads the
right table and column whether or not it orders by net worth, and "visitors below age
30" reads ``age`` whether or not it compares it with 30. So the statement itself, parsed
back with sqlglot, is checked against the kinds of phrase that change an answer:

- every number of the question is in the statement (a literal, a limit, inside a date);
- every month the question names bounds something ("flights in December": a date in
  December, a month number compared, or the name stored);
- a superlative ("largest", "the most", "youngest") orders and limits, or takes a MIN /
  MAX; "above the average" needs a subquery;
- a negation ("not", "never", "without", "no") negates something;
- an aggregate word ("average", "how many", "total") has its aggregate, unless the word
  names a column the statement reads ("stadium.average");
- "each" / "per" / "for every" with a measure groups; one value asked ("what is the
  total distance") is not answered per group, and a passive's "by" ("flown by flights of
  Delta") asks for no grouping; "distinct" / "different" keeps distinct values; "order" /
  "sort" orders;
- "either … or" needs alternatives (an OR, an IN list or a UNION);
- a value compared by equality that says only the name of its own table ("all airports"
  read as ``airports.name = 'All Airports'``) is the question's noun for the rows;
- two values of one column joined by "and" are not both required of one row (that asks
  for an intersection: "documents with paragraphs 'Brazil' and 'Ireland'");
- every name word is a table the statement reads or a column it uses, not merely a
  column of a table it reads;
- of two references to one table whose names say a direction (``flights.origin``,
  ``flights.dest``), the statement reads the one the question's direction says ("arrived
  at", "to Denver"), and both where it says both ("from JFK … flew to");
- a ranking by a count answers a question that counts ("the most flights", "the
  highest number of"), not one whose superlative names a quantity ("the highest
  airport" ranked by how many airports share each name);
- "first"/"last" ending a clause ("hired first") orders; a ranking by a date the
  question does not name, where it names another date of the same table ("the 3 most
  recently hired" ranked by ``birth_date`` beside ``hire_date``), is refused;
- one value asked ("what is the average AMB") is one value even where a definition
  says "per" inside the measure; two defined terms listed as the items asked ("the PMPD
  and PMTC") are two computed outputs.

The checks read only the question's words and the statement; nothing here knows a
schema. A phrase a check cannot see satisfied refuses the question with that phrase.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field

from sqlglot import exp

from services.sql.gate import parse_statements
from services.sql.linker import (
    DATE_NAME_WORDS,
    GRAINS,
    LinkContext,
    LinkError,
    is_number,
    is_temporal,
    prose_of_definitions,
    unexplained,
)
from services.sql.verify._outputs import asked_items, check_outputs
from services.sql.verify._restricted import check_restricted
from services.sql.verify._statement import (
    StatementNodes,
    conjuncts,
    ranking_key,
    read_statement,
)
from services.sql.words import (
    GRAMMAR_WORDS,
    ISO_DATE,
    MONTHS,
    STOP_WORDS,
    WRITTEN_DATE,
    question_directions,
    stem,
    word_match,
)

# Number words a question uses for small counts ("more than one", "at least two").
_NUMBER_WORDS = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve".split()
    )
}
_TIME_UNITS = r"(?:second|minute|hour|day|week|month|quarter|year|decade)s?"
# Adjectives whose "-est" and "-er" forms compare rows; "most"/"least" and the like.
_SUPERLATIVE = re.compile(
    r"\b(?:most|least|highest|lowest|largest|smallest|biggest|greatest|fewest|maximum|"
    r"minimum|max|min|top|bottom|best|worst|oldest|youngest|newest|latest|earliest|"
    r"longest|shortest|heaviest|lightest|cheapest|fastest|slowest|richest|poorest|"
    r"tallest|widest|deepest|hottest|coldest|strongest|weakest|busiest|easiest|hardest)\b"
)
_NEGATION = re.compile(
    r"\b(?:not|no|never|without|none|nobody|nothing|neither|nor|except|excluding)\b|n't\b"
    r"|\b(?:other than|apart from|aside from)\b"
)
_AVERAGE = re.compile(r"\b(?:average|avg|mean)\b")
# "the number of days between ...": an elapsed time, not a count
_COUNT = re.compile(rf"\b(?:how many|number of|count)\b(?!\s+{_TIME_UNITS}\b)")
_TOTAL = re.compile(r"\b(?:total|sum)\b")
_IN_TOTAL = re.compile(r"\bin total\b")
_EACH = re.compile(r"\b(?:each|per|for every)\b")
_DISTINCT = re.compile(r"\b(?:distinct|different|unique)\b")
# "ordered by", "in descending order", "sorted"; not "have never been ordered"
_ORDER = re.compile(
    r"\b(?:order(?:ed)? by|in (?:\w+ ){0,3}order|sort(?:ed)?|arrange(?:d)?|ascending|"
    r"descending|alphabetical(?:ly)?)\b"
)
# "the last 8 weeks excluding the current week": the date window's, not a negation
_WINDOW_EXCLUSION = re.compile(
    r"\b(?:not including|excluding|exclusive of)\s+(?:the\s+)?(?:current|this|today)"
)
# A question that asks for one count, and the words that would make it one per group.
_COUNT_HEAD = re.compile(
    r"\s*(?:how many|count|(?:what is|what's|find|return|give|show|tell me) the (?:total )?"
    r"number of)\b"
)
# ... and one that asks for one aggregate ("What is the average balance for user wallets
# updated in the past week?": the average, not one per user).
_MEASURE_HEAD = re.compile(
    r"\s*(?:what is|what's|what was|calculate|compute|find|return|give me|tell me) (?:the )?"
    r"(?:overall )?(?:average|avg|mean|total|sum|maximum|max|minimum|min|median)\b"
)
_GROUPING = re.compile(
    r"\b(?:each|per|every|by|respectively|for all|grouped|breakdown|split|have|has|had|"
    r"with|than|more|less|fewer|least|most)\b"
)
# "the total distance flown by flights of Delta", "planes made by BOEING": "by" after a
# past participle names who did it (the passive's agent), not what to group by. The
# participles that arrange rows ("grouped by", "sorted by", "broken down by") keep it.
_AGENT_BY = re.compile(r"\b([a-z]+) by\b")
_IRREGULAR_PARTICIPLES = frozenset(
    "flown made sold paid held built bought run won led sent spent kept taught caught "
    "brought done written driven given taken chosen eaten spoken seen shown known drawn "
    "grown thrown worn born borne begun sung told found lost met hit set put read "
    "left".split()
)
_ARRANGING = re.compile(
    r"(?:group|order|sort|rank|arrang|list|categori[sz]|classifi|bucket|segment|partition|"
    r"aggregat|summari[sz]|organi[sz]|separat|divid|count|total+|tall|cluster|index|key)ed"
)


def _grouping(text: str) -> re.Match[str] | None:
    """The first word of ``text`` that asks for groups (``_GROUPING``), a passive's "by"
    not counted."""

    def agent(match: re.Match[str]) -> str:
        word = match.group(1)
        passive = (word.endswith("ed") and not _ARRANGING.fullmatch(word)) or (
            word in _IRREGULAR_PARTICIPLES
        )
        return f"{word} _" if passive else match.group(0)

    return _GROUPING.search(_AGENT_BY.sub(agent, text))


# "When did the customers join?": a question that asks for a time (not "when" joining
# two clauses later on: "… when they signed up").
_WHEN = re.compile(r"\s*(?:and\s+)?when\b")
# "How much did we receive per payment method?": a question that asks for an amount.
_HOW_MUCH = re.compile(r"\s*how much\b")
_TIME_NAMES = frozenset(stem(w) for w in DATE_NAME_WORDS)
_THAN_AVERAGE = re.compile(r"\bthan (?:the )?(?:average|mean)\b")
# "Which employee was hired first?": "first"/"last" ending a clause ranks ("first name",
# "the first 3" and "at last" do not end one)
_LAST_ORDINAL = re.compile(r"(?<!\bat )\b(first|last)\s*(?:[?.!;,]|$)")


@dataclass
class StatementFacts:
    """What a statement does, read back from its text."""

    columns: set[tuple[str, str]] = field(default_factory=set)  # (table, column) used
    tables: set[str] = field(default_factory=set)  # every table read
    strings: list[str] = field(default_factory=list)
    numbers: set[float] = field(default_factory=set)
    aggregates: set[str] = field(default_factory=set)
    ordered: bool = False
    limited: bool = False
    grouped: bool = False
    distinct: bool = False
    negated: bool = False
    nested: bool = False
    ranked: bool = False
    # equality conditions ANDed in one WHERE: (table, column) -> values
    required: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    # what the outer GROUP BY groups by: (table, column), and the grain of a DATE_TRUNC
    groups: set[tuple[str, str]] = field(default_factory=set)
    grains: set[str] = field(default_factory=set)
    # the columns the outer SELECT returns, bare or inside an expression: (table, column)
    outputs: set[tuple[str, str]] = field(default_factory=set)
    base: str = ""  # the outer FROM's table


def statement_facts(sql: str) -> StatementFacts:
    """The facts of one SELECT as the linker writes it (every column qualified by a table
    alias, or an output name in ORDER BY)."""
    statements = parse_statements(sql, shared=True)  # read, never changed
    if len(statements) != 1:
        raise LinkError("the linker wrote no single statement")
    tree = statements[0]
    facts = StatementFacts()
    nodes: dict[type, list[exp.Expr]] = {}
    for node in tree.walk():  # one pass; every kind asked about below, by type
        nodes.setdefault(type(node), []).append(node)

    def every(*kinds: type) -> list[exp.Expr]:
        return [n for kind in kinds for n in nodes.get(kind, [])]

    aliases: dict[str, str] = {}
    for table in every(exp.Table):
        assert isinstance(table, exp.Table)
        qualified = f"{table.db}.{table.name}" if table.db else table.name
        aliases[table.alias_or_name] = qualified
        facts.tables.add(qualified)
    outputs = {e.alias: e.this for e in every(exp.Alias) if isinstance(e.parent, exp.Select)}
    for column in every(exp.Column):
        assert isinstance(column, exp.Column)
        if column.table and column.table in aliases:
            facts.columns.add((aliases[column.table], column.name))
        elif column.name in outputs:
            for inner in outputs[column.name].find_all(exp.Column):
                if inner.table in aliases:
                    facts.columns.add((aliases[inner.table], inner.name))
    for literal in every(exp.Literal):
        assert isinstance(literal, exp.Literal)
        if literal.is_string:
            facts.strings.append(literal.this)
        else:
            with contextlib.suppress(ValueError):
                facts.numbers.add(float(literal.this))
    names = {exp.Count: "COUNT", exp.Sum: "SUM", exp.Avg: "AVG", exp.Min: "MIN", exp.Max: "MAX"}
    facts.aggregates = {name for kind, name in names.items() if kind in nodes}
    facts.ordered = exp.Order in nodes
    facts.limited = exp.Limit in nodes
    facts.grouped = exp.Group in nodes
    facts.distinct = exp.Distinct in nodes
    facts.negated = (
        exp.Not in nodes
        or exp.NEQ in nodes
        or any(isinstance(i.expression, exp.Null) for i in every(exp.Is))
    )
    facts.ranked = exp.Window in nodes
    facts.nested = any(
        isinstance(s.parent, exp.Subquery | exp.In | exp.Exists)
        for s in every(exp.Select)
        if s is not tree
    )
    group = tree.args.get("group")
    selected = tree.expressions if isinstance(tree, exp.Select) else []
    first = tree.args.get("from_")
    if first is not None and isinstance(first.this, exp.Table):
        facts.base = aliases.get(first.this.alias_or_name, "")
    for output in selected:
        for column in output.find_all(exp.Column):
            if column.table in aliases:
                facts.outputs.add((aliases[column.table], column.name))
    for said in group.expressions if group is not None else ():
        key = said
        if isinstance(said, exp.Literal) and said.is_int and 0 < int(said.this) <= len(selected):
            key = selected[int(said.this) - 1]  # GROUP BY 1: the first output
        for column in key.find_all(exp.Column):
            if column.table in aliases:
                facts.groups.add((aliases[column.table], column.name))
        for trunc in key.find_all(exp.DateTrunc, exp.TimestampTrunc):
            facts.grains.add(str(trunc.args.get("unit") or "").strip("'").lower())
        for literal in key.find_all(exp.Literal):
            facts.grains.add(literal.this.lower())
    where = tree.args.get("where")
    if where is not None:
        for condition in conjuncts(where.this):
            if isinstance(condition, exp.EQ) and isinstance(condition.this, exp.Column):
                value = condition.expression
                if isinstance(value, exp.Literal) and condition.this.table in aliases:
                    key = (aliases[condition.this.table], condition.this.name)
                    facts.required.setdefault(key, []).append(value.this)
    return facts


def verify_statement(ctx: LinkContext, sql: str) -> None:
    """Refuse (:class:`LinkError`) when the statement leaves out a phrase of the question
    that changes the answer; see the module's docstring for the kinds."""
    facts = statement_facts(sql)
    low = ctx.low
    text = _without_quotes(low)
    reads = _column_words(ctx, facts)
    _numbers(text, facts, reads, dated=_dated_condition(sql, facts))
    _months(ctx.original, sql, facts, reads)
    superlative = _SUPERLATIVE.search(_without_bounds(text, ordered=facts.ordered))
    if (
        superlative
        and not (
            (facts.ordered and facts.limited) or facts.aggregates & {"MIN", "MAX"} or facts.ranked
        )
        and not reads.intersection({superlative.group(0)})
    ):
        raise LinkError(f"the statement does not rank by {superlative.group(0)!r}")
    last = _LAST_ORDINAL.search(text)
    if last and not (facts.ordered or facts.aggregates & {"MIN", "MAX"} or facts.ranked):
        raise LinkError(f"the statement does not rank by {last.group(1)!r}")
    if _THAN_AVERAGE.search(text) and not facts.nested:
        raise LinkError("comparing with an average needs a subquery the linker did not build")
    negation = _NEGATION.search(_WINDOW_EXCLUSION.sub(" ", text))
    if negation and not facts.negated:
        raise LinkError(f"the statement does not apply {negation.group(0).strip()!r}")
    average = _AVERAGE.search(text)
    if average and "AVG" not in facts.aggregates and average.group(0) not in reads:
        raise LinkError(f"the statement computes no {average.group(0)!r}")
    count = _COUNT.search(text)
    if count and not facts.aggregates & {"COUNT", "SUM"} and not reads & {"number", "count", "num"}:
        raise LinkError(f"the statement counts nothing for {count.group(0)!r}")
    total = _TOTAL.search(text)
    # "in total" asks for a sum even where "total" also spells a column ("how much did
    # visitors spend in total" reads ``total_spent``: its values listed are no total).
    in_total = _IN_TOTAL.search(text)
    if (
        total
        and not facts.aggregates & {"SUM", "COUNT"}
        and (total.group(0) not in reads or in_total)
    ):
        said = in_total.group(0) if in_total else total.group(0)
        raise LinkError(f"the statement adds nothing up for {said!r}")
    if _WHEN.match(text) and not any(_dated(ctx, c) for c in facts.outputs):
        raise LinkError("the statement returns no date or year for 'when'")
    if _HOW_MUCH.match(text) and not facts.aggregates and not _numbers_shown(ctx, facts):
        # the payment methods of March listed for "how much did we receive per payment
        # method in March": no amount, summed or stored, answers "how much"
        raise LinkError("the statement returns no amount for 'how much'")
    asked = _without_quotes(ctx.original.lower())
    # "the average AMB" with AMB defined as "the average balance per user" asks for one
    # average of the per-user values: a definition's "per" groups inside the measure, not
    # the answer; the question as asked says whether it wants one value
    one_value = bool(_MEASURE_HEAD.match(asked) and not _grouping(asked))
    each = _EACH.search(text)
    if each and facts.aggregates and not facts.grouped and not facts.ranked and not one_value:
        raise LinkError(f"the statement does not group by what follows {each.group(0)!r}")
    if facts.grouped:
        _groups_by_each(ctx, text, facts)
    if facts.grouped and _COUNT_HEAD.match(text) and not _grouping(text):
        raise LinkError("the question asks for one count, the statement counts per group")
    if facts.grouped and "COUNT" in facts.aggregates and _one_row_per_group(ctx, facts):
        raise LinkError("the statement counts one row per group: it groups by the key of the "
                        "rows it counts")  # fmt: skip
    if facts.grouped and (one_value or (_MEASURE_HEAD.match(text) and not _grouping(text))):
        raise LinkError("the question asks for one value, the statement computes one per group")
    distinct = _DISTINCT.search(text)
    if distinct and not (facts.distinct or facts.grouped):
        raise LinkError(f"the statement does not keep {distinct.group(0)!r} values apart")
    order = _ORDER.search(text)
    if order and not facts.ordered:
        raise LinkError(f"the statement does not order as {order.group(0)!r} asks")
    tables = sorted({t for t, _ in facts.columns} | facts.tables)
    word = unexplained(
        ctx.question,
        ctx.vocab,
        tables,
        facts.strings,
        divides="/" in sql,
        terms=ctx.applied,
        forgiven=prose_of_definitions(ctx) | ctx.known,
        columns=facts.columns,
    )
    if word is not None:
        raise LinkError(f"the statement uses nothing {word!r} names")
    for (_, column), values in facts.required.items():
        if len(set(values)) > 1:
            raise LinkError(
                f"one row cannot have two values of {column}: the question asks for rows "
                "matching each, which the linker does not compose"
            )
    _time_unused(ctx, text, sql, facts)
    _directions(ctx, facts)
    tree = parse_statements(sql, shared=True)[0]
    nodes = read_statement(tree, ctx.catalog)
    check_restricted(tree, nodes, ctx.graph)
    _table_named_as_a_value(ctx, nodes)
    _either_or(text, tree)
    check_outputs(ctx, tree, nodes)
    _terms_computed(ctx, tree)
    _ranked_by_a_count_unasked(text, tree)
    _ranked_by_another_date(ctx, tree, nodes)


_VALUE_WORD = re.compile(r"[^\W_]+")
# "either the maker General Motors or weighed more than 3500": alternatives, one clause
_EITHER_OR = re.compile(r"\beither\b[^?.;!]*?\bor\b")


def _either_or(text: str, tree: exp.Expr) -> None:
    """ "the models made by either General Motors or weighing more than 3500" asks for
    rows meeting one of two conditions; a statement with no OR, IN list or UNION
    requires both of every row (or drops one)."""
    if _EITHER_OR.search(text) and tree.find(exp.Or, exp.In, exp.Union) is None:
        raise LinkError("the statement applies no 'either … or': it requires every condition")


def _table_named_as_a_value(ctx: LinkContext, nodes: StatementNodes) -> None:
    """ "the names of all airports in the America/Chicago time zone" answered with
    ``airports.name = 'All Airports'``: a stored value whose every word, less grammar
    words ("all", "the"), is the name of the very table it is a value of spells the
    question's noun for the rows, not one of them. A value compared by equality (``=``,
    ``<>``, ``IN``) that says nothing but its own table's name is refused."""
    for literal in nodes.literals:
        compared = literal.parent
        if isinstance(compared, exp.Tuple):
            compared = compared.parent
        if not isinstance(compared, exp.EQ | exp.NEQ | exp.In):
            continue
        column = compared.this
        if not isinstance(column, exp.Column):
            continue
        table = nodes.owner(column)
        if table is None:
            continue
        words = [
            w
            for w in _VALUE_WORD.findall(literal.this.lower())
            if w not in STOP_WORDS and w not in GRAMMAR_WORDS
        ]
        names = {stem(w) for w in ctx.vocab.table_words.get(table.qualified, [])}
        if words and names and all(stem(w) in names for w in words):
            raise LinkError(
                f"{literal.this!r} says the name of the table {table.name}, not one of its "
                f"rows: the question's words for the rows were read as a value of "
                f"{table.name}.{column.name}"
            )


# The words that make a ranking one by a count: "the most flights", "the fewest", "the
# highest number of", "how many", "more than", "often", "frequent", "popular".
_COUNTING = re.compile(
    r"\b(?:most|fewest|least|more|fewer|less|many|number|numbers|count|counts|often|"
    r"frequent\w*|popular|times)\b"
)


def _ranked_by_a_count_unasked(text: str, tree: exp.Expr) -> None:
    """ "What is the name of the highest airport?" ranked by ``COUNT(*)`` per airport
    name: a superlative of a quantity ("highest", "largest", "oldest") read as a count
    of rows ranks by how many rows share a value, which the question never asked. A
    statement whose ranking (its first ORDER BY key) is a count is held to a question
    that says something counts."""
    if not isinstance(tree, exp.Select) or tree.args.get("limit") is None:
        return
    key = ranking_key(tree)
    if key is not None and key.find(exp.Count) is not None and not _COUNTING.search(text):
        raise LinkError("the statement ranks by a count of rows; the question counts nothing")


# Name parts every date column shares: they tell no two dates apart.
_DATE_PARTS = frozenset({"date", "time", "dt", "at", "on", "day", "timestamp", "ts"})


def _ranked_by_another_date(ctx: LinkContext, tree: exp.Expr, nodes: StatementNodes) -> None:
    """ "List the 3 most recently hired employees" ranked by ``birth_date``: of several
    dates of a table, a recency word picks one by what the question says; a statement
    that ranks by a date no word of the question names while a word names another date
    of the same table ranks the wrong event."""
    if not isinstance(tree, exp.Select):
        return
    key = ranking_key(tree)
    if not isinstance(key, exp.Column):
        return
    table = nodes.owner(key)
    if table is None:
        return
    words = [w for w in ctx.words if w not in _DATE_PARTS]

    def said(column: str) -> bool:
        parts = [p for p in ctx.vocab.column_words.get((table.qualified, column), [])]
        parts = [p for p in parts if p not in _DATE_PARTS and len(p) > 2]
        return any(word_match(w, p) >= 0.9 for w in words for p in parts)

    dates = [c.name for c in table.columns if is_temporal(c.data_type)]
    if key.name not in dates or said(key.name):
        return
    other = next((c for c in dates if c != key.name and said(c)), None)
    if other is not None:
        raise LinkError(
            f"the question names {table.name}.{other}; the statement ranks by "
            f"{table.name}.{key.name}"
        )


def _terms_computed(ctx: LinkContext, tree: exp.Expr) -> None:
    """ "What are the PMPD and PMTC for each month": two defined terms listed as the
    items asked are two measures; a statement with fewer computed outputs (an aggregate
    in them) than such items answers one of them, or neither, under both names."""
    if not isinstance(tree, exp.Select) or not ctx.applied:
        return
    names = {n.lower() for entry in ctx.glossary for n in entry.names}
    items = {
        re.sub(r"^(?:the|its|their)\s+", "", item) for item in asked_items(ctx.original.lower())
    }
    listed = sorted(items & names)
    if len(listed) < 2:
        return
    computed = sum(1 for output in tree.expressions if output.find(exp.AggFunc))
    if computed < len(listed):
        raise LinkError(
            f"the question asks for {' and '.join(listed)}, {len(listed)} measures; the "
            f"statement computes {computed}"
        )


def _without_quotes(low: str) -> str:
    return re.sub(r"'[^']*'|\"[^\"]*\"", " ", low)


def _without_bounds(text: str, *, ordered: bool) -> str:
    """The text less phrases that read like superlatives but bound a comparison ("at
    most 3", "at least") or are part of a name ("first name"); in an ordered statement
    also those that say the order ("from most to least", "lowest score first")."""
    text = re.sub(r"\bat (?:most|least)\b|\b(?:first|last)\b", " ", text)
    if ordered:
        sup = _SUPERLATIVE.pattern
        text = re.sub(rf"(?:\bfrom\s+)?{sup}\s+to\s+(?:the\s+)?{sup}", " ", text)
        text = re.sub(rf"{sup}(?=[^.?;,]{{0,40}}\bfirst\b)", " ", text)
        text = re.sub(rf"\b(?:order|sort|rank|arrange)\w*\s+(?:\w+\s+){{0,4}}?{sup}", " ", text)
    return text


_EACH_WORD = re.compile(
    r"\b(?:each|for every)\s+(?:(?:of|the|one|single|individual|last|past|\d+)\s+)*([a-z]+)"
)


def _groups_by_each(ctx: LinkContext, text: str, facts: StatementFacts) -> None:
    """ "in each year" grouped by employee is another answer: the word after "each" (or
    "for every") names what a grouped column, its table or a time grain says, or the
    statement is refused. (Only words of the catalog are held to it: "each one" names
    nothing to check.)"""
    words = [m.group(1) for m in _EACH_WORD.finditer(text)]
    if not words:
        return
    said: set[str] = set(facts.grains)
    for table, column in facts.groups:
        said.update(ctx.vocab.column_words.get((table, column), []))
        said.update(re.findall(r"[a-z]+", column.lower()))
        said.update(ctx.vocab.table_words.get(table, []))
        said.update(w for name in ctx.vocab.table_aliases.get(table, []) for w in name)
    said = {stem(w) for w in said}
    known = {stem(w) for parts in ctx.vocab.column_words.values() for w in parts}
    known |= {w for parts in ctx.vocab.table_words.values() for w in parts}
    known |= set(GRAINS)
    for each in words:
        if stem(each) in known and stem(each) not in said:
            raise LinkError(f"the statement does not group by {each!r}")


def _one_row_per_group(ctx: LinkContext, facts: StatementFacts) -> bool:
    """Grouped by the declared key of the table it reads rows from, joined only to tables
    each of those rows refers to: every group is one row, and a count of it is 1 ("the id
    and name of the document with the most paragraphs" grouped by ``paragraph_id``)."""
    base = ctx.catalog.table(facts.base) if facts.base else None
    if base is None or not base.primary_key or base.key_evidence:
        return False  # a key seen in the data may be unique by chance: no certainty
    if not {(base.qualified, c) for c in base.primary_key} <= facts.groups:
        return False
    edges = ctx.graph.edges_of(base.qualified)
    if any(e.child == base.qualified and set(e.child_columns) == set(base.primary_key)
           for e in edges):  # fmt: skip
        return False  # the key refers to another table's rows ("likes per student")
    others = facts.tables - {base.qualified}
    return not any(e.parent == base.qualified and e.child in others for e in edges)


_GRAIN_WORD = re.compile(rf"\b({'|'.join(GRAINS)})s?\b")


def _time_unused(ctx: LinkContext, text: str, sql: str, facts: StatementFacts) -> None:
    """ "in the same month as they signed up" answered with no date read at all: a
    question that says a day, week, month, quarter or year needs a statement that bounds
    a date, groups by a period or uses a date or year column."""
    said = _GRAIN_WORD.search(text)
    if said is None or _dated_condition(sql, facts) or facts.grains:
        return
    if any(_dated(ctx, column) for column in facts.columns):
        return
    raise LinkError(f"the statement reads no date for {said.group(0)!r}")


# A month's name, or a capitalised abbreviation ("in Dec"); "may" and "march" are verbs
# too, so they count only capitalised and not as a sentence's first word.
_MONTH_WORD = re.compile(r"\b([A-Za-z]{3,9})\b")
_VERB_MONTHS = frozenset({"may", "march"})
_DAY_OF_MONTH = re.compile(r"\.?\s+\d{1,2}(?:st|nd|rd|th)?\b")


def _months(question: str, sql: str, facts: StatementFacts, reads: set[str]) -> None:
    """ "How many flights left JFK in December?" answered over the whole year: word
    coverage forgives month names (a date window reads them), so a month no window read
    vanished from the statement unseen. Each month the question names (outside quotes
    and a written-out date or day, which the date module reads whole) must bound something: a
    date literal in that month (a year's bounds, every date a first of January, bound
    no month), the month's number compared where the statement reads a month, the name itself as a
    stored value, or a column whose name says it."""
    text = _without_quotes(question)
    text = ISO_DATE.sub(" ", WRITTEN_DATE.sub(" ", text))
    found = [m for m in (ISO_DATE.search(s) for s in facts.strings) if m is not None]
    days = {(int(m.group("month")), int(m.group("day"))) for m in found}
    # dates that are all the first of January bound years ("in 2013"), no month
    months_bounded = set() if days <= {(1, 1)} else {month for month, _ in days}
    stored = " ".join(facts.strings).lower()
    reads_month = "month" in sql.lower()
    for match in _MONTH_WORD.finditer(text):
        word = match.group(1)
        low = word.lower()
        month = MONTHS.get(low)
        if month is None or _DAY_OF_MONTH.match(text, match.end()):
            continue  # "from Jan 1st to Dec 31st": days, the date module's
        full = len(low) > 3 and low != "sept"
        if not full or low in _VERB_MONTHS:
            first = not text[: match.start()].strip(" \t\n\"'(")
            if not word[0].isupper() or first:
                continue  # "jan" in lower case, "May I see …", "march" the verb
        if month in months_bounded or (reads_month and float(month) in facts.numbers):
            continue
        if re.search(rf"\b{re.escape(low)}", stored) or low in reads:
            continue
        raise LinkError(f"the statement does not bound the month {word!r}")


def _directions(ctx: LinkContext, facts: StatementFacts) -> None:
    """ "How many flights arrived at Los Angeles Intl?" joined to ``airports`` on
    ``flights.origin`` counts the departures: where a table has two references to one
    table whose names say which way (``origin``/``dest``, ``sourceairport``/
    ``destairport``), the references the statement reads must be those the question's
    direction says: the one it says, or both when it says both. A question that says no
    direction is left alone (which reference is meant is then not read from words)."""
    for (child, parent), edges in ctx.graph.directed.items():
        used = {way for way, e in edges.items() if (child, e.child_column) in facts.columns}
        if not used:
            continue
        said = question_directions(ctx.question, frozenset(ctx.vocab.table_words.get(parent, ())))
        missing = said - used
        if missing and (said != {"from", "to"} or len(used) < 2):
            name = child.rsplit(".", 1)[-1]
            wanted = ", ".join(f"{name}.{edges[w].child_column}" for w in sorted(missing))
            read = ", ".join(f"{name}.{edges[w].child_column}" for w in sorted(used))
            raise LinkError(
                f"the question says where {' and '.join(sorted(said))}: {wanted}; the "
                f"statement reads {read}"
            )


def _dated(ctx: LinkContext, column: tuple[str, str]) -> bool:
    """A column that says when: a date or timestamp, or a year, month or day by name."""
    if any(c.key == column and is_temporal(c.column.data_type) for c in ctx.vocab.columns):
        return True
    return bool(_TIME_NAMES & {stem(w) for w in ctx.vocab.column_words.get(column, [])})


def _numbers_shown(ctx: LinkContext, facts: StatementFacts) -> bool:
    """Whether a column the statement shows holds numbers."""
    return any(c.key in facts.outputs and is_number(c.column.data_type) for c in ctx.vocab.columns)


def _column_words(ctx: LinkContext, facts: StatementFacts) -> set[str]:
    """The words (and numbers: ``day100_score``) of the names of every column the
    statement uses."""
    words: set[str] = set()
    for table, column in facts.columns:
        words.update(ctx.vocab.column_words.get((table, column), []))
        words.update(re.findall(r"[a-z]+|\d+", column.lower()))
    return words


def _dated_condition(sql: str, facts: StatementFacts) -> bool:
    """Whether the statement bounds something in time: a date among its literals, or an
    interval."""
    return any(ISO_DATE.search(s) for s in facts.strings) or "INTERVAL" in sql.upper()


def _numbers(text: str, facts: StatementFacts, reads: set[str], *, dated: bool = True) -> None:
    """Every number the question writes is in the statement: a literal or a limit, inside
    a string literal (a date, a code) or a column name it uses ("day 100" ->
    ``day100_score``); numbers of a time window ("last 30 days") and of a written date
    are the date module's — when the statement bounds anything in time at all: "2 months
    before the review with id 3" answered as the review alone dropped its window."""
    text = ISO_DATE.sub(" ", WRITTEN_DATE.sub(" ", text))
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)  # 30,000
    if dated:
        text = re.sub(rf"\b\d+(?:\.\d+)?\s+(?:calendar\s+)?{_TIME_UNITS}\b", " ", text)
    text = re.sub(r"\bq[1-4]\b|\b\d+(?:st|nd|rd|th)\b", " ", text)
    # a number ends a sentence too ("taller than 200."): only a digit after the dot
    # would make it another number
    found = [m.group(0) for m in re.finditer(r"(?<![\w.])\d+(?:\.\d+)?(?![\w]|\.\d)", text)]
    found += [
        str(_NUMBER_WORDS[m.group(1)])
        for m in re.finditer(
            r"\b(?:than|least|most|exactly|over|under|above|below)\s+(\w+)\b", text
        )
        if m.group(1) in _NUMBER_WORDS
    ]
    inside = " ".join(facts.strings)
    years = {int(m) for m in re.findall(r"(?<!\d)(\d{4})-\d\d-\d\d", inside)}
    for number in found:
        value = float(number)
        if value in facts.numbers or (number in inside and len(number) >= 2) or number in reads:
            continue
        if len(number) == 4 and {int(number), int(number) + 1} & years:
            continue  # "after 2020": from 2021-01-01
        raise LinkError(f"the statement does not use the number {number}")
